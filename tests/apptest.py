"""Helpers for Streamlit AppTests: start at app.py, switch to a page, run it."""

from __future__ import annotations

import base64
import json
from pathlib import Path

import numpy as np
from streamlit.testing.v1 import AppTest

APP = Path(__file__).resolve().parents[1] / "app.py"
TIMEOUT = 120


def open_page_in_one_run(page: str, **state: object) -> AppTest:
    """Open ``page`` in the app's first run, the way a shared link to the page's URL does. For
    Korean: AppTest formats widget options outside the script (in English) and then fails to
    find the Korean ones on a second run."""
    at = AppTest.from_file(str(APP), default_timeout=TIMEOUT)
    for key, value in state.items():
        at.session_state[key] = value
    at.switch_page(page)
    at.run()
    return at


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
    return [json.loads(chart.proto.spec) for chart in at.get("plotly_chart")]


def figure(at: AppTest, key: str) -> dict:
    """The figure of the chart with element key ``key``."""
    for chart in at.get("plotly_chart"):
        if chart.proto.id.endswith(f"-{key}"):
            return json.loads(chart.proto.spec)
    raise AssertionError(f"no chart {key!r}")


def figure_array(value: object) -> np.ndarray:
    """A figure array from plotly's JSON: a list, or {"dtype", "bdata", "shape"} (base64)."""
    if isinstance(value, dict):
        array = np.frombuffer(base64.b64decode(value["bdata"]), dtype=value["dtype"])
        shape = value.get("shape")
        return array.reshape([int(n) for n in str(shape).split(",")]) if shape else array
    return np.asarray(value)
