"""The scripts of vitviz's chart element (``vitviz.app.charts.draw``): its drawing code
(``static/chart.js``), vitviz's bundle of plotly.js (in ``static/``, for every figure whose trace
types it has) and plotly.js as the installed plotly package ships it (for the others), all served
by the app (``ChartScripts``); the cartesian bundle, the chart element's drawing and the chunks of
Streamlit's frontend that the pages' elements need are loaded by a new tab while its first run is
under way (``EarlyCharts``).

Streamlit's own chart element drew every figure three times (once, again when its theme effect
copied the figure, and again when it set the width); vitviz's draws each once, with this script,
so a step's figures cost the browser a third of Plotly's drawing (docs/benchmarks.md).
"""

from __future__ import annotations

import asyncio
import functools
import gzip
import hashlib
import importlib.metadata
import importlib.util
import json
import re
import zlib
from collections.abc import Callable, Iterable, MutableMapping
from pathlib import Path
from typing import Any

import streamlit as st

from vitviz.app import internals, margins, web
from vitviz.app.assets import (
    FIRST_VIEW_ELEMENTS,
    LATER_ELEMENTS,
    App,
    Receive,
    Scope,
    Send,
    answer,
    app_path,
    compress,
    frontend_chunks,
    streamlit_static_dir,
)


def plotly_js() -> Path:
    """plotly.js as the installed plotly package ships it: the version that writes the figures'
    JSON (typed arrays and all) is the one that draws them. Found without importing plotly."""
    spec = importlib.util.find_spec("plotly")
    if spec is None or spec.origin is None:
        raise ModuleNotFoundError("plotly is not installed")
    return Path(spec.origin).parent / "package_data" / "plotly.min.js"


@functools.cache
def plotly_script_path() -> str:
    """Where the app serves plotly.js, relative to its root (``ChartScripts``): named by the
    installed plotly's version, so a browser may keep it for a year and still never draws with an
    old one."""
    version = re.sub(r"[^A-Za-z0-9.]", "-", importlib.metadata.version("plotly"))
    return f"vitviz/plotly-{version}.min.js"


# vitviz's own bundle of plotly.js (static/, with its licence), built from npm's plotly.js by
# tools/plotly_bundle with the trace types vitviz's figures use, which its first line names: a new
# tab evaluated plotly.js's own cartesian bundle in 0.5-0.7 s of its main thread, and this one in
# 0.17-0.25 s, drawing every figure to the same SVG (docs/benchmarks.md). A figure with another
# type (the test set's map: scattergl) is drawn with the installed package's full plotly.js.
def cartesian_js() -> Path:
    """vitviz's bundle of plotly.js (``CARTESIAN_TRACES``), as it ships in ``static/``."""
    return web.STATIC / "plotly-cartesian.min.js"


def _bundle_head() -> str:
    """The bundle's first line, which names its plotly.js version and trace types."""
    with cartesian_js().open("rb") as file:
        return file.read(400).decode("utf-8", "replace")


CARTESIAN_TRACES = frozenset(re.search(r"traces: ([a-z0-9 ]+);", _bundle_head())[1].split())


@functools.cache
def cartesian_script_path() -> str:
    """Where the app serves ``cartesian_js()``: named by its plotly.js version (its first line says
    it) and its content's hash, so a browser that keeps it for a year never draws with another build."""
    found = re.search(r"\bv(\d+\.\d+\.\d+)\b", _bundle_head())
    if found is None:
        raise ValueError(f"{cartesian_js()} does not say its version in its first lines")
    digest = hashlib.md5(cartesian_js().read_bytes()).hexdigest()[:12]
    return f"vitviz/plotly-cartesian-{found.group(1)}-{digest}.min.js"


def script_for(trace_types: Iterable[str]) -> str:
    """The plotly.js a figure with these trace types is drawn with: the cartesian bundle where it
    has them all, else the installed package's full plotly.js."""
    return cartesian_script_path() if set(trace_types) <= CARTESIAN_TRACES else plotly_script_path()


def chart_js() -> Path:
    """The chart element's drawing code (a module): ``static/chart.js``."""
    return web.STATIC / "chart.js"


