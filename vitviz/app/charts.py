"""Figures shared by every session of the server.

A page builds its figures with ``vitviz.render.plots`` on every run, and st.plotly_chart then copies each
one (``Figure.to_dict``) and writes it as JSON: with Streamlit's own work around them, most of the
server's CPU time per step of the tour (docs/benchmarks.md). The same arguments give the same
figure, so ``share_figures`` (installed once per server by ``presenter.theme_charts``) puts every figure
builder of ``vitviz.render.plots`` behind one cache, keyed by the arguments' content (an array by its
bytes) and the session's mode (presenter or screen, which ``plots.theme`` draws differently): a
class on one sample, a figure that depends only on the model (the position embeddings' similarity,
the training curves), or a student coming back to a page builds it once for the server. A shared
figure is themed for its mode and written as JSON once (``written``), and st.plotly_chart sends
that JSON instead of copying and writing the figure again (``Prepared``); what it sends is the same
text, byte for byte.

Shared figures are read-only, like every other cached object. A figure is shared only when asked
for in a session's run: a builder called inside another builder (which may change it), outside a
run (unit tests, the handout's command line) or inside ``private()`` (the sidebar's handout, which
resizes what it gets) builds anew, and builders that change a figure they are given
(``outline_patch``) are never shared. ``VITVIZ_SHARE_FIGURES=0`` leaves the server as it was.
"""

from __future__ import annotations

import collections
import contextlib
import copy
import functools
import hashlib
import inspect
import os
import threading
from collections.abc import Callable, Hashable, Iterator
from typing import Any

import _plotly_utils.basevalidators
import _plotly_utils.utils
import numpy as np
import plotly.io
import plotly.tools
import torch
from streamlit.runtime.scriptrunner_utils.script_run_context import get_script_run_ctx

from vitviz.app import shelf
from vitviz.render import plots

MAX_BYTES = 256 * 2**20  # what the shared figures may hold, their JSON counted twice (figure and text)
ENABLED = True  # False: every call builds anew and st.plotly_chart writes it (tests compare the two)

_local = threading.local()  # .building: a builder runs on this thread (its inner calls are its own)


def content_key(value: Any) -> Hashable | None:
    """A key equal for arguments that build the same figure, or None for an argument that has no
    such key (a callable, an object of another kind): that call is not shared."""
    if isinstance(value, torch.Tensor):
        value = value.detach().cpu()
        return ("tensor", str(value.dtype), content_key(value.float().numpy()))
    if isinstance(value, np.ndarray):
        array = np.ascontiguousarray(value)
        if array.dtype == object:
            return None
        return ("array", array.dtype.str, array.shape, hashlib.blake2b(array.view(np.uint8)).digest())
    if value is None or isinstance(value, (str, bytes, bool, int, float, np.generic)):
        return (type(value).__name__, value)
    if isinstance(value, (list, tuple)):
        keys = tuple(content_key(v) for v in value)
        return None if any(k is None for k in keys) else (type(value).__name__, keys)
    if isinstance(value, dict):
        keys = tuple((content_key(k), content_key(v)) for k, v in value.items())  # in order: legends follow it
        return None if any(k is None or v is None for k, v in keys) else ("dict", keys)
    return None


class Shelf(shelf.Shelf[plots.Figure]):
    """The shared figures (``shelf.Shelf``), each themed for the mode in its key's last entry and
    written as JSON when built; bounded by ``max_bytes`` of their JSON, counted twice (figure and text)."""

    def __init__(self, max_bytes: int = MAX_BYTES) -> None:
        super().__init__(max_bytes, size=lambda figure: 2 * len(written(figure)), prepare=self._theme)

    @staticmethod
    def _theme(key: Hashable, figure: plots.Figure) -> None:
        spec(figure, key[-1])

    @property
    def figures(self) -> collections.OrderedDict[Hashable, plots.Figure]:
        return self.values


SHELF = Shelf()


def spec(figure: plots.Figure, presenter: bool) -> str:
    """The JSON st.plotly_chart sends for a shared figure themed for the mode."""
    plots.theme(figure, presenter)
    return written(figure)


def written(figure: plots.Figure) -> str:
    """The JSON of a shared figure as themed now, written once per mode with the calls Streamlit
    makes (``to_dict``, then ``plotly.io.to_json``). A figure can be themed for the other mode
    after it was shared (one kept in an st.cache_resource too, which ``presenter.theme_charts`` themes for
    each session): each mode has its own text."""
    mode = getattr(figure, "_vitviz_theme", (None,))[0]
    texts = figure.__dict__.setdefault("_vitviz_specs", {})
    if mode not in texts:
        texts[mode] = _to_json(as_dict(figure), validate=False)
    return texts[mode]


def as_dict(figure: plots.Figure) -> dict:
    """``figure.to_dict()`` (what st.plotly_chart writes as JSON: arrays as plotly.js typed
    arrays) without its deep copy of every list and of the template: containers are copied, values
    shared, and the app's template (``plots.TEMPLATE_JSON``, in every figure) converted once. A
    figure with frames takes plotly's own way."""
    if figure._frame_objs:
        return figure.to_dict()
    layout = {
        key: _TEMPLATE if value is plots.TEMPLATE_JSON else _typed_value(value, key)
        for key, value in figure._layout.items()
    }
    return {"data": [_typed(trace) for trace in figure._data], "layout": layout}


