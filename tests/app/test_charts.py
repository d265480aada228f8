"""Figures shared by every session (vitviz.app.charts): the pages send the same charts, byte for
byte, whether a figure was built for this run, built once for the server, or sent from its JSON
written once; presenter mode gets figures of its own; a figure is built once however many ask."""

from __future__ import annotations

import threading

import numpy as np
import pytest
import torch

from tests.apptest import charts as drawn
from tests.apptest import errors, open_page, open_page_in_one_run
from vitviz.app import charts, internals, margins, tabular, tour
from vitviz.render import plots


def chart_specs(page: str, present: bool = False) -> list[tuple[str, str]]:
    at = open_page(page, query={"present": "1"} if present else None)
    assert not errors(at), errors(at)
    return [(chart.proto.id, chart.proto.spec) for chart in drawn(at)]


@pytest.fixture
def sharing(monkeypatch):
    """A server's shelf of its own for the test, sharing on."""
    monkeypatch.setattr(charts, "SHELF", charts.Shelf())
    monkeypatch.setattr(charts, "ENABLED", True)
    return charts.SHELF


@pytest.mark.parametrize("page", [script for script, _, _ in tour.TOUR[1:]])
def test_every_tour_page_sends_the_same_charts_with_figures_shared(page, sharing, monkeypatch):
    monkeypatch.setattr(charts, "ENABLED", False)
    alone = chart_specs(page)  # every figure built for this run, written by st.plotly_chart
    monkeypatch.setattr(charts, "ENABLED", True)
    first = chart_specs(page)  # built for the shelf, its JSON written once
    built = sharing.built
    again = chart_specs(page)  # another session: every figure from the shelf, its JSON as written
    assert alone and first == alone and again == alone
    assert built > 0 and sharing.built == built  # nothing built twice


# the vectors page's component tiles sit in an st.cache_resource too: one figure object, themed
# for each session's mode in turn, whose JSON must follow its theme
@pytest.mark.parametrize("page", ["app_pages/3_vectors.py", "app_pages/4_tokens.py"])
def test_presenter_mode_gets_figures_of_its_own(page, sharing, monkeypatch):
    screen = chart_specs(page)
    presenting = chart_specs(page, present=True)
    monkeypatch.setattr(charts, "ENABLED", False)
    assert chart_specs(page, present=True) == presenting != screen
    monkeypatch.setattr(charts, "ENABLED", True)
    assert chart_specs(page) == screen  # the screen's figures were not themed for the projector meanwhile


def test_content_key_tells_arrays_apart_by_dtype_shape_and_bytes():
    a = np.arange(6, dtype=np.float32)
    assert charts.content_key(a) == charts.content_key(a.copy())
    assert charts.content_key(a) != charts.content_key(a.reshape(2, 3))
    assert charts.content_key(a) != charts.content_key(a.astype(np.float64))
    assert charts.content_key(a) != charts.content_key(a + 1e-6)
    assert charts.content_key(torch.from_numpy(a)) != charts.content_key(a)
    assert charts.content_key((1, "x")) != charts.content_key((1.0, "x")) != charts.content_key([1, "x"])
    assert charts.content_key({"b": 1, "a": 2}) != charts.content_key({"a": 2, "b": 1})  # order: legends follow it
    assert charts.content_key(([a], {"f": print})) is None  # a callable: that call is not shared


def test_builders_leave_out_the_functions_that_change_a_figure():
    names = charts.builders()
    assert {"bars", "similarity_maps", "training_curves", "image"} <= set(names)
    assert "theme" not in names and "outline_patch" not in names


def test_a_figure_asked_for_by_many_at_once_is_built_once():
    shelf, started, built = charts.Shelf(), threading.Event(), []

    def build():
        started.wait(5)
        built.append(1)
        return plots.bars(["a", "b"], [0.25, 0.75])

    got = []
    threads = [threading.Thread(target=lambda: got.append(shelf.get(("bars", 1, False), build))) for _ in range(8)]
    for thread in threads:
        thread.start()
    started.set()
    for thread in threads:
        thread.join()
    assert len(built) == 1 and shelf.built == 1 and len({id(figure) for figure in got}) == 1


def test_the_shelf_forgets_the_least_recently_used_figures_past_its_size():
    figure = plots.bars(["a"], [1.0])
    size = 2 * len(charts.write(figure, False))
    shelf = charts.Shelf(max_bytes=int(2.5 * size))
    for n in range(3):
        shelf.get(("bars", n, False), lambda: plots.bars(["a"], [1.0]))
    shelf.get(("bars", 1, False), lambda: pytest.fail("kept"))  # used last: kept
    assert list(shelf.figures) == [("bars", 2, False), ("bars", 1, False)]


def test_outside_a_session_every_call_builds_a_figure_of_its_own(sharing):
    charts.share_figures(lambda: False)
    assert getattr(plots.bars, "vitviz_shared", False)
    assert plots.bars(["a"], [1.0]) is not plots.bars(["a"], [1.0])  # unit tests, the handout: no shelf


def test_in_a_session_builders_share_and_a_private_caller_gets_its_own(sharing, monkeypatch):
    monkeypatch.setattr(internals, "in_a_run", lambda: True)  # as in a session's run
    charts.share_figures(lambda: False)
    shared = plots.bars(["a"], [1.0])
    assert plots.bars(["a"], [1.0]) is shared
    with charts.private():  # the handout's way: it resizes and themes what it gets
        own = plots.bars(["a"], [1.0])
    assert own is not shared and plots.bars(["a"], [1.0]) is shared


def test_a_table_goes_to_streamlit_as_arrow_and_a_column_of_mixed_kinds_as_rows():
    import pyarrow

    rows = (
        {"step": "pixels", "shape": "(1, 3, 32, 32)", "weight": 0.056},
        {"step": "head", "shape": None, "weight": 1},
    )
    table = tabular.table_data(rows)
    assert isinstance(table, pyarrow.Table) and table.to_pylist() == [dict(row) for row in rows]
    mixed = [{"value": 1}, {"value": "one"}]  # Arrow holds one kind a column: Streamlit's own conversion shows text
    assert tabular.table_data(mixed) == mixed


@pytest.mark.parametrize(("language", "present"), [("en", False), ("ko", False), ("en", True)])
def test_a_figure_carries_the_margins_measured_for_its_key_language_and_mode(language, present):
    """vitviz/assets/margins.json (tools.margins): a figure of the tour goes to the page with the
    margins Chromium drew it with for its key, the session's language and the mode, and its
    language, under which the browser remembers what it drew; a figure measured for nothing more
    than its layout's margins goes without."""
    page = "app_pages/5_attention.py"
    at = open_page(page, query={"present": "1"}) if present else open_page_in_one_run(page, lang=language)
    assert not errors(at), errors(at)
    sent = {chart.proto.id.rsplit("-", 1)[-1]: chart.data for chart in drawn(at)}
    assert sent and {data["lang"] for data in sent.values()} == {language}
    measured = {key: data["start"] for key, data in sent.items() if "start" in data}
    assert "attention_query" in measured  # its colour bar: measured wider than 4 px
    for key, start in measured.items():
        assert start == margins.measured(key, language, present), key
        widths = [width for width, _ in start]
        assert widths == sorted(widths) and all(len(sides) == 4 for _, sides in start), key
    for key in set(sent) - set(measured):
        assert margins.measured(key, language, present) is None, key
    assert margins.measured("attention_query", language, not present) != measured["attention_query"]
