"""The first view (vitviz.app.first_view): a fresh server's overview, drawn before torch has loaded
from assets/first_view.json, is the overview the app draws, and only where the app would draw it."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

import vitviz.app
from tests.apptest import APP, TIMEOUT, charts, errors, open_page
from vitviz.app import first_view, first_view_file
from vitviz.app.tour import TOUR
from vitviz.render.i18n import LANGUAGES

pytestmark = pytest.mark.cifar10


@pytest.fixture
def starting(monkeypatch):
    """A server whose startup has begun and is not ready (the warm-up thread's two events), asked
    for its root URL (AppTest's st.context has no URL; a browser's page does)."""
    monkeypatch.setattr(first_view, "_path", lambda: "")
    assert not vitviz.app.STARTUP_BEGUN.is_set(), "a test left the startup begun"
    vitviz.app.STARTUP_BEGUN.set()
    vitviz.app.STARTUP_READY.clear()
    try:
        yield vitviz.app.STARTUP_READY
    finally:
        vitviz.app.STARTUP_BEGUN.clear()
        vitviz.app.STARTUP_READY.clear()


def run(language: str | None = None, **query: str) -> AppTest:
    at = AppTest.from_file(str(APP), default_timeout=TIMEOUT)
    for key, value in ({"lang": language} if language else {}).items() | query.items():
        at.query_params[key] = value
    at.run()
    return at


def drawn(at: AppTest) -> list[tuple]:
    """The main area's elements in order, each as what a reader gets from it: its kind and text,
    a figure's bytes, a table's cells and height, a button's label and key."""
    chart_bytes = {chart.proto.id: chart.data for chart in charts(at)}
    found = []

    def walk(node) -> None:
        for child in node.children.values():
            kind = child.type
            if kind == "bidi_component":
                found.append((kind, child.proto.id, json.dumps(chart_bytes[child.proto.id], sort_keys=True)))
            elif kind in (
                "table",
                "dataframe",
            ):  # a grid's height is not in AppTest's tree (the browser test compares it)
                found.append((kind, child.value.to_json(), str(getattr(child.proto, "columns", ""))))
            elif kind == "button":
                found.append((kind, child.label, child.key, child.proto.type))
            elif kind in ("flex_container", "column", "vertical", "horizontal"):
                found.append((kind,))
                walk(child)
            else:
                found.append((kind, getattr(child, "value", None) or getattr(child, "body", None)))

    walk(at.main)
    return found


def test_the_shipped_first_view_is_the_overview_the_app_draws_now():
    """Made again from the app's own runs, the file is the one shipped: a change to the overview, the
    default model or sample, or a sentence makes this fail until `python -m vitviz.app.first_view`
    writes it again."""
    assert first_view_file.make() == json.loads(first_view.FILE.read_text(encoding="utf-8"))


@pytest.mark.parametrize("language", sorted(LANGUAGES))
def test_the_first_view_draws_the_overview_the_app_draws(starting, language):
    light = run(language)
    assert not errors(light)
    assert not light.sidebar.radio, "the first view has no sidebar choices: they come with the app's run"
    starting.set()
    app = run(language)
    assert not errors(app)
    assert app.sidebar.radio  # the app's own run, with the sidebar
    light_drawn, app_drawn = drawn(light), drawn(app)
    assert [kind for kind, *_ in light_drawn if kind == "bidi_component"] == ["bidi_component"] * 2
    assert light_drawn[:-1] == app_drawn  # the same elements, named alike: the browser keeps them
    assert light_drawn[-1] == ("flex_container",)  # and, last, the fragment that hands over to the app


def test_the_first_view_hands_over_to_the_app_once_the_startup_is_ready(starting):
    at = run()
    assert at.title[0].value == first_view._read()["languages"]["en"]["title"]
    assert not at.sidebar.radio
    starting.set()
    at.run()  # what the page's fragment asks for once the startup is ready
    assert not errors(at)
    assert at.sidebar.radio and at.title[0].value == "Overview"


def test_next_clicked_in_the_first_view_opens_the_first_step_even_before_the_startup_is_ready(starting):
    at = run()
    assert not at.sidebar.radio
    at.button(key="nav_next").click()
    at.run()  # the startup still not ready: this run is the app's, and it waits for what it needs
    assert not errors(at)
    assert at.sidebar.radio and at.title[0].value == open_page(TOUR[1][0]).title[0].value


def test_the_first_view_is_drawn_only_where_the_app_would_draw_the_same(starting, tmp_path, monkeypatch):
    assert first_view._view_for({}, "") is not None
    assert first_view._view_for({"lang": "ko", "model": "cifar10-vit"}, "") is not None
    assert first_view._view_for({}, "patches") is None  # another page
    assert first_view._view_for({"sample": "rocket.jpg"}, "") is None  # another choice
    assert first_view._view_for({"model": "cifar10-vit-untrained"}, "") is None
    assert first_view._view_for({"lang": "xx"}, "") is None
    assert first_view._view_for({}, None) is None  # a Streamlit that does not say the URL
    monkeypatch.setenv("VITVIZ_PRECISION", "bfloat16")
    assert first_view._view_for({}, "") is None
    monkeypatch.delenv("VITVIZ_PRECISION")
    # plotly.js built again since the file was made: its figures name a path this server does not serve
    with monkeypatch.context() as patched:
        patched.setattr(
            first_view.chart_script, "cartesian_script_path", lambda: "vitviz/plotly-cartesian-9.9.9-new.min.js"
        )
        assert first_view._view_for({}, "") is None
    assert first_view._view_for({}, "") is not None

    # other weights than the file was made from (a model that answers otherwise): the app draws
    assets = tmp_path / "assets"
    shutil.copytree(first_view.ASSETS, assets)
    weights = assets / "models" / "cifar10-vit.safetensors"
    changed = bytearray(weights.read_bytes())
    changed[-1] ^= 1
    weights.write_bytes(bytes(changed))
    monkeypatch.setattr(first_view, "ASSETS", assets)
    assert first_view._view_for({}, "") is None
    at = run()
    assert not errors(at) and at.sidebar.radio  # the app's run, not the file's


def test_the_first_view_and_the_startup_it_runs_before_import_no_torch():
    code = "import sys, streamlit, vitviz.app, vitviz.app.first_view; print(sorted(m for m in sys.modules if m in ('torch', 'vitviz.models', 'vitviz.render', 'numpy.linalg.torch')))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=Path(APP).parent)
    assert out.stdout.strip() == "[]"
