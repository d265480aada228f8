"""A student's side of a class (``vitviz.app.classroom``): following the teacher's step and slide,
exploring alone and coming back, and voting in the teacher's poll; and the bar app.py draws before
every page, for a student or a teacher.

A following student's bar and step are one fragment (``follow_page``): the catch-up that follows
the teacher's Next reruns it alone, not the whole app (its sidebar, its pages, its navigation), and
draws the class's step in it. Thirty such runs share the server's one interpreter the moment the
teacher presses Next, and the fragment's run costs about a third less than the app's
(docs/benchmarks.md). The browser still names the page the last whole run opened, so the fragment
gives the address bar and the sidebar's highlight the step's own, and the next whole run (a choice
in the sidebar, "Explore on my own") opens the step drawn (``navigation.ask_step``)."""

from __future__ import annotations

import streamlit as st

from vitviz.app import ahead, internals, models, navigation, patch_poll, presenter, state, tour, turns, web, where
from vitviz.app.classroom import (
    ARRIVING,
    EXPLORING,
    GONE,
    REFUSED,
    SHOWN_IMAGE,
    code_text,
    joined,
    leave,
    server_store,
    student_id,
    teaching,
    vote,
)
from vitviz.app.teacher import publish, teacher_panel, verdict
from vitviz.app.text import label, tr
from vitviz.server import classes, values

DOWN = "down"  # the mark of a page drawn while the store could not be reached


def bar() -> None:
    """app.py, before the page: a student follows their class; a teacher (or a presenter who
    may start a class) tells the class where they are and gets the class's pop-over."""
    said = st.session_state.pop(GONE, None)  # why the class this session was in is gone, or none started
    if said:
        st.info(said)
    if teaching() is None and (joined() is not None or "class" in st.query_params):
        student_bar()
        return
    publish()
    teacher_panel()


# ---------------------------------------------------------------------------------------------
# A student
# ---------------------------------------------------------------------------------------------


def student_bar(within: bool = False) -> None:
    """A student's bar at the top of the page: the class it follows (or a sentence on why not),
    Explore on my own / Back to the class, and the poll when one is open. ``within``: drawn by
    ``follow_page``'s own run, which draws the class's step itself."""
    code = joined()
    if code is None:
        if teaching() is None and "class" in st.query_params:  # a code that cannot be one (state refused it)
            typed = "".join(c for c in str(st.query_params["class"]) if c.isascii() and (c.isalnum() or c == " "))
            leave(tr("class.no_such", code=values.echo(typed, 12)))
            st.info(st.session_state.pop(GONE))
        return
    _follow(code, within)


PAGE_STEP = "_class_page_step"  # session state: the step the browser's page is, as its last whole run opened it
DRAWN_STEP = "_class_drawn_step"  # session state: the step the follower's page shows now


def following() -> bool:
    """Whether this session follows a class's steps now (a student, not exploring alone), in a
    Streamlit whose fragments' runs can be told from the app's (``internals.fragment_run``)."""
    return internals.ACTIVE and teaching() is None and joined() is not None and not st.session_state.get(EXPLORING)


def follow_page(scripts: list[str], paths: list[str]) -> None:
    """app.py, for a following student on a tour page: the bar and the step, in one fragment.
    ``scripts`` and ``paths``: the tour's page scripts and their addresses, in order."""
    st.session_state[PAGE_STEP] = state.get("step") or 0  # the step this whole run opened
    _followed(tuple(scripts), tuple(paths))


@st.fragment
def _followed(scripts: tuple[str, ...], paths: tuple[str, ...]) -> None:
    """The bar and the class's step; a catch-up's press reruns this alone, in a turn of its own."""
    if not internals.fragment_run():  # inside the whole run, which holds its turn
        _follow_step(scripts, paths, within=False)
        return
    with turns.server_turns().turn(turns.session_id()), models.within_limits():
        if navigation.fragment_off_page():  # asked from a page the browser has left since
            navigation.redraw_page()
        if st.session_state.get(ARRIVING) is not None or not following():
            st.rerun(scope="app")  # a shared image (the sidebar holds it), or exploring alone
        # the catch-up's callback, or Previous / Next; kept for a whole run that this one may start
        asked = st.session_state.get(navigation.ASKED_STEP)
        if asked is not None and 0 <= asked < len(scripts):
            state.set(step=asked)
        _follow_step(scripts, paths, within=True)


def _follow_step(scripts: tuple[str, ...], paths: tuple[str, ...], within: bool) -> None:
    """The bar, then the step it leaves this session on; ``within`` the fragment's own run, the
    step's address and link too (static/followed.js)."""
    student_bar(within)
    step = state.get("step") or 0
    moved = st.session_state.get(DRAWN_STEP) != step
    st.session_state[DRAWN_STEP] = step
    if within:  # the browser's page is the last whole run's: the step's address, its link, and the next whole run
        state.set_param("step", step)
        if step != st.session_state.get(PAGE_STEP):
            navigation.ask_step(step)  # also when the class is gone and this run starts a whole one
        else:
            st.session_state.pop(navigation.ASKED_STEP, None)
    ahead.read_ahead(scripts[step])
    tour.run_script(scripts[step])
    if within:  # after the step, so that the element's gap is under it; a new step opens at its top
        shown = web.script("followed.js", str(step), path=web.page_path(paths[step]))
        st.html(shown + (navigation.to_the_top() if moved else ""), unsafe_allow_javascript=True)


