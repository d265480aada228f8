"""A class that follows its teacher (issue 56), on the tour's step and slide: the teacher's panel
in presenter mode (start, the join address and its QR code, everyone on my image, a poll, end),
and a student's bar (following, exploring alone, voting). The store is ``vitviz.classes``.

Only a session holding a class's teacher token (kept in its session state, never in a URL)
publishes where the class is; a student's session only reads it and sends its own vote, so no
student can move the teacher or another student.

Server option: ``streamlit run app.py -- --redis redis://HOST:PORT/DB`` (or VITVIZ_REDIS) keeps
the classes in Redis, shared by several app servers (deploy/serve-class.sh); without it, in this
server's memory.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import os
import secrets
import sys
import threading
from collections.abc import Mapping, Sequence

import streamlit as st

from vitviz import classes, plots, values
from vitviz.app import navigation, presenter, state
from vitviz.app.text import label, tr

FOLLOW_EVERY_S = 0.5  # how often a student's page asks where the class is
COUNT_EVERY_S = 1.0  # how often the teacher's chart of votes is drawn again
PREDICTION_STEP = 7  # the tour's step where the teacher may ask the class (vitviz.app.tour)
POLL_OPTIONS = 12  # a model with more classes is asked about its most likely ones, this many at most
TEACHER = "_class_teacher"  # session state: (code, teacher token) of the class this session teaches
STUDENT = "_class_student"  # session state: this student's anonymous id
EXPLORING = "_class_exploring"  # session state: the student left to explore alone
SHOWN_IMAGE = "_class_image"  # session state: the shared image the student last moved to
GONE = "_class_gone"  # session state: a sentence for the run after the class was found gone
REFUSED = "_class_refused"  # session state: the student's last vote was not counted
ARRIVING = "_class_arriving"  # session state: the shared image to open before the sidebar's widgets

_MAKING = threading.Lock()
_server: classes.Store | None = None


def redis_url(argv: Sequence[str], environ: Mapping[str, str]) -> str | None:
    """The server's ``--redis URL`` (after ``--``), else VITVIZ_REDIS, else None (memory)."""
    parser = argparse.ArgumentParser(add_help=False, allow_abbrev=False)
    parser.add_argument("--redis", default=None)
    return parser.parse_known_args(list(argv))[0].redis or environ.get("VITVIZ_REDIS") or None


def server_store() -> classes.Store:
    """The server's store of classes, made once from its options."""
    global _server
    with _MAKING:
        if _server is None:
            _server = classes.store_for(redis_url(sys.argv[1:], os.environ))
        return _server


def code_text(code: str) -> str:
    """A code as people read it aloud: "ABCD-2345"."""
    return f"{code[:4]}-{code[4:]}"


def join_address(code: str) -> str:
    """The address students open: this page's origin with ``?class=CODE``."""
    url = getattr(st.context, "url", None)  # None: a Streamlit without st.context.url, or AppTest
    origin = url.split("?")[0].rsplit("/", 1)[0] if url else ""
    return f"{origin}/?class={code}"


def qr_png(text: str) -> bytes:
    """A QR code of ``text`` as a PNG, drawn here (segno: pure Python, no network)."""
    import segno

    out = io.BytesIO()
    segno.make(text, error="m").save(out, kind="png", scale=8, border=2)
    return out.getvalue()


# ---------------------------------------------------------------------------------------------
# The session's part in a class
# ---------------------------------------------------------------------------------------------


def teaching() -> tuple[str, str] | None:
    """(code, teacher token) of the class this session teaches, or None."""
    held = st.session_state.get(TEACHER)
    return tuple(held) if held else None


def student_id() -> str:
    """This session's anonymous id in a class (made once, random: nothing about the student)."""
    return st.session_state.setdefault(STUDENT, secrets.token_hex(8))


def joined() -> str | None:
    """The class this session follows as a student (the URL's ``class``), or None."""
    code = values.class_code(state.get("class"))
    if code is None or teaching() is not None:
        return None
    return code


def _image_choice() -> str | None:
    """The session's image as a shared class may carry it ("sample:NAME", "test:CLASS/INDEX");
    None for an upload, which stays on its own machine."""
    source = state.get("source", "sample")
    if source == "test" and state.get("test"):
        return f"test:{state.get('test')}"
    if source == "sample" and state.get("sample"):
        return f"sample:{state.get('sample')}"
    return None


def _open_image(shared: str) -> None:
    """Make ``shared`` (``_image_choice``'s text) this session's image."""
    kind, _, name = shared.partition(":")
    if kind == "sample":
        state.set(source="sample", sample=name)
    elif kind == "test" and (found := values.test_image(name)) is not None:
        state.set(source="test", test=name, test_class=found[0], test_index=found[1])


