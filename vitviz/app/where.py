"""Where a class is, answered without a script run: the server's store of classes, the class's
marks, and the plain GET that serves them (``<base>/api/vitviz/class/<CODE>``, answered by
``Answers``, the first middleware of app.py's ``st.App``).

A student's page holds the mark it was drawn with (``marks``: one for a page showing the whole
step, one for presenter mode's slides); its script (static/follow.js) asks twice a second and,
when the answer's mark differs, presses the page's hidden "catch up" button, whose run draws the
class's step (``vitviz.app.students``). While the class reads, a student costs the server one
small GET every half second, not a Streamlit run. The answer comes from the same store as the
pages (memory, or Redis shared by several servers), so any server of a class answers.

This module imports no torch: app.py builds its middleware when Streamlit imports it, before the
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
from starlette.types import ASGIApp, Receive, Scope, Send

from vitviz.server import classes, values

PATH = "/api/vitviz/class/{code}"
GONE = "gone"  # the mark of a class that ended, expired or never was
NOT_KEPT = (b"cache-control", b"no-store")  # every ask gets the class's marks now, never a kept one

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


def _base() -> str:
    base = (st.get_option("server.baseUrlPath") or "").strip("/")
    return f"/{base}" if base else ""


class Answers:
    """ASGI middleware, first in app.py's ``st.App``: a GET of ``<base>/api/vitviz/class/<CODE>``
    gets the class's marks as plain text, "STEP_MARK SLIDE_MARK", from here, before Streamlit's
    own middleware and routing; 503 while the store cannot be reached (the page then keeps what
    it shows and asks again). Every other request goes on to ``app`` untouched."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        # the server's base path read per request, as the pages read it: Streamlit may settle its
        # options (a --server.baseUrlPath) after app.py built this middleware
        prefix = _base() + PATH.partition("{")[0] if scope["type"] == "http" else None
        if prefix is None or scope["method"] != "GET" or not scope["path"].startswith(prefix):
            await self.app(scope, receive, send)
            return
        code = values.class_code(scope["path"].removeprefix(prefix))
        status, text = 200, f"{GONE} {GONE}"
        if code is not None:
            try:
                store = server_store()
                # the memory store answers at once; Redis over the network, off the event loop
                found = (
                    marks_of(code)
                    if isinstance(store, classes.MemoryStore)
                    else await run_in_threadpool(marks_of, code)
                )
                text = " ".join(found)
            except classes.StoreDown:
                status, text = 503, ""
        body = text.encode()
        headers = [(b"content-type", b"text/plain; charset=utf-8"), (b"content-length", str(len(body)).encode())]
        await send({"type": "http.response.start", "status": status, "headers": [*headers, NOT_KEPT]})
        await send({"type": "http.response.body", "body": body})


def address(code: str) -> str:
    """The path a page asks for one class (same origin)."""
    return _base() + PATH.format(code=code)
