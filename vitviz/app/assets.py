"""Streamlit's frontend, compressed once: what each new browser in a classroom downloads.

Streamlit 1.67 serves its frontend's scripts and styles uncompressed on purpose: compressing them
on every request would cost the server CPU for each visitor. A first view of vitviz fetches about
9.5 MB of them (Plotly's chunk alone is 4.7 MB), and in a classroom every student's browser
fetches them over the same Wi-Fi. ``CompressedAssets`` gzips each file the first time a browser
asks for it, keeps the result (the files are content-hashed and never change while the server
runs) and answers every later request from memory: about a third of the bytes (the overview's
first view: 9.65 -> 3.09 MB, docs/benchmarks.md), for one compression per file per server.
With a ``store`` (the app's: ``default_store()``), the compressed files are also kept on disk,
named by their content's hash, so a server started later reads them instead of compressing again:
the frontend's first view cost a fresh server some 0.4 CPU-s of gzip (docs/benchmarks.md).
"""

from __future__ import annotations

import asyncio
import gzip
import hashlib
import logging
import mimetypes
import os
import re
import tempfile
import zlib
from collections.abc import Awaitable, Callable, Iterable, MutableMapping, Sequence
from pathlib import Path
from typing import Any

Scope = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[MutableMapping[str, Any]]]
Send = Callable[[MutableMapping[str, Any]], Awaitable[None]]
App = Callable[[Scope, Receive, Send], Awaitable[None]]

COMPRESSED_SUFFIXES = (".js", ".css")  # fonts (woff2) and pictures are compressed already
# Streamlit's own header for its content-hashed bundles (web/server/starlette/starlette_static_routes.py)
CACHE_CONTROL = b"public, immutable, max-age=31536000"


log = logging.getLogger(__name__)


def default_store() -> Path:
    """Where the app keeps the compressed frontend between servers: in vitviz's cache folder,
    ``vitviz.models.data.cache_dir()`` (VITVIZ_CACHE, else ~/.cache/vitviz), spelled out here because
    app.py asks before the server answers, and ``vitviz.models.data`` imports torch (seconds; tested)."""
    env = os.environ.get("VITVIZ_CACHE")
    return (Path(env).expanduser() if env else Path.home() / ".cache" / "vitviz") / "frontend-gzip"


def streamlit_static_dir() -> Path:
    """Where the installed Streamlit keeps its frontend build."""
    import streamlit

    return Path(streamlit.__file__).parent / "static"


class CompressedAssets:
    """ASGI middleware: a plain GET of a script or style sheet under ``<base>/static/``, from a
    browser that accepts gzip, is answered with the file gzipped once and kept in memory.

    Everything else goes to Streamlit untouched: other paths and methods, range and conditional
    requests, other file types, paths that leave the static folder, files that are not there.

    Args:
        app: the ASGI app behind (Streamlit's).
        static_dir: the frontend build (default: the installed Streamlit's).
        base_url: ``server.baseUrlPath`` (default: read from Streamlit's config per request).
        level: gzip's compression level.
        store: a folder that keeps each compressed file for later servers (None: memory only).
    """

    def __init__(
        self,
        app: App,
        static_dir: Path | None = None,
        base_url: str | None = None,
        level: int = 6,
        store: Path | None = None,
    ) -> None:
        self.app = app
        self.store = store
        self.static_dir = (static_dir or streamlit_static_dir()).resolve()
        self.base_url = base_url
        self.level = level
        self.compressed: dict[Path, tuple[bytes, str]] = {}  # file -> (gzip bytes, etag)
        self._locks: dict[Path, asyncio.Lock] = {}  # 30 students asking at once: one compression

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        file = self._asset(scope)
        if file is None:
            await self.app(scope, receive, send)
            return
        if file not in self.compressed:
            async with self._locks.setdefault(file, asyncio.Lock()):
                if file not in self.compressed:  # 0.1-0.2 s for the largest, off the event loop
                    self.compressed[file] = await asyncio.to_thread(self._compress, file)
        body, etag = self.compressed[file]
        await answer(send, body, etag, mimetypes.guess_type(file.name)[0] or "application/octet-stream", gzipped=True)

    def _asset(self, scope: Scope) -> Path | None:
        """The static file a request asks for, when this middleware answers it; else None."""
        headers = {name.lower(): value for name, value in scope.get("headers", ())}
        if b"gzip" not in headers.get(b"accept-encoding", b"") or any(
            name in headers for name in (b"range", b"if-none-match", b"if-modified-since")
        ):
            return None
        path = app_path(scope, self.base_url)
        if path is None or not path.startswith("static/") or not path.endswith(COMPRESSED_SUFFIXES):
            return None
        file = (self.static_dir / path).resolve()
        if not file.is_relative_to(self.static_dir) or not file.is_file():
            return None
        return file

    def _compress(self, file: Path) -> tuple[bytes, str]:
        return compress(file, self.level, self.store)


def app_path(scope: Scope, base_url: str | None = None) -> str | None:
    """The path a plain GET asks for inside the app (``server.baseUrlPath``: ``base_url``, default
    read from Streamlit's config), without its leading "/": "static/js/index.abc.js"; None for
    anything else (another method, a websocket, a path outside the app)."""
    if scope.get("type") != "http" or scope.get("method") != "GET":
        return None
    path = scope.get("path", "")
    root = scope.get("root_path", "")
    if root and path.startswith(root):
        path = path[len(root) :]
    if base_url is None:
        import streamlit as st

        base_url = st.get_option("server.baseUrlPath") or ""
    base = base_url.strip("/")
    prefix = f"/{base}/" if base else "/"
    return path[len(prefix) :] if path.startswith(prefix) else None


