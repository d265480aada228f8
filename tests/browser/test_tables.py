"""A table is Markdown: what vitviz puts in a cell (``vitviz.app.tabular.markdown_table``) is shown
as it is, marks and all, in a real browser."""

from __future__ import annotations

from benchmarks.bench import app_server, wait_ready
from tests.browser.chromium import launched

# Each would become something else in Markdown or in Streamlit's: a bullet, bold, a link, LaTeX,
# code, a heading, a numbered list, a quote, struck-through text, an emoji, an icon, red text
CELLS = [
    "-",
    "__init__",
    "[a](http://e)",
    "$x^2$",
    "`c`",
    "# h",
    "1. item",
    "> q",
    "~~s~~",
    ":smile:",
    ":material/home:",
    ":red[x]",
    "**b**",
    "a\\b",
    "a|b",
    "a\\|b",
    "|",
    # and what needs nothing
    "patch_embed.proj",
    "[CLS]",
    "87.17%",
    "x = 1 - y",
    "12:30:45",
]
PAGE = """
import streamlit as st
from vitviz.app.tabular import markdown_table
st.markdown(markdown_table([{"cell": c} for c in CELLS]))
"""
CELL_TEXTS = "() => [...document.querySelectorAll('[data-testid=stMarkdownContainer] table tbody td')].map(td => td.innerText.trim())"


def test_a_tables_cells_show_as_they_are(tmp_path):
    script = tmp_path / "table_page.py"
    script.write_text(f"CELLS = {CELLS!r}\n{PAGE}")
    with app_server(timeout=60, script=str(script)) as server, launched() as browser:
        page = browser.new_page(viewport={"width": 900, "height": 1200})
        page.goto(server.url, wait_until="domcontentloaded")
        page.wait_for_selector("[data-testid=stMarkdownContainer] table tbody td", timeout=60_000)
        wait_ready(page, titled=False)
        shown = [text.replace("\u200b", "") for text in page.evaluate(CELL_TEXTS)]
    assert shown == CELLS
