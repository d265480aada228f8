"""Presenter mode, for a teacher at a projector: the sidebar hidden, the page's text larger (by
its root font size, so that everything is laid out again to fit: a CSS zoom cut the figures at the
column's and the window's edge), every figure larger (``charts.draw`` themes it for the mode), and
the keys a clicker sends (→ / PageDown, ← / PageUp) pressing Next / Previous; Escape leaves."""

from __future__ import annotations

import streamlit as st

from vitviz.app import state, web
from vitviz.app.text import tr

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
