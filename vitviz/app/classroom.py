"""A class that follows its teacher, on the tour's step and slide: the teacher's panel
in presenter mode (start, the join address and its QR code, everyone on my image, a poll, end),
and a student's bar (vitviz.app.teacher, vitviz.app.students). The store is ``vitviz.server.classes``.

Only a session holding a class's teacher token (kept in its session state, never in a URL)
publishes where the class is; a student's session only reads it and sends its own vote, so no
student can move the teacher or another student.

Server option: ``streamlit run app.py -- --redis redis://HOST:PORT/DB`` (or VITVIZ_REDIS) keeps
the classes in Redis, shared by several app servers (deploy/serve-class.sh); without it, in this
server's memory.
"""

from __future__ import annotations

import contextlib
import functools
import io
import secrets

import streamlit as st

from vitviz.app import navigation, state
from vitviz.app.where import server_store
from vitviz.server import classes, values

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


def code_text(code: str) -> str:
    """A code as people read it aloud: "ABCD-2345"."""
    return f"{code[:4]}-{code[4:]}"


def join_address(code: str) -> str:
    """The address students open: this page's origin with ``?class=CODE``."""
    url = getattr(st.context, "url", None)  # None: a Streamlit without st.context.url, or AppTest
    origin = url.split("?")[0].rsplit("/", 1)[0] if url else ""
    return f"{origin}/?class={code}"


@functools.lru_cache(maxsize=64)
def qr_png(text: str) -> bytes:
    """A QR code of ``text`` as a PNG, drawn here (segno: pure Python, no network), once per
    address: the teacher's pop-over shows it on every run, a few milliseconds each time."""
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


def image_choice() -> str | None:
    """The session's image as a shared class may carry it ("sample:NAME", "test:CLASS/INDEX");
    None for an upload, which stays on its own machine."""
    source = state.get("source", "sample")
    if source == "test" and state.get("test"):
        return f"test:{state.get('test')}"
    if source == "sample" and state.get("sample"):
        return f"sample:{state.get('sample')}"
    return None


def _open_image(shared: str) -> None:
    """Make ``shared`` (``image_choice``'s text) this session's image."""
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


def leave(sentence: str) -> None:
    """Stop following (a wrong, ended or expired code), saying so once."""
    st.session_state[GONE] = sentence
    state.set(**{"class": None})
    state.set_param("class", None)


# ---------------------------------------------------------------------------------------------
# What a teacher and a student do in a poll (either kind)
# ---------------------------------------------------------------------------------------------


def share_image(share: bool) -> None:
    """The teacher: everyone on my image (``share``), or back to their own."""
    held = teaching()
    if held is None:
        return
    step = state.get("step") or 0
    with contextlib.suppress(classes.ClassError):  # gone already, or down: nothing to do
        server_store().publish(*held, step, navigation.slide_of(step), image=image_choice(), share=share)


def ask(kind: str, options: tuple[str, ...], answer: str) -> int | None:
    """The teacher opens a poll about the teacher's image (shared with the class first); its
    number, or None when there is no class to ask."""
    held = teaching()
    if held is None:
        return None
    with contextlib.suppress(classes.ClassError):  # gone already, or down: nothing to do
        share_image(True)
        return server_store().ask(*held, kind, options, answer)
    return None


def reveal() -> None:
    """The teacher closes the poll's voting and shows its answer."""
    held = teaching()
    if held is not None:
        with contextlib.suppress(classes.ClassError):  # gone already, or down: nothing to do
            server_store().reveal(*held)


def vote(code: str, number: int, option: str) -> None:
    """A student's vote in poll ``number``; the next run says when it was not counted."""
    try:
        counted = server_store().vote(code, student_id(), number, option)
    except classes.StoreDown:
        counted = False
    st.session_state[REFUSED] = not counted
