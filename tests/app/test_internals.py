"""Streamlit's and Plotly's internals, used in one module (vitviz/app/internals.py) and only on the
versions they were tested with: with them off, the public API draws every figure and Next moves."""

from __future__ import annotations

import contextlib
import json

import pytest

from tests.apptest import charts as drawn
from tests.apptest import errors, open_page
from vitviz.app import charts, internals, state


@contextlib.contextmanager
def public_only(monkeypatch):
    """The public ways only, as on a Streamlit or Plotly outside ``internals.TESTED``."""
    before = internals.ACTIVE
    monkeypatch.setattr(charts, "SHELF", charts.Shelf())
    internals.use(False)
    try:
        yield
    finally:
        internals.use(before)


def _figures(at) -> dict[str, dict]:
    return {chart.proto.id.rsplit("-", 1)[-1]: json.loads(chart.proto.spec) for chart in drawn(at)}


def test_the_installed_streamlit_and_plotly_are_versions_the_internals_were_tested_with():
    """Fails on an upgrade past ``internals.TESTED``: run the app's tests on it, then widen the range."""
    assert {package: internals.tested(package) for package in internals.TESTED} == {"streamlit": True, "plotly": True}
    assert internals.allowed() and internals.install()


def test_an_untested_version_or_the_switch_turns_the_internals_off(monkeypatch):
    assert not internals.allowed({"VITVIZ_INTERNALS": "0"})
    lowest, highest = internals.TESTED["streamlit"]
    for outside in ((lowest[0], lowest[1] - 1), (highest[0], highest[1] + 1)):
        monkeypatch.setattr(internals, "version", lambda package, v=outside: v if package == "streamlit" else (7, 1))
        assert not internals.tested("streamlit") and not internals.allowed({})


@pytest.mark.parametrize(
    "page, present, least",
    [("5_attention", False, 4), ("5_attention", True, 2), ("6_block", False, 4)],  # presenter: a slide
    ids=["attention", "attention-presenter", "block"],  # the block's diagram has no trace at all
)
def test_the_public_way_draws_the_same_figures(page, present, least, monkeypatch):
    query = {"present": "1"} if present else None
    private = _figures(open_page(f"app_pages/{page}.py", query=query))
    with public_only(monkeypatch):
        at = open_page(f"app_pages/{page}.py", query=query)
    assert errors(at) == []
    public = _figures(at)
    assert len(private) >= least and public.keys() == private.keys()
    for key, figure in public.items():
        layout, expected = figure["layout"], private[key]["layout"]
        assert len(figure["data"]) == len(private[key]["data"]), key
        assert layout["font"] == expected["font"] and layout.get("height") == expected.get("height"), key
        assert layout["margin"] == expected["margin"] and layout["template"] == expected["template"], key
    assert charts.SHELF.built == 0  # the public way shares nothing (it cannot tell sessions apart)


def test_next_moves_the_public_way_in_two_runs(monkeypatch):
    with public_only(monkeypatch):
        at = open_page("app_pages/2_patches.py")
        assert errors(at) == [] and drawn(at)
        runs, init = [], state.init
        monkeypatch.setattr(state, "init", lambda: (runs.append(1), init())[1])
        at.button(key="nav_next").click().run()
    assert errors(at) == [] and any("Patch vectors" in t.value for t in at.title)
    assert len(runs) == 2 and at.session_state["step"] == 3 and at.query_params["step"] == "3"  # st.switch_page
    assert drawn(at)  # the next step's figures, drawn the public way
