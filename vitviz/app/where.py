"""Where a class is, answered without a script run: the server's store of classes, the class's
mark, and the plain HTTP route that serves it (``GET <base>/api/vitviz/class/<CODE>``).

A student's page holds the mark it was drawn with (``marks``: one for a page showing the whole
step, one for presenter mode's slides); its script (static/follow.js) asks this route twice a
second and, when the answer's mark differs, presses the page's hidden "catch up" button, whose run
draws the class's step (``vitviz.app.students``). While the class reads, a student costs the
server one small GET every half second, not a Streamlit run. The route reads the same store as
the pages (memory, or Redis shared by several servers), so any server of a class answers.

This module imports no torch: app.py builds its route when Streamlit imports it, before the
startup loads the libraries.
"""

from __future__ import annotations

import argparse
import os
import sys
import threading
import zlib
from collections.abc import Mapping, Sequence

import streamlit as st
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import PlainTextResponse
from starlette.routing import Route

from vitviz.server import classes, values

PATH = "/api/vitviz/class/{code}"
GONE = "gone"  # the mark of a class that ended, expired or never was
NOT_KEPT = {"Cache-Control": "no-store"}  # every ask gets the class's mark now, never a kept one

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


def marks(position: classes.Position | None, poll: classes.Poll | None) -> tuple[str, str]:
    """Two short texts, each changing whenever a following page must be drawn again: the first
    for a page that shows the whole step (the class's step or shared image changed, a poll was
    asked or revealed), the second for a page in presenter mode, which shows the teacher's slide
    (any move: ``Position.moves``). A slide within the step costs the other pages nothing."""
    if position is None:
        return GONE, GONE
    asked = f"{poll.number}.{int(poll.revealed)}" if poll else "0.0"
    image = zlib.crc32((position.image or "").encode())
    return f"{position.step}.{image:x}.{asked}", f"{position.moves}.{asked}"


def marks_of(code: str) -> tuple[str, str]:
    """The class's marks, read from the store (raises ``classes.StoreDown``)."""
    store = server_store()
    position = store.position(code)
    return marks(position, store.poll(code) if position is not None else None)


async def answer(request: Request) -> PlainTextResponse:
    """The route: the class's two marks as plain text, "STEP_MARK SLIDE_MARK"; 503 while the store
    cannot be reached (the page then keeps what it shows and asks again)."""
    code = values.class_code(request.path_params["code"])
    if code is None:
        return PlainTextResponse(f"{GONE} {GONE}", headers=NOT_KEPT)
    try:
        text = " ".join(await run_in_threadpool(marks_of, code))  # Redis answers over the network: off the event loop
    except classes.StoreDown:
        return PlainTextResponse("", status_code=503, headers=NOT_KEPT)
    return PlainTextResponse(text, headers=NOT_KEPT)


def _base() -> str:
    base = (st.get_option("server.baseUrlPath") or "").strip("/")
    return f"/{base}" if base else ""


def routes() -> list[Route]:
    """The route for app.py's ``st.App``, under the server's ``server.baseUrlPath``."""
    return [Route(_base() + PATH, answer, methods=["GET"])]


def address(code: str) -> str:
    """The route's path for one class, as the page's script asks it (same origin)."""
    return _base() + PATH.format(code=code)