def open_shared_image() -> None:
    """app.py, before the sidebar: the image the teacher shared, when the class's last look
    found a new one (the sidebar's widgets hold the image: set before they are drawn)."""
    shared = st.session_state.pop(ARRIVING, None)
    if shared is not None:
        _open_image(shared)


def _leave(sentence: str) -> None:
    """Stop following (a wrong, ended or expired code), saying so once."""
    st.session_state[GONE] = sentence
    state.set(**{"class": None})
    state.set_param("class", None)


# ---------------------------------------------------------------------------------------------
# The teacher
# ---------------------------------------------------------------------------------------------


def publish() -> None:
    """The teacher's run: tell the class where the teacher is (app.py calls this before the page
    runs, once the step is known). A store that is gone is said in the panel, not here."""
    held = teaching()
    if held is None:
        return
    step = state.get("step") or 0
    try:
        server_store().publish(*held, step, navigation.slide_of(step))
    except classes.NotTeacher:  # expired, or ended by another replica's session of this teacher
        st.session_state.pop(TEACHER, None)
    except classes.StoreDown:
        pass


def _start() -> None:
    try:
        started = server_store().start()
    except classes.ClassesFull as full:
        st.session_state[GONE] = tr("class.full", count=full.args[0])
        return
    except classes.StoreDown:
        st.session_state[GONE] = tr("class.store_down_teacher")
        return
    st.session_state[TEACHER] = (started.code, started.teacher_token)
    state.set(**{"class": None})


def _end() -> None:
    held = st.session_state.pop(TEACHER, None)
    if held:
        with contextlib.suppress(classes.ClassError):  # gone already, or down: nothing to do
            server_store().end(*held)


def _share_image(share: bool) -> None:
    held = teaching()
    if held is None:
        return
    step = state.get("step") or 0
    with contextlib.suppress(classes.ClassError):  # gone already, or down: nothing to do
        server_store().publish(*held, step, navigation.slide_of(step), image=_image_choice(), share=share)


def _ask(options: tuple[str, ...], answer: str) -> None:
    held = teaching()
    if held is None:
        return
    with contextlib.suppress(classes.ClassError):  # gone already, or down: nothing to do
        _share_image(True)  # the class votes on the teacher's image
        server_store().ask(*held, "class", options, answer)


def _reveal() -> None:
    held = teaching()
    if held is not None:
        with contextlib.suppress(classes.ClassError):  # gone already, or down: nothing to do
            server_store().reveal(*held)


def poll_options(class_names: Sequence[str], probabilities: Sequence[float]) -> tuple[tuple[str, ...], str]:
    """What the class is asked: every class of a small model, else the model's ``POLL_OPTIONS``
    most likely, in the model's order (an order by probability would give the answer away); and
    the model's answer."""
    order = sorted(range(len(class_names)), key=lambda i: -probabilities[i])
    answer = class_names[order[0]]
    if len(class_names) <= POLL_OPTIONS:
        return tuple(class_names), answer
    return tuple(class_names[i] for i in sorted(order[:POLL_OPTIONS])), answer


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


def teacher_panel() -> None:
    """Presenter mode's class pop-over, floating in the slide's corner (presenter.css)."""
    held = teaching()
    if not presenter.presenting() and held is None:
        return
    with st.container(key="vitviz-class"):
        title = f"{tr('class.button')} {code_text(held[0])}" if held else tr("class.start")
        with st.popover(title, icon=":material/groups:"):
            if held is None:
                st.caption(tr("class.start_help"))
                st.button(tr("class.start"), key="class_start", on_click=_start, type="primary")
                return
            _teacher_controls(*held)
    if held is not None:
        _poll_view()


def _teacher_controls(code: str, token: str) -> None:
    address = join_address(code)
    st.markdown(tr("class.join", address=address, code=code_text(code)))
    st.image(qr_png(address), width=220, caption=tr("class.qr"))
    try:
        shown = server_store().position(code)
    except classes.StoreDown:
        st.error(tr("class.store_down_teacher"))
        shown = None
    sharing = shown is not None and shown.image is not None
    if _image_choice() is None:
        st.caption(tr("class.upload_not_shared"))
    else:
        st.button(
            tr("class.own_images" if sharing else "class.my_image"),
            key="class_share",
            on_click=_share_image,
            args=(not sharing,),
        )
    if (state.get("step") or 0) == PREDICTION_STEP:
        _ask_button()
    st.button(tr("class.end"), key="class_end", on_click=_end)


def _ask_button() -> None:
    """ "Ask the class" on the prediction step: what will the model answer for this image?"""
    from vitviz.app import current

    try:
        cur = current.current()
    except Exception:  # noqa: BLE001 (the page says what went wrong with the model or image)
        return
    names = list(cur.model.config.class_names)
    if not names:
        return
    probabilities = cur.trace.logits[0].float().softmax(-1).tolist()
    options, answer = poll_options(names, probabilities)
    st.button(tr("class.ask"), key="class_ask", on_click=_ask, args=(options, answer), type="primary")


