"""Presenter mode, for a teacher at a projector: the sidebar hidden, the page's text larger (by
its root font size, so that everything is laid out again to fit: a CSS zoom cut the figures at the
column's and the window's edge), every figure larger (``plots.theme``), and the keys a clicker
sends (→ / PageDown, ← / PageUp) pressing Next / Previous; Escape leaves."""

from __future__ import annotations

import functools
import threading

import streamlit as st

from vitviz.app import charts, state, web
from vitviz.app.text import tr
from vitviz.render import plots

PRESENTER_REM = 1.25  # the root font size against Streamlit's 16 px
MARKER = "vitviz-present"  # an element on the page while presenting: the keys act only then


def presenter_mode() -> None:
    """Hide the sidebar, enlarge the page's text and bind the clicker's keys (static/presenter.css, .js)."""
    page = f'<div id="{MARKER}"></div>' + web.style("presenter.css", root_px=str(round(16 * PRESENTER_REM)))
    st.html(page + web.script("presenter.js", marker=MARKER), unsafe_allow_javascript=True)
    st.button(
        f"✕ {tr('present.leave')}",
        key="present_leave",
        on_click=state.set,
        kwargs={"present": False},
        help=tr("present.leave_help"),
    )


def presenting() -> bool:
    """Whether this session is in presenter mode."""
    return bool(state.get("present"))


def theme_charts() -> None:
    """Every figure a page hands to st.plotly_chart (``st.plotly_chart``, ``column.plotly_chart``)
    is drawn through ``plots.theme``, for this session's mode: the one place where presenter mode
    makes figures larger. Streamlit's own chart theme is off by default (``theme=None``): it would
    write the tick labels small and light grey over the figure's template. app.py calls this on
    every run; the hook goes in once, for the server."""
    from streamlit.delta_generator import DeltaGenerator

    charts.share_figures(presenting)  # figures built once for the server, sent as JSON written once
    draw = DeltaGenerator.plotly_chart
    if getattr(draw, "themed", False):
        return

    @functools.wraps(draw)
    def themed(self, figure_or_data, *args, theme=None, **kwargs):
        if not isinstance(figure_or_data, plots.Figure):
            return draw(self, figure_or_data, *args, theme=theme, **kwargs)
        # A cached figure is one object for every session: theming it for one session's mode and
        # serialising it happen under the figure's own lock, so another session in the other mode
        # cannot re-theme it in between (figures of one session never wait on each other's locks).
        lock = figure_or_data.__dict__.setdefault("_vitviz_lock", threading.Lock())
        with lock:
            plots.theme(figure_or_data, presenting())
            return draw(self, figure_or_data, *args, theme=theme, **kwargs)

    themed.themed = True
    DeltaGenerator.plotly_chart = themed
    st.plotly_chart = st._main.plotly_chart  # streamlit bound st.plotly_chart to the old method at its import
