"""The Streamlit glue: the only part of vitviz that imports Streamlit (caches, the session's
choices and the URL, navigation, the sidebar, widgets). ``import vitviz`` never loads it."""

import gc
import importlib
import threading
from types import ModuleType

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