@functools.cache
def chart_script_path() -> str:
    """Where the app serves ``chart_js()``, relative to its root: named by its content's hash."""
    return f"vitviz/chart-{hashlib.md5(chart_js().read_bytes()).hexdigest()[:12]}.js"


def element_js() -> str:
    """The chart element's own script: it imports ``chart_script_path()`` (once per page: the
    browser keeps the module) and hands each figure to it. Streamlit sends an element's script
    with every element, to every student: a line, not the drawing code."""
    return web.page_text("chart_element.js", module=json.dumps(chart_script_path()))


def element_data(
    text: str, stretch: bool, select: bool, script: str, key: str, language: str, presenting: bool
) -> bytes:
    """What the chart element gets: one line of JSON (``script``: the path of the plotly.js that
    draws it, ````script_for````; ``stretch``, ``select``; ``key``: the element's key, and ``lang``:
    the session's ``language``, under which the browser remembers the margins plotly.js gave the
    figure: another language's labels need other margins; ``start``: the margins to start from
    where the browser remembers none, measured for the key, language and mode (``presenting``) by
    ``vitviz.app.margins.measured``, when there are any), then the figure's JSON text as it is.
    Bytes, not a dictionary: Streamlit writes a dictionary as JSON again (every quote of the figure
    escaped) and parses and writes it once more to name the element, which cost a class's server
    more than the figure itself (docs/benchmarks.md)."""
    head = {"script": script, "stretch": stretch, "select": select, "key": key, "lang": language}
    start = margins.measured(key, language, presenting)
    if start:
        head["start"] = start
    return json.dumps(head).encode() + b"\n" + text.encode()


def read_element_data(data: bytes) -> dict:
    """``element_data`` read back: its head's entries and the figure's JSON text as "spec"."""
    head, text = data.split(b"\n", 1)
    return {**json.loads(head), "spec": text.decode()}


@functools.cache
def chart_element() -> Callable[..., Any]:
    """vitviz's chart element (``st.components.v2``: a script in the page, no frame), registered
    once: ``vitviz.app.charts.draw`` mounts it, and so does the first view (``vitviz.app.first_view``)
    before torch has loaded, with the same figures."""

    return st.components.v2.component(
        "vitviz_chart",
        html='<div class="vitviz-chart"></div>',
        js=element_js(),
        isolate_styles=False,  # plotly.js styles its hover labels and modebar from the page's head
    )


class ChartScripts:
    """ASGI middleware: GETs of ``<base>/`` + ``plotly_script_path()``, ``cartesian_script_path()``
    and ``chart_script_path()`` are answered with ``plotly_js()``, ``cartesian_js()`` and
    ``chart_js()``, gzipped once (kept in ``store`` like ``CompressedAssets``' files) for a browser
    that accepts gzip, else as they are. vitviz's chart element (``vitviz.app.charts.draw``) loads
    each it needs once per page. Every other request passes untouched.

    Args:
        app: the ASGI app behind (Streamlit's).
        files: what each path serves (default: the two above).
        base_url: ``server.baseUrlPath`` (default: read from Streamlit's config per request).
        store: a folder that keeps the compressed scripts for later servers (None: memory only).
    """

    def __init__(
        self,
        app: App,
        files: dict[str, Path] | None = None,
        base_url: str | None = None,
        store: Path | None = None,
    ) -> None:
        self.app, self.base_url, self.store = app, base_url, store
        self.files = files or {
            plotly_script_path(): plotly_js(),
            cartesian_script_path(): cartesian_js(),
            chart_script_path(): chart_js(),
        }
        self._answers: dict[tuple[Path, bool], tuple[bytes, str]] = {}  # (file, gzipped) -> (body, etag)
        self._lock = asyncio.Lock()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        file = self.files.get(app_path(scope, self.base_url) or "")
        if file is None:
            await self.app(scope, receive, send)
            return
        headers = {name.lower(): value for name, value in scope.get("headers", ())}
        gzipped = b"gzip" in headers.get(b"accept-encoding", b"")
        if (file, gzipped) not in self._answers:
            async with self._lock:  # a class asking at once: one compression, off the event loop
                if (file, gzipped) not in self._answers:
                    self._answers[file, gzipped] = await asyncio.to_thread(self._answer, file, gzipped)
        body, etag = self._answers[file, gzipped]
        await answer(send, body, etag, "text/javascript", gzipped)

    def _answer(self, file: Path, gzipped: bool) -> tuple[bytes, str]:
        if gzipped:
            return compress(file, 6, self.store)
        data = file.read_bytes()
        return data, f'"{hashlib.md5(data).hexdigest()}"'


