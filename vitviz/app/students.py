"""A student's side of a class (``vitviz.app.classroom``): following the teacher's step and slide,
exploring alone and coming back, and voting in the teacher's poll; and the bar app.py draws before
every page, for a student or a teacher."""

from __future__ import annotations

import streamlit as st

from vitviz.app import navigation, patch_poll, presenter, state, web, where
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


def student_bar() -> None:
    """A student's bar at the top of the page: the class it follows (or a sentence on why not),
    Explore on my own / Back to the class, and the poll when one is open."""
    code = joined()
    if code is None:
        if teaching() is None and "class" in st.query_params:  # a code that cannot be one (state refused it)
            leave(tr("class.no_such", code=values.echo(st.query_params["class"], 12)))
            st.info(st.session_state.pop(GONE))
        return
    _follow(code)


def _explore(exploring: bool) -> None:
    st.session_state[EXPLORING] = exploring


def _follow(code: str) -> None:
    """The bar, drawn by every full run of the student's page; the page's script (static/follow.js)
    asks the class's route (``vitviz.app.where``) and presses the hidden catch-up button when the
    class has moved, whose callback makes the run it starts open the class's step."""
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
        _move_to(shown)


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


def _move_to(shown: classes.Position) -> None:
    """Open the teacher's step and slide (and shared image) when this page shows another."""
    if _moves_to(shown):
        st.rerun(scope="app")


def _moves_to(shown: classes.Position) -> bool:
    """Make the teacher's step, slide and shared image this session's; whether the page must be
    drawn again for it (a slide shows in presenter mode only)."""
    step = state.get("step") or 0
    moved = False
    if shown.image is not None and st.session_state.get(SHOWN_IMAGE) != shown.image:
        st.session_state[SHOWN_IMAGE] = st.session_state[ARRIVING] = shown.image  # opened by the app's run
        moved = True
    if shown.step != step or navigation.slide_of(step) != shown.slide:
        state.set(slide=f"{shown.step}:{shown.slide}")
        if shown.step != step:
            navigation.ask_step(shown.step)  # the app's run draws the step (navigation.follow_asked_step)
        moved = moved or shown.step != step or presenter.presenting()
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
