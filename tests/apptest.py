"""Helpers for Streamlit AppTests: start at app.py, switch to a page, run it."""

from __future__ import annotations

import base64
import dataclasses
import json
import re
from pathlib import Path
from typing import Any

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


@dataclasses.dataclass(frozen=True)
class ChartProto:
    id: str  # the element's id: it ends with "-<key>"
    spec: str  # the figure's plotly JSON, as the page sent it


@dataclasses.dataclass(frozen=True)
class Chart:
    """A figure a run drew (``vitviz.app.charts.draw``), read from vitviz's chart element."""

    proto: ChartProto
    data: dict  # everything the element was given: spec, script, stretch, select


def charts(where: Any) -> list[Chart]:
    """The figures drawn in ``where`` (an AppTest, or a block of its page), in page order."""
    found = []
    from vitviz.app.chart_script import read_element_data

    for element in where.get("bidi_component"):
        if element.proto.component_name == "vitviz_chart":
            data = read_element_data(element.proto.bytes)
            found.append(Chart(ChartProto(element.proto.id, data["spec"]), data))
    return found


def chart(at: AppTest, key: str) -> Chart:
    """The chart with element key ``key``."""
    for found in charts(at):
        if found.proto.id.endswith(f"-{key}"):
            return found
    raise AssertionError(f"no chart {key!r}")


def plotly_figures(at: AppTest) -> list[dict]:
    """The plotly figures on the page, as dictionaries (data + layout)."""
    return [json.loads(found.proto.spec) for found in charts(at)]


def figure(at: AppTest, key: str) -> dict:
    """The figure of the chart with element key ``key``."""
    return json.loads(chart(at, key).proto.spec)


def click(at: AppTest, key: str, point: dict) -> AppTest:
    """Click a point of the chart ``key`` as the browser reports it (``static/chart.js``): the
    element's trigger "selection", ``{"points": [point]}``, sent with the next run's widget states
    (AppTest has no browser to press it). Returns the AppTest after that run."""
    found = chart(at, key)
    assert found.data["select"], f"the chart {key!r} takes no clicks"
    return _trigger(at, found.proto.id, "selection", {"points": [point]})


def _trigger(at: AppTest, element_id: str, event: str, value: object) -> AppTest:
    """Send an ``st.components.v2`` element's trigger ``event`` with ``value``, as its script's
    ``setTriggerValue`` does, with the next run's widget states; the AppTest after that run."""
    from streamlit.components.v2.bidi_component.main import _make_trigger_id  # the element's event widget

    states = at._tree.get_widget_states()
    state = states.widgets.add()
    state.id = _make_trigger_id(element_id, "events")
    state.json_trigger_value = json.dumps([{"event": event, "value": value}])
    return at._run(states)


def _gallery_element(at: AppTest, key: str) -> Any:
    for element in at.get("bidi_component"):
        if element.proto.component_name == "vitviz_gallery" and element.proto.id.endswith(f"-{key}"):
            return element
    raise AssertionError(f"no gallery {key!r}")


def gallery(at: AppTest, key: str) -> dict:
    """The thumbnails of the gallery with element key ``key`` (``vitviz.app.gallery``): its
    ``columns``, ``current`` (the number of the image up close), ``colour`` and ``items``, each with
    its picture ("src", a data URL), "caption" and "number"."""
    from vitviz.app.gallery import read_element_data

    return read_element_data(_gallery_element(at, key).proto.bytes)


def open_thumbnail(at: AppTest, key: str, number: object) -> AppTest:
    """Click the thumbnail numbered ``number`` of the gallery ``key`` as the browser reports it
    (``static/gallery.js``: the element's trigger "open" with the number; any value, to send what a
    forged message would). Returns the AppTest after that run."""
    return _trigger(at, _gallery_element(at, key).proto.id, "open", number)


def slide_counter(at: AppTest) -> str:
    """Presenter mode's counter ("Step 7 of 9 · slide 2 of 4") as a visitor reads it, its HTML's tags left out."""
    return re.sub(r"<[^>]+>", "", next(m.value for m in at.markdown if "vitviz-slide-counter" in m.value))


def figure_array(value: object) -> np.ndarray:
    """A figure array from plotly's JSON: a list, or {"dtype", "bdata", "shape"} (base64)."""
    if isinstance(value, dict):
        array = np.frombuffer(base64.b64decode(value["bdata"]), dtype=value["dtype"])
        shape = value.get("shape")
        return array.reshape([int(n) for n in str(shape).split(",")]) if shape else array
    return np.asarray(value)


def tables(at: AppTest) -> list[Any]:
    """Every table on the page, in order, as a pandas DataFrame of what a visitor reads: a Markdown
    table (``vitviz.app.tabular.markdown_table``) with its cells unescaped and a right-aligned
    (number) column as numbers; a data grid's values as they are."""
    import pandas as pd

    found: list[Any] = []
    for element in at.main:
        if element.type == "markdown" and is_markdown_table(str(element.value)):
            found.append(read_markdown_table(str(element.value)))
        elif element.type in ("dataframe", "table"):
            found.append(element.value)
    return [frame if isinstance(frame, pd.DataFrame) else pd.DataFrame(frame) for frame in found]


def is_markdown_table(text: str) -> bool:
    lines = text.split("\n")
    return len(lines) >= 2 and lines[0].startswith("| ") and set(lines[1]) <= set("|:- ")


def read_markdown_table(text: str) -> Any:
    """A GitHub Markdown table's cells as shown: backslash escapes undone, the zero-width space that
    parts a colon from a word gone; a right-aligned column's cells as int or float."""
    import pandas as pd

    def cells(line: str) -> list[str]:
        parts = re.split(r"(?<!\\)\|", line.strip())[1:-1]
        return [re.sub(r"\\(.)", r"\1", part.strip()).replace(":\u200b", ":") for part in parts]

    header, rule, *rows = text.split("\n")
    columns = cells(header)
    right = [part.strip().endswith(":") and not part.strip().startswith(":") for part in rule.strip().split("|")[1:-1]]
    body = [cells(row) for row in rows]
    for j, is_number in enumerate(right):
        if is_number:
            for row in body:
                row[j] = _number(row[j])
    return pd.DataFrame(body, columns=columns)


def _number(cell: str) -> Any:
    """A right-aligned cell as int or float ("8,484": 8484); empty as None; anything else as it is."""
    if cell == "":
        return None
    for kind in (int, float):
        try:
            return kind(cell.replace(",", ""))
        except ValueError:
            pass
    return cell
