"""A step's table is one Markdown table when it fits a screen, and the data grid (st.dataframe) only
when it is longer (``vitviz.app.tabular.WHOLE_ROWS``): the grid cost a page of the tour 0.1 s of the
browser's main thread, and st.table's Markdown element per cell another 0.08 s on step 5
(docs/benchmarks.md)."""

from __future__ import annotations

import numpy as np
import pytest
from streamlit.testing.v1 import AppTest

from tests.apptest import TIMEOUT, errors, open_page_in_one_run, read_markdown_table, tables
from vitviz.app import tabular


def _draw_table(rows: int, whole: bool) -> None:
    from vitviz.app import render
    from vitviz.steps.blocks import Table

    render.draw(Table(tuple({"n": i, "name": f"row_{i}"} for i in range(rows)), whole=whole))


@pytest.mark.parametrize(
    ("rows", "whole", "plain"),
    [(1, False, True), (tabular.WHOLE_ROWS, False, True), (tabular.WHOLE_ROWS + 1, False, False), (60, True, True)],
)
def test_a_table_that_fits_a_screen_is_markdown_and_a_longer_one_scrolls_in_the_grid(rows, whole, plain):
    at = AppTest.from_function(_draw_table, kwargs={"rows": rows, "whole": whole}, default_timeout=TIMEOUT).run()
    assert [e.value for e in at.exception] == []
    markdown = [element.value for element in at.markdown if element.value.startswith("| ")]
    assert (len(markdown), len(at.dataframe), len(at.table)) == ((1, 0, 0) if plain else (0, 1, 0))
    (shown,) = tables(at)
    assert list(shown["n"]) == list(range(rows)) and list(shown["name"]) == [f"row_{i}" for i in range(rows)]


def test_the_attention_step_draws_its_worked_numbers_as_markdown_tables():
    at = open_page_in_one_run("app_pages/5_attention.py")
    assert errors(at) == []
    assert len(tables(at)) == 3 and len(at.dataframe) == 0 and len(at.table) == 0
    query = tables(at)[0]
    assert list(query.columns)[:2] == ["q[0]", "q[1]"] and len(query) == 1


def test_a_markdown_table_aligns_numbers_right_and_shows_each_cell_as_it_is():
    rows = [
        {"name": "a|b", "count": 3, "share": 0.155, "note": "line\nbreak"},
        {"name": "- x", "count": np.int64(12), "share": np.float32(0.5), "note": None},
        {"name": "__init__", "count": 7},  # a row that leaves columns out
    ]
    text = tabular.markdown_table(rows)
    header, rule, *body = text.split("\n")
    assert header == "| name | count | share | note |" and len(body) == 3
    assert rule == "| :--- | ---: | ---: | :--- |"  # numbers right, text left
    assert body[0] == "| a\\|b | 3 | 0.1550 | line break |"  # a bar escaped; a line break would end the row
    assert body[1] == "| \\- x | 12 | 0.5000 |  |"
    shown = read_markdown_table(text)
    assert list(shown["name"]) == ["a|b", "- x", "__init__"] and list(shown["count"]) == [3, 12, 7]


def test_a_count_is_parted_by_commas_and_an_empty_column_name_stays_empty():
    text = tabular.markdown_table([{"": "right", "second right": 8484, "second wrong": 5}])
    assert text.split("\n") == ["|  | second right | second wrong |", "| :--- | ---: | ---: |", "| right | 8,484 | 5 |"]
    assert read_markdown_table(text)["second right"].tolist() == [8484]


def test_a_table_without_rows_is_nothing():
    assert tabular.markdown_table([]) == ""


def test_a_column_that_mixes_text_and_numbers_is_text():
    rule = tabular.markdown_table([{"v": 1}, {"v": "two"}]).split("\n")[1]
    assert rule == "| :--- |"


def test_ordinary_cells_go_out_unchanged_and_markdown_is_escaped():
    """What starts no Markdown is sent as it is (what a test or a copy reads); the rest shows as it
    is in a browser (tests/browser/test_tables.py)."""
    for cell in ("patch_embed.proj", "[CLS]", "87.17%", "x = 1 - y", "-0.5", "12:30:45", "L = 0.299 R + 0.587 G"):
        assert tabular.plain_text(cell) == cell
    assert tabular.plain_text("-") == "\\-"
    assert tabular.plain_text("__init__") == "\\_\\_init\\_\\_"
    assert tabular.plain_text("[a](b)") == "[a]\\(b)"
    assert tabular.plain_text("1. one") == "1\\. one"
