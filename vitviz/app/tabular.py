"""How a step's table is sent to the browser: one Markdown table when it fits a screen, else
Streamlit's data grid (st.dataframe) given an Arrow table; a Markdown table's text cells escaped,
so that each shows as it is."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

import pyarrow

# A table of up to this many rows is drawn whole, as one Markdown table (a GitHub table in one
# st.markdown), not in Streamlit's data grid (st.dataframe): the grid draws on a canvas with its own
# scripts and measurements (a page of the tour with three small tables took 0.1 s more of the
# browser's main thread for them), and st.table draws every cell with a Markdown element of its
# own (step 5's three tables: about 70; one Markdown table each took another 0.08 s off that step,
# docs/benchmarks.md). A whole table wraps long cells, prints, and takes the projector's type in
# presenter mode. Every table the steps describe has 18 rows or fewer; a longer one scrolls in the
# grid. A whole table shows a float cell with four decimals (as st.table did): the steps round theirs
# to four.
WHOLE_ROWS = 20
DECIMALS = 4


def draw(where: Any, rows: Sequence[Mapping[str, Any]], whole: bool, grid_height: int) -> None:
    """A table of ``rows`` on the page (``where``: st or a column): one Markdown table when ``whole``
    or it fits a screen (every row, long cells wrapped, presenter mode's type), else the data grid,
    ``grid_height`` pixels tall (the app's run and the first view each know their own)."""
    if whole or len(rows) <= WHOLE_ROWS:
        where.markdown(markdown_table(rows))
    else:
        where.dataframe(table_data(rows), hide_index=True, width="stretch", height=grid_height)


# A Markdown table reads each text cell as Markdown: "-" alone is a list's bullet, "__init__" bold,
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
    """``cell`` as Markdown that shows it as it is."""
    cell = _SHORTCODE.sub(":\u200b", cell)  # an escaped colon still starts one: a zero-width space parts them
    cell = _ANYWHERE.sub(r"\\\1", cell)
    cell = _DIRECTIVE.sub(r"\\:", cell)
    cell = _LOOSE_UNDERSCORE.sub(r"\\_", cell)
    cell = _LINK.sub(r"]\\\1", cell)
    return _LINE_START.sub(lambda match: match[1] + re.sub(r"([^0-9])", r"\\\1", match[2]), cell)


def markdown_table(rows: Sequence[Mapping[str, Any]]) -> str:
    """``rows`` (dicts of cells; a row may leave a column out) as one GitHub Markdown table: a column
    of numbers aligned right, every cell shown as it is (``markdown_cell``)."""
    if not rows:
        return ""  # no columns to name: nothing to show
    columns = list(dict.fromkeys(name for row in rows for name in row))
    numbers = [all(_is_number(row.get(name)) for row in rows if row.get(name) is not None) for name in columns]
    lines = [
        _table_row(markdown_cell(name) for name in columns),
        _table_row("---:" if right else ":---" for right in numbers),
        *(_table_row(markdown_cell(row.get(name)) for name in columns) for row in rows),
    ]
    return "\n".join(lines)


def markdown_cell(value: Any) -> str:
    """One cell of ``markdown_table`` as it is shown: nothing for None, an integer with its thousands
    parted by commas, a float with ``DECIMALS`` decimals, text as ``plain_text`` on one line with its bars escaped."""
    value = _scalar(value)
    if value is None:
        return ""
    if isinstance(value, float):
        return f"{value:.{DECIMALS}f}"
    if isinstance(value, int) and not isinstance(value, bool):
        return f"{value:,}"  # a count as the app's sentences write it: 8,484
    text = " ".join(str(value).split())  # a cell is one line: a line break would end the table's row
    return plain_text(text).replace("|", "\\|")


def _scalar(value: Any) -> Any:
    """A numpy number as Python's (without importing numpy: the first view does not)."""
    return value.item() if type(value).__module__ == "numpy" and hasattr(value, "item") else value


def _is_number(value: Any) -> bool:
    value = _scalar(value)
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _table_row(cells: Any) -> str:
    return "| " + " | ".join(cells) + " |"


def table_data(rows: Sequence[Mapping[str, Any]]) -> Any:
    """A table's rows (dicts of cells) as st.table and st.dataframe are given them: an Arrow table, which
    Streamlit sends as it is, where a list of rows goes through pandas first (ten times the time,
    on every run of every page with a table). Rows whose column mixes kinds Arrow cannot hold in
    one column (text and numbers) are given as they are: Streamlit then shows that column as text."""
    try:
        return pyarrow.Table.from_pylist(list(rows))
    except (pyarrow.ArrowInvalid, pyarrow.ArrowTypeError):
        return list(rows)
