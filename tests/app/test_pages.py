"""The page files: each number once, in the tour's order, and the addresses visitors share stay
the ones Streamlit gives these files (it drops the number: app_pages/10_mistakes.py is /mistakes)."""

from __future__ import annotations

import re

from streamlit.testing.v1 import AppTest

from vitviz.app.tour import LAB, ROOT, TOUR

# The URL of every page, in the tour's order: links already shared point at these.
URLS = [
    "", "input", "patches", "vectors", "tokens", "attention", "block", "prediction", "compare", "card",
    "mistakes", "trust", "map", "learn",
]  # fmt: skip


def test_every_page_file_has_a_number_of_its_own_in_the_tour_s_order():
    pages = [script for script, _, _ in TOUR + LAB]
    numbers = [int(re.fullmatch(r"app_pages/(\d+)_\w+\.py", script).group(1)) for script in pages]
    assert numbers == list(range(len(pages)))
    assert sorted(path.relative_to(ROOT).as_posix() for path in (ROOT / "app_pages").glob("*.py")) == sorted(pages)


def _url_paths(scripts: list[str]) -> None:
    import streamlit as st

    st.session_state["urls"] = [st.Page(script, default=n == 0).url_path for n, script in enumerate(scripts)]


def test_every_page_keeps_the_url_streamlit_gave_it():
    scripts = [str(ROOT / script) for script, _, _ in TOUR + LAB]
    at = AppTest.from_function(_url_paths, args=(scripts,), default_timeout=30).run()
    assert not at.exception
    assert at.session_state["urls"] == URLS