async def answer(send: Send, body: bytes, etag: str, kind: str, gzipped: bool) -> None:
    """Answer a GET with a file's ``body`` (gzipped or not), for a browser to keep: the file is
    named by its content or version (``CACHE_CONTROL``)."""
    headers = [
        (b"content-type", kind.encode() + (b"; charset=utf-8" if kind.startswith("text/") else b"")),
        (b"content-length", str(len(body)).encode()),
        (b"cache-control", CACHE_CONTROL),
        (b"etag", etag.encode()),
        (b"vary", b"Accept-Encoding"),
    ]
    if gzipped:
        headers.append((b"content-encoding", b"gzip"))
    await send({"type": "http.response.start", "status": 200, "headers": headers})
    await send({"type": "http.response.body", "body": body})


def compress(file: Path, level: int, store: Path | None) -> tuple[bytes, str]:
    """(the file gzipped, its ETag): read from ``store`` when a server kept it there, else
    compressed and kept there."""
    data = file.read_bytes()
    digest = hashlib.md5(data).hexdigest()
    kept = store / f"{digest}-{level}.gz" if store is not None else None
    body = _read_kept(kept, data) if kept is not None else None
    if body is None:
        body = gzip.compress(data, compresslevel=level, mtime=0)
        if kept is not None:
            _keep(kept, body)
    return body, f'"{digest}-gzip"'


def _read_kept(kept: Path, data: bytes) -> bytes | None:
    """A compressed file a server kept before, when it is there and unpacks to ``data``
    (checked: a truncated or foreign file is compressed afresh); else None."""
    try:
        body = kept.read_bytes()
        return body if gzip.decompress(body) == data else None
    except (OSError, EOFError, gzip.BadGzipFile, zlib.error):
        return None


def _keep(kept: Path, body: bytes) -> None:
    """Write a compressed file for later servers, whole or not at all (a temporary file renamed:
    two servers starting at once never read half of one); a read-only disk only logs."""
    try:
        kept.parent.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile(dir=kept.parent, suffix=".tmp", delete=False) as out:
            out.write(body)
        os.replace(out.name, kept)
    except OSError as err:
        log.info("the compressed frontend is not kept on disk (%s): each server compresses it once", err)


# The elements of Streamlit's frontend that vitviz's pages draw, each in a chunk of its own that
# the frontend fetches only when a run first sends one. The first view's (an element of st.html, a
# button, markdown with HTML; its table is Markdown) were asked for when its run had drawn, while the startup
# loaded the libraries: each small file then waited 0.3-0.6 s for the busy server, and the figures
# for them (docs/benchmarks.md). The later ones are the sidebar's widgets, the steps' and the lab's.
FIRST_VIEW_ELEMENTS = ("BidiComponent", "Html", "Button", "rehype-raw")
LATER_ELEMENTS = ("Radio", "Selectbox", "TextInput", "FileUploader", "DownloadButton", "Checkbox") + (
    "Metric",
    "Slider",
    "rehype-katex",
    "NumberInput",
    "PageLink",
    "ImageList",
)
_IMPORT = re.compile(rb'(?:from|import)"\./([^"/]+\.js)"')  # a static import in a minified chunk
IMPORTS_BYTES = 32_768  # how much of a chunk is read for its imports (the entry's end at 10 kB; one missed loads late)


def frontend_chunks(static: Path, elements: Sequence[str], leaving_out: Iterable[str] = ()) -> list[str]:
    """The chunks of Streamlit's frontend (file names in ``static``/static/js) that ``elements``
    need, with every chunk they import, in the order the elements come, less those the page's
    entry script imports (the page loads them anyway) and ``leaving_out``. An element that the
    installed Streamlit has no chunk for is left out."""
    js = static / "static" / "js"
    names = sorted(path.name for path in js.glob("*.js"))
    entries = re.findall(rb'src="\./static/js/([^"/]+\.js)"', (static / "index.html").read_bytes())
    imports = _Imports(js)
    known = set(imports.closure([entry.decode() for entry in entries])) | set(leaving_out)
    chunks: list[str] = []
    for element in elements:
        own = [name for name in names if _is_chunk_of(name, element)]
        chunks += [name for name in imports.closure(own) if name not in known and name not in chunks]
    return chunks


def _is_chunk_of(name: str, element: str) -> bool:
    """Whether ``name`` is ``element``'s own chunk: the element's name, a dot, a hash, ".js"."""
    prefix = f"{element}."
    return name.startswith(prefix) and name.endswith(".js") and "." not in name[len(prefix) : -3]


class _Imports:
    """The static imports of the chunks in one folder, each file read once."""

    def __init__(self, js: Path) -> None:
        self.js = js
        self.read: dict[str, list[str]] = {}

    def of(self, name: str) -> list[str]:
        if name not in self.read:
            path = self.js / name
            with path.open("rb") as file:  # a chunk's imports open it: the bundler writes them first
                head = file.read(IMPORTS_BYTES)
            self.read[name] = [found.decode() for found in _IMPORT.findall(head)]
        return self.read[name]

    def closure(self, names: Sequence[str]) -> list[str]:
        """``names`` that exist and every chunk they import, transitively, in the order found."""
        found: list[str] = []
        waiting = list(names)
        while waiting:
            name = waiting.pop(0)
            if name not in found and (self.js / name).is_file():
                found.append(name)
                waiting += self.of(name)
        return found
