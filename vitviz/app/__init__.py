"""The Streamlit glue: the only part of vitviz that imports Streamlit (caches, the session's
choices and the URL, navigation, the sidebar, widgets). ``import vitviz`` never loads it."""

import asyncio
import contextlib
import gc
import importlib
import threading
import time
from collections.abc import AsyncIterator
from types import ModuleType

from streamlit.logger import get_logger

log = get_logger(__name__)  # Streamlit's console format and level (--logger.level)

_IMPORTING = threading.Lock()
# Imported by Streamlit, Plotly and the pages only when first used: the first sessions of a cold
# server, each in a thread of its own, would import them at the same moment, and one of them got
# a partially initialised pandas ("module 'pandas' has no attribute 'Series'"; the classroom
# benchmark, 3 students at once).
_LAZY = ("pandas", "plotly.graph_objects", "plotly.io", "pyarrow")


_frozen = False


def load_ui() -> ModuleType:
    """``vitviz.app.ui`` and the libraries it needs, imported by one session at a time.

    After the first import the garbage collector is told to leave everything that exists then
    (torch, Plotly's validators, pandas: objects that live as long as the server) out of its
    collections (``gc.freeze``), so each full collection only walks what the sessions made.
    """
    global _frozen
    with _IMPORTING:
        for name in _LAZY:
            importlib.import_module(name)
        ui = importlib.import_module("vitviz.app.ui")
        if not _frozen:
            gc.freeze()
            _frozen = True
        return ui


@contextlib.asynccontextmanager
async def warm_up(app: object) -> AsyncIterator[None]:
    """The server's startup, before it answers anyone (app.py's ``st.App`` lifespan): the
    libraries, the default model and its precision, so that no visitor waits for them; then, while
    the first browsers load, the default model's test split and its shipped predictions (the lab).

    ``streamlit run app.py`` runs sessions only when a browser connects, so without this the first
    visitor of a fresh server waited for torch to load (a fresh server's first lab visit: 4.6 s
    before, docs/benchmarks.md). Whatever fails here is logged and left for the page that needs it
    to explain in the user's language."""
    await asyncio.to_thread(_warm_model)
    threading.Thread(target=_warm_test_split, name="vitviz-warm-up", daemon=True).start()
    yield


def _warm_model() -> None:
    started = time.perf_counter()
    try:
        load_ui().warm_model()
    except Exception:  # the pages say what went wrong, in the user's language
        log.exception("loading the default model at startup failed")
    log.info(
        "ready for visitors: the app's libraries, the default model and its precision in %.1f s",
        time.perf_counter() - started,
    )


def _warm_test_split() -> None:
    started = time.perf_counter()
    try:
        load_ui().warm_test_split()
    except Exception:
        log.exception("loading the default test split at startup failed")
    log.info("the default model's test split loaded in %.1f s", time.perf_counter() - started)