def _typed(value: Any) -> Any:
    """A copy of plotly JSON with every array a dictionary value holds as a typed array spec, as
    plotly's ``convert_to_base64`` writes it (arrays that sit directly in a list stay as they are)."""
    if isinstance(value, dict):
        return {k: _typed_value(v, k) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_typed(v) for v in value]
    return value


def _typed_value(value: Any, key: str) -> Any:
    if isinstance(value, (str, int, float, bool)) or value is None:
        return value
    if _skipped_key(key):
        return copy.deepcopy(value)
    if _homogeneous(value):
        return _typed_array(value)
    return _typed(value)


_skipped_key = _plotly_utils.utils.is_skipped_key
_homogeneous = _plotly_utils.basevalidators.is_homogeneous_array
_typed_array = _plotly_utils.utils.to_typed_array_spec
_TEMPLATE = _typed(plots.TEMPLATE_JSON)  # the template as to_dict writes it, once


def shared(build: Callable[..., plots.Figure], presenting: Callable[[], bool]) -> Callable[..., plots.Figure]:
    """``build`` behind the shelf: a call from a page with arguments that have a content key gets
    the shared figure for them and the mode of the session asking (``presenting()``)."""

    @functools.wraps(build)
    def wrapper(*args: Any, **kwargs: Any) -> plots.Figure:
        if not ENABLED or getattr(_local, "building", False) or get_script_run_ctx() is None:
            return build(*args, **kwargs)  # off, inside a builder, or outside a session's run
        key = content_key((args, kwargs))
        if key is None:
            return build(*args, **kwargs)

        def make() -> plots.Figure:
            _local.building = True
            try:
                return build(*args, **kwargs)
            finally:
                _local.building = False

        return SHELF.get((build.__name__, key, bool(presenting())), make)

    wrapper.vitviz_shared = True
    return wrapper


@contextlib.contextmanager
def private() -> Iterator[None]:
    """Figures built inside are the caller's own, never shared: for a caller that changes the
    figures it gets (the handout sizes, retitles and themes every figure it writes)."""
    before = getattr(_local, "building", False)
    _local.building = True
    try:
        yield
    finally:
        _local.building = before


def builders() -> list[str]:
    """The figure builders of vitviz.render.plots: public functions that return a figure and take none
    (``theme`` and ``outline_patch`` change the figure they are given)."""
    names = []
    for name, function in vars(plots).items():
        if name.startswith("_") or not inspect.isfunction(function) or function.__module__ != plots.__name__:
            continue
        signature = inspect.signature(function)
        takes_figure = any("Figure" in str(p.annotation) for p in signature.parameters.values())
        if str(signature.return_annotation) in ("go.Figure", "Figure") and not takes_figure:
            names.append(name)
    return names


class Prepared(dict):
    """What st.plotly_chart gets for a shared figure in place of its ``to_dict`` copy: the layout's
    width and height (Streamlit sizes the chart by them) and the JSON already written."""

    def __init__(self, figure: plots.Figure) -> None:
        layout = figure._layout  # the figure's own JSON (plots.theme writes to it the same way)
        super().__init__(layout={k: layout[k] for k in ("width", "height") if layout.get(k) is not None})
        self.spec = written(figure)


_return_figure = plotly.tools.return_figure_from_figure_or_data
_to_json = plotly.io.to_json


def _return_figure_fast(figure_or_data: Any, validate_figure: bool) -> Any:
    if ENABLED and "_vitviz_specs" in getattr(figure_or_data, "__dict__", {}):  # a shared figure
        return Prepared(figure_or_data)
    if ENABLED and isinstance(figure_or_data, plots.Figure):  # to_dict's dictionary, copied faster
        return as_dict(figure_or_data)
    return _return_figure(figure_or_data, validate_figure)


def _to_json_fast(fig: Any, *args: Any, **kwargs: Any) -> str:
    if isinstance(fig, Prepared):
        return fig.spec
    return _to_json(fig, *args, **kwargs)


def share_figures(presenting: Callable[[], bool]) -> None:
    """Put vitviz.render.plots' builders behind the shelf and let st.plotly_chart send a shared figure's
    JSON as it is; once per server (a second call does nothing).

    Args:
        presenting: whether the session that runs on the calling thread is in presenter mode.
    """
    if getattr(plotly.tools.return_figure_from_figure_or_data, "vitviz_fast", False):
        return
    if os.environ.get("VITVIZ_SHARE_FIGURES", "1") == "0":  # the bench's "before", tests' reference
        return
    for name in builders():
        if not getattr(getattr(plots, name), "vitviz_shared", False):
            setattr(plots, name, shared(getattr(plots, name), presenting))
    _return_figure_fast.vitviz_fast = True
    plotly.tools.return_figure_from_figure_or_data = _return_figure_fast
    plotly.io.to_json = _to_json_fast
