"""A step's table is a plain table (st.table) when it fits a screen, and the data grid (st.dataframe)
only when it is longer (``vitviz.app.tabular.WHOLE_ROWS``): the grid cost a page of the tour
0.1 s of the browser's main thread (docs/benchmarks.md)."""

from __future__ import annotations

import pytest
from streamlit.testing.v1 import AppTest

from tests.apptest import TIMEOUT, errors, open_page_in_one_run
from vitviz.app import tabular


def _draw_table(rows: int, whole: bool) -> None:
    from vitviz.app import render
    from vitviz.steps.blocks import Table

    render.draw(Table(tuple({"n": i, "name": f"row_{i}"} for i in range(rows)), whole=whole))


@pytest.mark.parametrize(
    ("rows", "whole", "plain"),
    [(1, False, True), (tabular.WHOLE_ROWS, False, True), (tabular.WHOLE_ROWS + 1, False, False), (60, True, True)],
)
def test_a_table_that_fits_a_screen_is_plain_and_a_longer_one_scrolls_in_the_grid(rows, whole, plain):
    at = AppTest.from_function(_draw_table, kwargs={"rows": rows, "whole": whole}, default_timeout=TIMEOUT).run()
    assert [e.value for e in at.exception] == []
    assert (len(at.table), len(at.dataframe)) == ((1, 0) if plain else (0, 1))
    shown = (at.table if plain else at.dataframe)[0].value
    assert list(shown["n"]) == list(range(rows)) and list(shown["name"]) == [f"row_{i}" for i in range(rows)]


def test_the_attention_step_draws_its_worked_numbers_as_plain_tables():
    at = open_page_in_one_run("app_pages/5_attention.py")
    assert errors(at) == []
    assert len(at.table) == 3 and len(at.dataframe) == 0
    query = at.table[0].value
    assert list(query.columns)[:2] == ["q[0]", "q[1]"] and len(query) == 1


def test_ordinary_cells_go_out_unchanged_and_markdown_is_escaped():
    """What starts no Markdown is sent as it is (what a test or a copy reads); the rest shows as it
    is in a browser (tests/browser/test_tables.py)."""
    for cell in ("patch_embed.proj", "[CLS]", "87.17%", "x = 1 - y", "-0.5", "12:30:45", "L = 0.299 R + 0.587 G"):
        assert tabular.plain_text(cell) == cell
    assert tabular.plain_text("-") == "\\-"
    assert tabular.plain_text("__init__") == "\\_\\_init\\_\\_"
    assert tabular.plain_text("[a](b)") == "[a]\\(b)"
    assert tabular.plain_text("1. one") == "1\\. one"
