"""A teacher's side of a class (``vitviz.app.classroom``): in presenter mode, start a class, show
its join address and QR code, put everyone on the teacher's image, ask the class and reveal the
model's answer, end it; and every run of the teacher's session says where the class is."""

from __future__ import annotations

import contextlib
from collections.abc import Sequence

import streamlit as st

from vitviz.app import charts, navigation, patch_poll, presenter, state
from vitviz.app.classroom import (
    COUNT_EVERY_S,
    GONE,
    POLL_OPTIONS,
    PREDICTION_STEP,
    TEACHER,
    ask,
    code_text,
    image_choice,
    join_address,
    qr_png,
    reveal,
    server_store,
    share_image,
    teaching,
)
from vitviz.app.text import label, tr
from vitviz.render import plots
from vitviz.server import classes


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


def poll_options(class_names: Sequence[str], probabilities: Sequence[float]) -> tuple[tuple[str, ...], str]:
    """What the class is asked: every class of a small model, else the model's ``POLL_OPTIONS``
    most likely, in the model's order (an order by probability would give the answer away); and
    the model's answer."""
    order = sorted(range(len(class_names)), key=lambda i: -probabilities[i])
    answer = class_names[order[0]]
    if len(class_names) <= POLL_OPTIONS:
        return tuple(class_names), answer
    return tuple(class_names[i] for i in sorted(order[:POLL_OPTIONS])), answer


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
        # A container of the full run's own, with the timed fragment inside. Under a class's load a
        # full run's fragment block was seen missing from what the browser received (the fragment
        # had run); the browser then moved the next element, the page's title, into the
        # fragment's place, and the fragment's next run replaced it.
        with st.container(key="vitviz-poll-place"):
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
    if image_choice() is None:
        st.caption(tr("class.upload_not_shared"))
    else:
        st.button(
            tr("class.own_images" if sharing else "class.my_image"),
            key="class_share",
            on_click=share_image,
            args=(not sharing,),
        )
    if (state.get("step") or 0) == PREDICTION_STEP:
        _ask_button()
    st.button(tr("class.end"), key="class_end", on_click=_end)


def _ask_button() -> None:
    """ "Ask the class" on the prediction step: what will the model answer for this image? And
    which patch matters most to it (``patch_poll``)?"""
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
    st.button(
        tr("class.ask"), key="class_ask", on_click=ask, args=(classes.CLASS_POLL, options, answer), type="primary"
    )
    patch_poll.ask_button(cur.trace, cur.model.config.preprocess)


@st.fragment(run_every=COUNT_EVERY_S)
def _poll_view() -> None:
    """The teacher's live chart of the class's votes, and the reveal."""
    held = teaching()
    if held is None:
        return
    if navigation.fragment_off_page():
        navigation.redraw_page()
    try:
        poll = server_store().poll(held[0])
    except classes.StoreDown:
        st.warning(tr("class.store_down_teacher"))
        return
    if poll is None:
        return
    if poll.kind == classes.PATCH_POLL:
        patch_poll.teacher_view(held[0], poll)
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
        charts.draw(left, figure, width="stretch", key="class_votes")
        if poll.revealed:
            right.markdown(verdict(poll))
        else:
            right.button(tr("class.reveal"), key="class_reveal", on_click=reveal, type="primary")


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
