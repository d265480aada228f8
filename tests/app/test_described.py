"""The tour's next step described ahead (``vitviz.app.described``): while a session reads a step,
the work ahead describes the next one; the run that opens it draws that description only when
it is the very one the run would describe, and what it draws is the same."""

from __future__ import annotations

import re
import time
from collections import OrderedDict

import pytest

from tests.apptest import charts, errors, open_page
from vitviz.app import ahead, described, state
from vitviz.app.tour import ROOT, TOUR

TOKENS, ATTENTION = "app_pages/4_tokens.py", "app_pages/5_attention.py"


@pytest.fixture
def worker(monkeypatch):
    """A worker of the app's own for the test, nothing kept yet, and the counts from zero."""
    made = ahead.Ahead(set_threads=lambda n: None)
    monkeypatch.setattr(ahead, "_server", made)
    monkeypatch.setattr(described, "_kept", OrderedDict())
    monkeypatch.setattr(described, "counts", {"taken": 0, "described": 0})
    monkeypatch.delenv("VITVIZ_READ_AHEAD", raising=False)
    yield made
    made.stop()


def _kept_for(script: str, timeout: float = 60.0) -> described.Described:
    """Wait for the work ahead to have described ``script`` for the one session of the test."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        kept = list(described._kept.values())
        if kept and kept[-1].script == script:
            return kept[-1]
        time.sleep(0.05)
    raise AssertionError(f"nothing described ahead for {script}: {described._kept}")


def _nothing_more_ahead(worker, monkeypatch) -> None:
    """From here on the work ahead describes nothing new: what is kept stays as it is."""
    monkeypatch.setattr(worker, "ask", lambda *args, **kwargs: False)


def _page(at) -> tuple[list[str], list[str], list[str]]:
    """What a step's page shows: its texts, its metrics and every figure's JSON."""
    texts = [m.value for m in at.main.markdown] + [c.value for c in at.main.caption]
    return texts, [f"{m.label}={m.value}" for m in at.metric], [c.proto.spec for c in charts(at)]


def state_of(at) -> int:
    return at.session_state["step"]


def _press_next(at):
    [button] = [b for b in at.button if b.key == "nav_next"]
    button.click().run()
    assert errors(at) == []
    return at


def test_the_next_step_is_described_ahead_and_drawn_as_the_run_would_draw_it(worker, monkeypatch):
    at = open_page(TOKENS, query={"test": "cat/3"})
    assert errors(at) == []
    kept = _kept_for(ATTENTION)
    assert "layer" in dict(kept.read) and "head" in dict(kept.read)  # what the attention step reads, noted
    made = described.counts["described"]
    _press_next(at)
    assert state_of(at) == 5 and described.counts == {"taken": 1, "described": made}  # page 5 as made ahead
    shown = _page(at)

    monkeypatch.setenv("VITVIZ_READ_AHEAD", "0")  # the same step, described in its own run
    alone = open_page(TOKENS, query={"test": "cat/3"})
    _press_next(alone)
    assert described.counts["taken"] == 1 and state_of(alone) == 5
    assert _page(alone) == shown and len(shown[2]) >= 4  # every text, number and figure, byte for byte


def test_a_choice_changed_since_is_described_again(worker, monkeypatch):
    """The attention step described ahead read the layer as it was; a layer chosen since (a link,
    a widget) makes the run describe the step itself, at the layer chosen."""
    at = open_page(TOKENS, query={"test": "cat/3"})
    kept = _kept_for(ATTENTION)
    assert dict(kept.read)["layer"] is None  # described at the first layer
    _nothing_more_ahead(worker, monkeypatch)
    at.session_state["layer"] = 2
    at.run()
    _press_next(at)
    assert described.counts["taken"] == 0
    worked = [m.value for m in at.main.markdown if "Here is the computation" in m.value]
    assert at.session_state["layer"] == 2 and worked and "Layer 3," in worked[0], worked


def test_another_image_since_is_described_again(worker, monkeypatch):
    """Described ahead for one test image, the step is never drawn for another: after the student
    picks another image, the run describes the step for it (its verdict names the new class)."""
    at = open_page(TOKENS, query={"test": "cat/3"})
    _kept_for(ATTENTION)
    _nothing_more_ahead(worker, monkeypatch)
    at.selectbox(key="test_class").set_value("ship").run()
    assert errors(at) == [] and at.session_state["test"].startswith("ship/")
    _press_next(at)
    assert described.counts["taken"] == 0
    for _ in range(3):  # on to the prediction, every step for the ship
        _press_next(at)
    verdicts = [m.value for m in [*at.success, *at.error] if "True class" in m.value]
    assert verdicts and all("**ship**" in v for v in verdicts), verdicts


def test_every_step_described_ahead_is_the_one_its_page_draws():
    """``described.NEXT`` names, for each of its pages, the module whose ``describe`` the page
    hands to ``render.page``, in the tour's order; pages of another subject are not in it."""
    tour = [script for script, _, _ in TOUR]
    assert list(described.NEXT) == tour[: len(described.NEXT)]
    for script, module in described.NEXT.items():
        text = (ROOT / script).read_text()
        [(imported, page_script)] = re.findall(r"render\.page\((\w+)\.describe, \"([^\"]+)\"\)", text)
        assert page_script == script
        assert re.search(rf"from vitviz\.steps import .*\b{imported}\b", text), script
        assert module == f"vitviz.steps.{imported}"
        assert described.describe_of(script).__module__ == module


def test_a_recording_notes_every_choice_a_description_reads():
    seen = described.Recording({"layer": 2, "head": None, "query": 5})
    assert seen.get("layer") == 2 and seen.get("head") is None and "query" in seen
    assert seen.read == {"layer": 2, "head": None, "query": 5}
    everything = described.Recording({"layer": 2})
    assert dict(everything) == {"layer": 2}
    assert set(everything.read) == set(state.BY_KEY)  # looked at whole: every choice counts
