"""Helpers for Streamlit AppTests: start at app.py, switch to a page, run it."""

from __future__ import annotations

from pathlib import Path

from streamlit.testing.v1 import AppTest

APP = Path(__file__).resolve().parents[1] / "app.py"
TIMEOUT = 120


def open_page(page: str | None = None, query: dict[str, str] | None = None, **state: object) -> AppTest:
    """Run app.py (optionally with URL query parameters and session state), then one page."""
    at = AppTest.from_file(str(APP), default_timeout=TIMEOUT)
    for key, value in (query or {}).items():
        at.query_params[key] = value
    for key, value in state.items():
        at.session_state[key] = value
    at.run()
    if page is not None:
        at.switch_page(page)
        at.run()
    return at


def errors(at: AppTest) -> list[str]:
    """Every exception and st.error shown on the page."""
    return [e.value for e in at.exception] + [e.value for e in at.error]


def plotly_figures(at: AppTest) -> list[dict]:
    """The plotly figures on the page, as dictionaries (data + layout)."""
    import json

    return [json.loads(chart.proto.spec) for chart in at.get("plotly_chart")]
