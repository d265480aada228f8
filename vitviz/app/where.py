"""Where a class is, answered without a script run: the server's store of classes, the class's
mark, and the plain HTTP route that serves it (``GET <base>/api/vitviz/class/<CODE>``).

A student's page holds the mark it was drawn with; its script (static/follow.js) asks this route
twice a second and, when the answer differs, presses the page's hidden "catch up" button, whose
run draws the class's step (``vitviz.app.students``). While the class reads, a student costs the
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
from collections.abc import Mapping, Sequence

import streamlit as st
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import PlainTextResponse
from starlette.routing import Route

from vitviz.server import classes, values

PATH = "/api/vitviz/class/{code}"
GONE = "gone"  # the mark of a class that ended, expired or never was

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


def mark(position: classes.Position | None, poll: classes.Poll | None) -> str:
    """A short text that changes whenever a following page must be drawn again: the teacher moved
    (step, slide or shared image: ``Position.moves``), asked a new poll or revealed it, or the
    class is gone."""
    if position is None:
        return GONE
    return f"{position.moves}.{poll.number if poll else 0}.{int(poll.revealed) if poll else 0}"


def mark_of(code: str) -> str:
    """The class's mark, read from the store (raises ``classes.StoreDown``)."""
    store = server_store()
    position = store.position(code)
    return mark(position, store.poll(code) if position is not None else None)


async def answer(request: Request) -> PlainTextResponse:
    """The route: the class's mark as plain text; 503 while the store cannot be reached (the page
    then keeps what it shows and asks again)."""
    code = values.class_code(request.path_params["code"])
    if code is None:
        return PlainTextResponse(GONE, headers={"Cache-Control": "no-store"})
    try:
        text = await run_in_threadpool(mark_of, code)  # Redis answers over the network: off the event loop
    except classes.StoreDown:
        return PlainTextResponse("", status_code=503, headers={"Cache-Control": "no-store"})
    return PlainTextResponse(text, headers={"Cache-Control": "no-store"})


def _base() -> str:
    base = (st.get_option("server.baseUrlPath") or "").strip("/")
    return f"/{base}" if base else ""


def routes() -> list[Route]:
    """The route for app.py's ``st.App``, under the server's ``server.baseUrlPath``."""
    return [Route(_base() + PATH, answer, methods=["GET"])]


def address(code: str) -> str:
    """The route's path for one class, as the page's script asks it (same origin)."""
    return _base() + PATH.format(code=code)
