"""The app's own CSS and JavaScript (``static/``), and the selectors of Streamlit's page they
depend on, in one place: a Streamlit release that renames one of its test ids breaks them here.

The static files name selectors as ``{main}``, ``{sidebar}`` ...; ``page_text`` fills them in.
Every script is constant: the only values put into one are keys written in code, and the paths
the app serves its own scripts at (``vitviz.app.chart_script``).
"""

from __future__ import annotations

import functools
import re
from pathlib import Path

STATIC = Path(__file__).with_name("static")

# Streamlit 1.67's DOM, as the static files and the browser tests use it.
SELECTORS = {
    "app_root": "[data-testid='stApp']",
    "app": "[data-testid='stAppViewContainer']",
    "main": "[data-testid='stMain']",
    "block_container": "[data-testid='stMainBlockContainer']",
    "element": "[data-testid='stElementContainer']",
    "layout_wrapper": "[data-testid='stLayoutWrapper']",  # around a container or a row of columns
    "vertical_block": "[data-testid='stVerticalBlock']",
    "horizontal_block": "[data-testid='stHorizontalBlock']",
    "column": "[data-testid='stColumn']",
    "chart_box": "[data-testid^='stBidiComponent']",  # around vitviz's chart element (static/chart.js)
    "sidebar": "[data-testid='stSidebar']",
    "nav_link": "[data-testid='stSidebarNavLink']",
    "sidebar_collapsed": "[data-testid='stSidebarCollapsedControl']",
    "sidebar_expand": "[data-testid='stExpandSidebarButton']",
    "table": "[data-testid='stMarkdownContainer'] table",  # a step's table (vitviz.app.tabular)
    "caption": "[data-testid='stCaptionContainer']",
    "metric_value": "[data-testid='stMetricValue']",
}

# The widgets the scripts press, by their keys (Streamlit gives a keyed element the class st-key-KEY).
KEYS = {"next": "nav_next", "previous": "nav_prev", "leave": "present_leave", "catch_up": "class_sync"}


def page_path(path: str) -> str:
    """A page's address within the app (``st.Page.url_path``: "" for the first), checked to be one:
    letters, digits, - and _ only."""
    if not re.fullmatch(r"[A-Za-z0-9_-]*", path):
        raise ValueError(f"A page's address has letters, digits, - and _ only, not {path!r}.")
    return path


def key_selector(key: str) -> str:
    """The CSS selector of the element with Streamlit key ``key`` (letters, digits, - and _ only)."""
    if not re.fullmatch(r"[A-Za-z0-9_-]+", key):
        raise ValueError(f"A key has letters, digits, - and _ only, not {key!r}.")
    return f".st-key-{key}"


@functools.cache
def _read(name: str) -> str:
    return (STATIC / name).read_text(encoding="utf-8")


def page_text(name: str, **values: str) -> str:
    """A static file with its ``{name}`` placeholders filled: the selectors above, the keys' selectors
    and ``values``. A placeholder left unknown is an error, not a silent gap."""
    known = {**SELECTORS, **{name: key_selector(key) for name, key in KEYS.items()}, **values}

    def fill(found: re.Match[str]) -> str:
        if found[1] not in known:
            raise KeyError(f"{name} names {{{found[1]}}}, which vitviz.app.web does not define.")
        return known[found[1]]

    return re.sub(r"\{(\w+)\}", fill, _read(name))


def style(name: str, **values: str) -> str:
    """A static CSS file as an ``st.html`` body."""
    return f"<style>{page_text(name, **values)}</style>"


def script(name: str, tag: str = "", **values: str) -> str:
    """A static script as an ``st.html`` body; ``tag`` (a comment) makes the body new, for Streamlit
    runs an st.html's script again only when its body changes."""
    comment = f"// {tag}\n" if tag else ""
    return f"<script>{comment}{page_text(name, **values)}</script>"