@st.fragment(run_every=COUNT_EVERY_S)
def _poll_view() -> None:
    """The teacher's live chart of the class's votes, and the reveal."""
    held = teaching()
    if held is None:
        return
    try:
        poll = server_store().poll(held[0])
    except classes.StoreDown:
        st.warning(tr("class.store_down_teacher"))
        return
    if poll is None:
        return
    with st.container(key="vitviz-poll", border=True):
        counts = tuple(poll.counts[o] for o in poll.options)
        answer = poll.options.index(poll.answer) if poll.revealed and poll.answer in poll.options else None
        left, right = st.columns([3, 1], vertical_alignment="center")
        figure = plots.bars(
            tuple(label(o, short=True) for o in poll.options),
            counts,
            tr("class.votes_title", count=poll.total),
            height=260,
            highlight=answer,
            percent=False,
        )
        left.plotly_chart(figure, width="stretch", key="class_votes")
        if poll.revealed:
            right.markdown(verdict(poll))
        else:
            right.button(tr("class.reveal"), key="class_reveal", on_click=_reveal, type="primary")


def verdict(poll: classes.Poll) -> str:
    """After the reveal: the model's answer beside the class's (its most voted option)."""
    if poll.total == 0:
        return tr("class.reveal_no_votes", answer=label(poll.answer, short=True))
    top = max(poll.options, key=lambda o: poll.counts[o])
    with_answer = poll.counts.get(poll.answer, 0)
    return tr(
        "class.revealed",
        answer=label(poll.answer, short=True),
        top=label(top, short=True),
        top_votes=poll.counts[top],
        right=with_answer,
        total=poll.total,
    )


# ---------------------------------------------------------------------------------------------
# A student
# ---------------------------------------------------------------------------------------------


def student_bar() -> None:
    """A student's bar at the top of the page: the class it follows (or a sentence on why not),
    Explore on my own / Back to the class, and the poll when one is open."""
    code = joined()
    if code is None:
        if teaching() is None and "class" in st.query_params:  # a code that cannot be one (state refused it)
            _leave(tr("class.no_such", code=values.echo(st.query_params["class"], 12)))
            st.info(st.session_state.pop(GONE))
        return
    _follow()


def _explore(exploring: bool) -> None:
    st.session_state[EXPLORING] = exploring


@st.fragment(run_every=FOLLOW_EVERY_S)
def _follow() -> None:
    code = joined()
    if code is None:
        return
    store = server_store()
    try:
        shown = store.position(code)
        poll = store.poll(code) if shown is not None else None
    except classes.StoreDown:
        st.caption(tr("class.store_down_student"))
        return
    if shown is None:
        _leave(tr("class.no_such", code=code_text(code)))
        st.rerun(scope="app")
    exploring = st.session_state.get(EXPLORING, False)
    with st.container(key="vitviz-follow", horizontal=True, vertical_alignment="center"):
        st.caption(tr("class.exploring" if exploring else "class.following", code=code_text(code)))
        if exploring:
            st.button(tr("class.back"), key="class_back", on_click=_explore, args=(False,), type="primary")
        else:
            st.button(tr("class.explore"), key="class_explore", on_click=_explore, args=(True,))
    if poll is not None:
        _ballot(code, poll)
    if not exploring:
        _move_to(shown)


def _move_to(shown: classes.Position) -> None:
    """Open the teacher's step and slide (and shared image) when this page shows another."""
    step = state.get("step") or 0
    moved = False
    if shown.image is not None and st.session_state.get(SHOWN_IMAGE) != shown.image:
        st.session_state[SHOWN_IMAGE] = st.session_state[ARRIVING] = shown.image  # opened by the app's run
        moved = True
    if shown.step != step or navigation.slide_of(step) != shown.slide:
        state.set(slide=f"{shown.step}:{shown.slide}")
        if shown.step != step:
            navigation.ask_step(shown.step)  # this app run draws the step (navigation.follow_asked_step)
        moved = True
    if moved:
        st.rerun(scope="app")


def _vote(code: str, number: int, option: str) -> None:
    try:
        counted = server_store().vote(code, student_id(), number, option)
    except classes.StoreDown:
        counted = False
    st.session_state[REFUSED] = not counted


def _ballot(code: str, poll: classes.Poll) -> None:
    """The poll's options as buttons (the student's vote marked), or, after the reveal, the answer."""
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
                    on_click=_vote,
                    args=(code, poll.number, option),
                )
        if st.session_state.pop(REFUSED, False):
            st.caption(tr("class.vote_refused"))
        st.caption(tr("class.voted", option=label(mine, short=True)) if mine else tr("class.vote_help"))
