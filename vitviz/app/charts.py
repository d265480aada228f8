"""Figures on the page: every figure a page draws goes through ``draw``, which gives it this
session's look and sends it; and figures shared by every session of the server.

``draw(where, figure, key=...)`` themes a copy of the figure's JSON for the session's mode
(``plots.themed``: the screen, or presenter mode's larger text and figures) and sends its text to
vitviz's chart element (``static/chart.js``, an ``st.components.v2`` script in the page), which
draws it with plotly.js once (``vitviz.app.chart_script``): Streamlit's ``st.plotly_chart`` drew
every figure three times in the browser, and a step's figures are most of what a step costs the
browser (docs/benchmarks.md). The figure itself is never changed, so a figure cached for every
session can be drawn in both modes at once. No Streamlit theme goes over the figure's own.

A page builds its figures with ``vitviz.render.plots`` on every run, and writing each one as JSON is,
with Streamlit's own work around it, most of the server's CPU time per step of the tour
(docs/benchmarks.md). The same arguments give the same figure, so ``share_figures`` (once per
server) puts every figure builder of ``vitviz.render.plots`` behind one cache, keyed by the arguments'
content (an array by its bytes) and the session's mode: a class on one sample, a figure that
depends only on the model (the position embeddings' similarity, the training curves), or a
student coming back to a page builds it once for the server. A shared figure is themed for its
mode and written as JSON once, and ``draw`` sends that text; what it sends is the same text, byte
for byte, as for a figure built anew.

Shared figures are read-only, like every other cached object. A figure is shared only when asked
for in a session's run (or by the work ahead for one, ``ahead_mode``): a builder called inside
another builder (which may change it), outside a run (unit tests, the handout's command line) or
inside ``private()`` (the sidebar's handout, which resizes what it gets) builds anew, and builders
that change a figure they are given (``outline_patch``) are never shared. ``VITVIZ_SHARE_FIGURES=0``
leaves the server as it was.
"""

from __future__ import annotations

import collections
import contextlib
import functools
import hashlib
import inspect
import os
import threading
import weakref
from collections.abc import Callable, Hashable, Iterator
from typing import Any

import numpy as np
import streamlit as st
import torch

from vitviz.app import chart_script, internals, presenter, shelf
from vitviz.app.text import lang
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
        super().__init__(max_bytes, size=lambda figure: 2 * len(written(figure)[1]), prepare=self._write)

    @staticmethod
    def _write(key: Hashable, figure: plots.Figure) -> None:
        write(figure, key[-1])

    @property
    def figures(self) -> collections.OrderedDict[Hashable, plots.Figure]:
        return self.values


SHELF = Shelf()


# A shared figure's JSON, themed for one mode and written once: id(figure) -> (presenter mode,
# the text). An entry goes with its figure (weakref.finalize),
# before another object can take its id.
_WRITTEN: dict[int, tuple[bool, str]] = {}
_WRITING = threading.Lock()


def themed(figure: plots.Figure, present: bool) -> dict:
    """The figure's plotly JSON in the look of the mode (``plots.themed``), the figure left as it is."""
    return plots.themed(internals.figure_dict(figure, template=False), present)


def write(figure: plots.Figure, present: bool) -> str:
    """Theme a shared figure for the mode and write its JSON, once: ``draw`` sends that text."""
    entry = (present, internals.write(themed(figure, present)))
    with _WRITING:
        if id(figure) not in _WRITTEN:
            weakref.finalize(figure, _WRITTEN.pop, id(figure), None)
        _WRITTEN[id(figure)] = entry
    return entry[1]


def written(figure: plots.Figure) -> tuple[bool, str] | None:
    """(presenter mode, JSON text) of a shared figure as ``write`` wrote it, or None."""
    return _WRITTEN.get(id(figure))