def early_script() -> bytes:
    """The page's early loader (``static/early_charts.js``), as a script tag. It fetches plotly.js's
    cartesian bundle at once and evaluates it as soon as the page's first run has started: the
    browser then waits for the server; evaluating it earlier held up the websocket and the run's
    request (measured: the wait moved, the page was no sooner ready). As that run starts, it also
    fetches the chart element's drawing and the first view's chunks of Streamlit's frontend, and
    once the run has ended, the chunks of the sidebar and the steps: fetched at once as the page
    loads, all of them held up the page's own requests and its websocket by 0.6 s
    (docs/benchmarks.md)."""
    first: list[str] = []
    later: list[str] = []
    if internals.ACTIVE:  # the chunks' names are the frontend build's own: fetched early only on the Streamlit tested
        static = streamlit_static_dir()
        first = frontend_chunks(static, FIRST_VIEW_ELEMENTS)
        later = frontend_chunks(static, LATER_ELEMENTS, leaving_out=first)
    first = [f"static/js/{name}" for name in first] + [chart_script_path()]  # the chart element's drawing
    later = [f"static/js/{name}" for name in later]
    script = web.page_text(
        "early_charts.js",
        script=json.dumps(cartesian_script_path()),
        first_chunks=json.dumps(first),
        later_chunks=json.dumps(later),
    )
    return f"<script>{script}</script>".encode()


class EarlyCharts:
    """ASGI middleware: the app's page (Streamlit's index.html: a GET answered with HTML, plain or
    gzipped) gets ``early_script`` before its ``</head>``, so a new browser tab evaluates plotly.js
    while the server runs the script, not after it. Every other answer passes untouched, as does
    the page when it comes in another encoding."""

    def __init__(self, app: App) -> None:
        self.app = app
        self.tags = early_script()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if not self.tags or scope.get("type") != "http" or scope.get("method") != "GET":
            await self.app(scope, receive, send)
            return
        start: MutableMapping[str, Any] | None = None
        gzipped = False
        parts: list[bytes] = []

        async def edited(message: MutableMapping[str, Any]) -> None:
            nonlocal start, gzipped
            if message["type"] == "http.response.start":
                headers = {name.lower(): value for name, value in message.get("headers", ())}
                html = headers.get(b"content-type", b"").startswith(b"text/html")
                encoding = headers.get(b"content-encoding", b"identity")
                if html and encoding in (b"identity", b"gzip"):
                    start, gzipped = message, encoding == b"gzip"  # held until the whole page is here
                    return
            elif message["type"] == "http.response.body" and start is not None:
                parts.append(message.get("body", b""))
                if message.get("more_body"):
                    return
                body = self._with_tags(b"".join(parts), gzipped)
                headers = [(k, v) for k, v in start.get("headers", ()) if k.lower() != b"content-length"]
                await send({**start, "headers": [*headers, (b"content-length", str(len(body)).encode())]})
                await send({"type": "http.response.body", "body": body})
                return
            await send(message)

        await self.app(scope, receive, edited)

    def _with_tags(self, body: bytes, gzipped: bool) -> bytes:
        """The page with the tags before its ``</head>``, encoded as it came (8 KB: gzip is cheap)."""
        try:
            page = gzip.decompress(body) if gzipped else body
        except (EOFError, gzip.BadGzipFile, zlib.error):
            return body  # not what its header says: passed on as it came
        page = page.replace(b"</head>", self.tags + b"</head>", 1)
        return gzip.compress(page, mtime=0) if gzipped else page
