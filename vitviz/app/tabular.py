"""How a step's table is sent to the browser: a plain table (st.table) when it fits a screen, else
Streamlit's data grid (st.dataframe); its rows as an Arrow table; a plain table's text cells
escaped, since it reads them as Markdown."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

import pyarrow

# A table of up to this many rows is drawn whole, as a plain table (st.table), not in Streamlit's
# data grid (st.dataframe): the grid draws on a canvas with its own scripts and measurements, and a
# page of the tour with three small tables took 0.1 s more of the browser's main thread for them
# (docs/benchmarks.md). A plain table also wraps long cells, prints, and takes the projector's type
# in presenter mode. Every table the steps describe has 18 rows or fewer; a longer one scrolls in
# the grid. A plain table shows a float cell with four decimals: the steps round theirs to four.
WHOLE_ROWS = 20


def draw(where: Any, rows: Sequence[Mapping[str, Any]], whole: bool, grid_height: int) -> None:
    """A table of ``rows`` on the page (``where``: st or a column): a plain table when ``whole`` or
    it fits a screen (every row, long cells wrapped, presenter mode's type), else the data grid,
    ``grid_height`` pixels tall (the app's run and the first view each know their own)."""
    if whole or len(rows) <= WHOLE_ROWS:
        where.table(plain_table_data(rows), hide_index=True)
    else:
        where.dataframe(table_data(rows), hide_index=True, width="stretch", height=grid_height)


# A plain table reads each text cell as Markdown: "-" alone is a list's bullet, "__init__" bold,
# "[a](b)" a link, "$x$" mathematics. A cell's text (a class's, a model's, a teacher's name, from a
# visitor's model too) is shown as it is: the marks that would start any of them are escaped, and
# text that starts nothing ("patch_embed", "[CLS]", "87.17%", "x = a - b") is sent unchanged.
_ANYWHERE = re.compile(r"([\\`*~$<])")  # code, emphasis, strike-through, mathematics, an autolink
_LOOSE_UNDERSCORE = re.compile(r"(?<![0-9A-Za-z])_|_(?![0-9A-Za-z])")  # _x_, __x__ (a_b is plain text)
_SHORTCODE = re.compile(r":(?=[A-Za-z][\w/+-]*:)")  # Streamlit's :smile:, :material/home:
_DIRECTIVE = re.compile(r":(?=[A-Za-z][\w-]*\[)")  # Streamlit's :red[text]
_LINK = re.compile(r"\]([(\[])")  # [text](url), [text][reference]
_LINE_START = re.compile(
    r"^(\s*)([-+](?=\s|$)|-{3,}|>|#{1,6}(?=\s|$)|\d+[.)](?=\s|$))", re.MULTILINE
)  # list, rule, quote, heading


def plain_text(cell: str) -> str:
    """``cell`` as a plain table's Markdown that shows it as it is."""
    cell = _SHORTCODE.sub(":\u200b", cell)  # an escaped colon still starts one: a zero-width space parts them
    cell = _ANYWHERE.sub(r"\\\1", cell)
    cell = _DIRECTIVE.sub(r"\\:", cell)
    cell = _LOOSE_UNDERSCORE.sub(r"\\_", cell)
    cell = _LINK.sub(r"]\\\1", cell)
    return _LINE_START.sub(lambda match: match[1] + re.sub(r"([^0-9])", r"\\\1", match[2]), cell)


def plain_table_data(rows: Sequence[Mapping[str, Any]]) -> Any:
    """``table_data`` for a plain table (st.table): its text cells as ``plain_text``."""
    return table_data([{k: plain_text(v) if isinstance(v, str) else v for k, v in row.items()} for row in rows])


def table_data(rows: Sequence[Mapping[str, Any]]) -> Any:
    """A table's rows (dicts of cells) as st.table and st.dataframe are given them: an Arrow table, which
    Streamlit sends as it is, where a list of rows goes through pandas first (ten times the time,
    on every run of every page with a table). Rows whose column mixes kinds Arrow cannot hold in
    one column (text and numbers) are given as they are: Streamlit then shows that column as text."""
    try:
        return pyarrow.Table.from_pylist(list(rows))
    except (pyarrow.ArrowInvalid, pyarrow.ArrowTypeError):
        return list(rows)