def draw(
    where: Any,
    figure: plots.Figure,
    *,
    key: str,
    width: str | int = "stretch",
    height: str | int = "content",
    on_select: Callable[[], None] | str | None = None,
) -> Any:
    """Draw a figure in ``where`` (``st``, a column or a container) in this session's look (larger
    in presenter mode), as vitviz's chart element (``static/chart.js``), which plotly.js draws
    once. A shared figure written for this mode is sent as written.

    Args:
        key: the element's key: Streamlit gives its box the class ``st-key-<key>``.
        width, height: as Streamlit's elements take them; ``height="stretch"``: as tall as the
            box (a slide's figures).
        on_select: called before the next run when the user clicks a point (or "rerun": only the
            run); the click is ``st.session_state[key]["selection"]`` in that run,
            ``{"points": [...]}``, which ``vitviz.render.clicks`` reads.

    Returns:
        The element's result (its ``selection`` in the run a click started, else None).
    """
    mode = presenter.presenting()
    found = written(figure)
    text = found[1] if found is not None and found[0] == mode else internals.write(themed(figure, mode))
    script = chart_script.script_for(trace.type for trace in figure.data)
    stretch, select = height == "stretch", on_select is not None
    data = chart_script.element_data(text, stretch, select, script, key, lang(), bool(mode))
    callbacks = {}
    if on_select is not None:
        callbacks["on_selection_change"] = _rerun if on_select == "rerun" else on_select
    mount = chart_script.chart_element()
    if where is st:
        return mount(key=key, data=data, width=width, height=height, **callbacks)
    with where:
        return mount(key=key, data=data, width=width, height=height, **callbacks)


def _rerun() -> None:
    """A click's callback that only lets its run happen (the page reads the click itself)."""


def shared(build: Callable[..., plots.Figure], presenting: Callable[[], bool]) -> Callable[..., plots.Figure]:
    """``build`` behind the shelf: a call from a page with arguments that have a content key gets
    the shared figure for them and the mode of the session asking (``presenting()``)."""

    @functools.wraps(build)
    def wrapper(*args: Any, **kwargs: Any) -> plots.Figure:
        ahead = getattr(_local, "mode", None)  # the work ahead's, for a session in this mode
        if not ENABLED or getattr(_local, "building", False) or (ahead is None and not internals.in_a_run()):
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

        return SHELF.get((build.__name__, key, bool(presenting()) if ahead is None else ahead), make)

    wrapper.vitviz_shared = True
    return wrapper


@contextlib.contextmanager
def ahead_mode(present: bool) -> Iterator[None]:
    """Figures built inside, on this thread, are shared as a session's run in that mode would
    share them: for the work ahead (``vitviz.app.described``), which has no run of its own."""
    before = getattr(_local, "mode", None)
    _local.mode = bool(present)
    try:
        yield
    finally:
        _local.mode = before


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


@functools.cache
def builders() -> tuple[str, ...]:
    """The figure builders of vitviz.render.plots: public functions that return a figure and take none
    (``theme`` and ``outline_patch`` change the figure they are given). Read once: every run asks
    (``share_figures``), and reading the signatures cost a following class's runs 5% of their time."""
    names = []
    for name, function in vars(plots).items():
        if name.startswith("_") or not inspect.isfunction(function) or function.__module__ != plots.__name__:
            continue
        signature = inspect.signature(function)
        takes_figure = any("Figure" in str(p.annotation) for p in signature.parameters.values())
        if str(signature.return_annotation) in ("go.Figure", "Figure") and not takes_figure:
            names.append(name)
    return tuple(names)


def share_figures(presenting: Callable[[], bool] = presenter.presenting) -> None:
    """Put vitviz.render.plots' builders behind the shelf, once per server (a second call does nothing).

    Args:
        presenting: whether the session that runs on the calling thread is in presenter mode.
    """
    internals.install()
    if os.environ.get("VITVIZ_SHARE_FIGURES", "1") == "0":  # the bench's "before", tests' reference
        return
    for name in builders():
        if not getattr(getattr(plots, name), "vitviz_shared", False):
            setattr(plots, name, shared(getattr(plots, name), presenting))
