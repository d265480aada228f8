"""Where a class is, answered without a script run: the server's store of classes, the class's
marks, and the plain GET that serves them (``<base>/api/vitviz/class/<CODE>``, answered by
``Answers``, the first middleware of app.py's ``st.App``).

A student's page holds the mark it was drawn with (``marks``: one for a page showing the whole
step, one for presenter mode's slides); its script (static/follow.js) asks with that mark
(``?drawn=MARK&part=0|1``), and the server holds the answer until the class's mark is another or
``HOLD_S`` pass (``Watch``: one look at the class every ``WATCH_S`` for all its waiting pages).
When the answer's mark differs, the script presses the page's hidden "catch up" button, whose run
draws the class's step (``vitviz.app.students``). So a student learns of the teacher's Next within
``WATCH_S``, and while the class reads, a student costs the server one held GET, not a Streamlit
run. A GET without a mark is answered at once. The answer comes from the same store as the pages
(memory, or Redis shared by several servers), so any server of a class answers.

This module imports no torch: app.py builds its middleware when Streamlit imports it, before the
startup loads the libraries.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import re
import sys
import threading
import zlib
from collections.abc import Mapping, Sequence
from urllib.parse import parse_qs

import streamlit as st
from starlette.concurrency import run_in_threadpool
from starlette.types import ASGIApp, Receive, Scope, Send

from vitviz.server import classes, values

PATH = "/api/vitviz/class/{code}"
GONE = "gone"  # the mark of a class that ended, expired or never was
NOT_KEPT = (b"cache-control", b"no-store")  # every ask gets the class's marks now, never a kept one
HOLD_S = 20.0  # how long an ask that names its page's mark waits for the class to move
WATCH_S = 0.05  # how often a server looks at a class whose pages wait
MAX_HELD = 2000  # asks one server holds at once; more are answered at once (the page asks again later)
MARK = re.compile(r"[0-9a-z.]{1,64}")  # what marks() writes

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


def _asked_with(query: bytes) -> tuple[str, int] | None:
    """The mark a page was drawn with and the part it follows, from an ask's query string
    (``drawn=MARK&part=0|1``); None for an ask to be answered at once (none, or not one)."""
    if len(query) > 200:
        return None
    asked = parse_qs(query.decode("ascii", "replace"))
    drawn, part = asked.get("drawn", [""])[0], asked.get("part", [""])[0]
    if not MARK.fullmatch(drawn) or part not in ("0", "1"):
        return None
    return drawn, int(part)


class Watch:
    """The classes a server's pages wait on, looked at every ``WATCH_S`` by one task per class
    (the memory store at once, Redis off the event loop), for as long as a page waits: each
    waiting ask is told when its class's marks change, instead of asking the store itself.

    Args:
        read: the class's marks (``marks_of``; raises ``classes.StoreDown``).
        in_thread: whether ``read`` goes off the event loop (a store over the network).
        every: seconds between looks.
    """

    def __init__(self, read=None, in_thread=None, every: float = WATCH_S) -> None:
        self._read, self._in_thread, self.every = read or marks_of, in_thread, every
        self._seen: dict[str, tuple[str, str] | None] = {}  # code -> its marks, None while the store is down
        self._moved: dict[str, asyncio.Event] = {}  # code -> set at its next change
        self._waiting: dict[str, int] = {}  # code -> asks held
        self._tasks: set[asyncio.Task] = set()  # the watches going (the loop keeps only weak references)
        self.held = 0

    async def look(self, code: str) -> tuple[str, str] | None:
        """The class's marks now; None while the store cannot be reached."""
        threaded = (
            self._in_thread if self._in_thread is not None else not isinstance(server_store(), classes.MemoryStore)
        )
        try:
            return await run_in_threadpool(self._read, code) if threaded else self._read(code)
        except classes.StoreDown:
            return None

    async def _watch(self, code: str) -> None:
        while self._waiting.get(code):
            await asyncio.sleep(self.every)
            seen = await self.look(code)
            if seen != self._seen.get(code):
                self._seen[code] = seen
                self._moved.pop(code).set()
                self._moved[code] = asyncio.Event()
        self._seen.pop(code, None)
        self._moved.pop(code, None)
        self._waiting.pop(code, None)

    async def wait(self, code: str, drawn: str, part: int, hold: float | None = None) -> tuple[str, str] | None:
        """The class's marks once its ``part`` is not ``drawn`` or ``hold`` seconds (``HOLD_S``)
        have passed; None while the store cannot be reached. Answered at once past ``MAX_HELD`` asks."""
        seen = await self.look(code)
        if seen is None or seen[part] != drawn or self.held >= MAX_HELD:
            return seen
        loop = asyncio.get_running_loop()
        deadline = loop.time() + (HOLD_S if hold is None else hold)
        self.held += 1
        self._waiting[code] = self._waiting.get(code, 0) + 1
        if code not in self._moved:  # the first page to wait on this class starts its watch
            self._seen[code] = seen
            self._moved[code] = asyncio.Event()
            task = asyncio.create_task(self._watch(code))
            self._tasks.add(task)
            task.add_done_callback(self._tasks.discard)
        try:
            while (seen := self._seen.get(code)) is not None and seen[part] == drawn:
                left = deadline - loop.time()
                if left <= 0:
                    break
                try:
                    await asyncio.wait_for(self._moved[code].wait(), left)
                except asyncio.TimeoutError:  # TimeoutError itself from Python 3.11
                    break
            return seen
        finally:
            self.held -= 1
            self._waiting[code] -= 1


_watch: Watch | None = None


def watch() -> Watch:
    """The server's watch of the classes its pages wait on, made on the event loop at its first ask."""
    global _watch
    if _watch is None:
        _watch = Watch()
    return _watch


def _base() -> str:
    base = (st.get_option("server.baseUrlPath") or "").strip("/")
    return f"/{base}" if base else ""


class Answers:
    """ASGI middleware, first in app.py's ``st.App``: a GET of ``<base>/api/vitviz/class/<CODE>``
    gets the class's marks as plain text, "STEP_MARK SLIDE_MARK", from here, before Streamlit's
    own middleware and routing: at once, or, asked with ``?drawn=MARK&part=P``, once the class's
    mark P is not MARK (``Watch.wait``); 503 while the store cannot be reached (the page then keeps
    what it shows and asks again). Every other request goes on to ``app`` untouched."""

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
            asked = _asked_with(scope.get("query_string", b""))
            found = await (watch().wait(code, *asked) if asked else watch().look(code))
            status, text = (200, " ".join(found)) if found is not None else (503, "")
        body = text.encode()
        headers = [(b"content-type", b"text/plain; charset=utf-8"), (b"content-length", str(len(body)).encode())]
        await send({"type": "http.response.start", "status": status, "headers": [*headers, NOT_KEPT]})
        await send({"type": "http.response.body", "body": body})


def address(code: str) -> str:
    """The path a page asks for one class (same origin)."""
    return _base() + PATH.format(code=code)