def _explore(exploring: bool) -> None:
    st.session_state[EXPLORING] = exploring


def _follow(code: str, within: bool = False) -> None:
    """The bar, drawn by every run of the student's page (the app's, or ``follow_page``'s fragment's);
    the page's script (static/follow.js) asks the class's route (``vitviz.app.where``) and presses
    the hidden catch-up button when the class has moved, whose callback makes the run it starts open
    the class's step."""
    store = server_store()
    try:
        shown = store.position(code)
        poll = store.poll(code) if shown is not None else None
    except classes.StoreDown:
        st.caption(tr("class.store_down_student"))
        _catch_up(code, (DOWN, DOWN))  # the route answers again once the store does: the page then catches up
        return
    if shown is None:
        leave(tr("class.no_such", code=code_text(code)))
        st.rerun(scope="app")
    exploring = st.session_state.get(EXPLORING, False)
    with st.container(key="vitviz-follow", horizontal=True, vertical_alignment="center"):
        st.caption(tr("class.exploring" if exploring else "class.following", code=code_text(code)))
        if exploring:
            st.button(tr("class.back"), key="class_back", on_click=_explore, args=(False,), type="primary")
        else:
            st.button(tr("class.explore"), key="class_explore", on_click=_explore, args=(True,))
        _catch_up(code, where.marks(shown, poll))
    if poll is not None:
        _ballot(code, poll)
    if not exploring:
        _move_to(shown, within)


def _catch_up(code: str, marks: tuple[str, str]) -> None:
    """The hidden catch-up button (style.css) and the script that presses it (static/follow.js),
    with the mark this page is drawn for (``where.marks``: presenter mode follows every slide, a
    page that shows the whole step only the step)."""
    st.button(tr("class.catch_up"), key=web.KEYS["catch_up"], on_click=_catch_up_now, args=(code,))
    part = int(presenter.presenting())
    drawn = (
        f'<span hidden data-vitviz-class="{marks[part]}" data-vitviz-part="{part}" '
        f'data-vitviz-address="{where.address(code)}"></span>'
    )
    st.html(drawn + web.script("follow.js"), unsafe_allow_javascript=True)


def _catch_up_now(code: str) -> None:
    """The catch-up button's callback, before the run its press starts: that run opens the class's
    step (``navigation.ask_step``, as Next's does) instead of drawing this page once more first."""
    if st.session_state.get(EXPLORING, False):
        return
    try:
        shown = server_store().position(code)
    except classes.StoreDown:
        return
    if shown is not None:
        _moves_to(shown)


def _move_to(shown: classes.Position, within: bool = False) -> None:
    """Open the teacher's step and slide (and shared image) when this page shows another:
    ``within`` ``follow_page``'s run, the step that draws next; else (and for an image, which the
    sidebar holds) in a whole run of the app."""
    moved = _moves_to(shown)
    if within and "image" not in moved:
        if "step" in moved:  # drawn next; _moves_to asked it of the next whole run too
            state.set(step=shown.step)
    elif moved:
        st.rerun(scope="app")


def _moves_to(shown: classes.Position) -> set[str]:
    """Make the teacher's step, slide and shared image this session's; what moved that the page
    must be drawn again for ("image", "step", "slide": a slide shows in presenter mode only)."""
    step = state.get("step") or 0
    moved = set()
    if shown.image is not None and st.session_state.get(SHOWN_IMAGE) != shown.image:
        st.session_state[SHOWN_IMAGE] = st.session_state[ARRIVING] = shown.image  # opened by the app's run
        moved.add("image")
    if shown.step != step or navigation.slide_of(step) != shown.slide:
        state.set(slide=f"{shown.step}:{shown.slide}")
        if shown.step != step:
            navigation.ask_step(shown.step)  # the app's run draws the step (navigation.follow_asked_step)
            moved.add("step")
        if presenter.presenting():
            moved.add("slide")
    return moved


def _ballot(code: str, poll: classes.Poll) -> None:
    """The poll's options as buttons (the student's vote marked), or, after the reveal, the answer;
    a patch poll's ballot is a picture to click on (``patch_poll.ballot``)."""
    if poll.kind == classes.PATCH_POLL:
        patch_poll.ballot(code, poll)
        return
    store = server_store()
    with st.container(key="vitviz-ballot", border=True):
        if poll.revealed:
            st.markdown(verdict(poll))
            return
        try:
            mine = store.vote_of(code, student_id(), poll.number)
        except classes.StoreDown:
            return
        st.markdown(tr("class.question"))
        with st.container(horizontal=True):
            for i, option in enumerate(poll.options):
                st.button(
                    label(option, short=True),
                    key=f"class_vote_{poll.number}_{i}",
                    type="primary" if option == mine else "secondary",
                    on_click=vote,
                    args=(code, poll.number, option),
                )
        if st.session_state.pop(REFUSED, False):
            st.caption(tr("class.vote_refused"))
        st.caption(tr("class.voted", option=label(mine, short=True)) if mine else tr("class.vote_help"))
