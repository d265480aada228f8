"""The margins Chromium drew each figure of the app with on a first visit (``assets/margins.json``,
made by ``python -m tools.margins``): a figure goes to the page with its entry
(``vitviz.app.chart_script.element_data`` looks it up), and static/chart.js starts it from there where the
browser remembers nothing for it, so plotly.js draws it once instead of twice (docs/benchmarks.md)."""

from __future__ import annotations

import functools
import json
from pathlib import Path

FILE = Path(__file__).resolve().parents[1] / "assets" / "margins.json"


def key(element: str, language: str, presenting: bool) -> str:
    """A figure's entry in ``FILE``: its element's key, the language and the mode."""
    return f"{element}|{language}|{'present' if presenting else 'page'}"


@functools.cache
def _measured() -> dict[str, list]:
    try:
        return json.loads(FILE.read_text(encoding="utf-8"))["figures"]
    except (OSError, ValueError, KeyError):  # no file (a checkout without it): figures grow as plotly.js measures
        return {}


def measured(element: str, language: str, presenting: bool) -> list | None:
    """The margins Chromium drew this figure with on a first visit, as [[figure width, [l, r, t, b]],
    ...] by width, 0 for a side the layout's own margin fitted; None for a figure that was not
    measured or needed nothing more than its layout's margins."""
    return _measured().get(key(element, language, presenting))
