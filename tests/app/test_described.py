"""The tour's next step described ahead (``vitviz.app.described``): while a session reads a step,
the work ahead describes the next one; the run that opens it draws that description only when
it is the very one the run would describe, and what it draws is the same."""

from __future__ import annotations

import re
import time
from collections import OrderedDict

import pytest

from tests.apptest import charts, errors, open_page, open_page_in_one_run
from vitviz.app import ahead, described, state
from vitviz.app.tour import ROOT, TOUR

TOKENS, ATTENTION = "app_pages/4_tokens.py", "app_pages/5_attention.py"
PREDICTION, COMPARE, CARD = "app_pages/7_prediction.py", "app_pages/8_compare.py", "app_pages/9_card.py"


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


def test_the_comparison_with_a_cnn_is_described_ahead_after_the_prediction(worker, monkeypatch):
    """Step 8 reads a CNN as well: the work ahead takes the shipped one from the server's cache, and
    the run after the prediction's Next draws that description, the same as its own."""
    at = open_page(PREDICTION, query={"test": "cat/3"})
    assert errors(at) == []
    kept = _kept_for(COMPARE)
    assert "compare_cnn" in dict(kept.read) and "compare_class" in dict(kept.read)
    made = described.counts["described"]
    _press_next(at)
    assert state_of(at) == 8 and described.counts == {"taken": 1, "described": made}
    shown = _page(at)

    monkeypatch.setenv("VITVIZ_READ_AHEAD", "0")
    alone = open_page(PREDICTION, query={"test": "cat/3"})
    _press_next(alone)
    assert described.counts["taken"] == 1 and state_of(alone) == 8
    assert _page(alone) == shown and len(shown[2]) >= 4


def test_a_cnn_the_work_ahead_would_download_is_left_to_the_run(worker):
    """A model that is not in the registry or needs a download is never loaded by the work ahead:
    the description is the run's, with its spinner and its sentence."""
    for name in ("hf:google/vit-base-patch16-224", "upload:abc", "no-such-model"):
        with pytest.raises(described.NotAhead):
            described.AheadCompute().model(name)
    assert described.AheadCompute().model("cifar10-cnn").spec.is_cnn


def test_the_card_is_described_once_for_every_session_that_shows_it(monkeypatch):
    """A page about the model alone: the first session describes it, the next draws the same
    description; another language or another card chosen is described anew."""
    monkeypatch.setattr(described, "_for_everyone", OrderedDict())
    monkeypatch.setattr(described, "everyone", {"drawn": 0, "described": 0})
    first = open_page(CARD)
    assert errors(first) == [] and described.everyone == {"drawn": 0, "described": 1}
    second = open_page(CARD)
    assert errors(second) == [] and described.everyone == {"drawn": 1, "described": 1}
    assert _page(second) == _page(first) and _page(first)[2]  # every text, number and figure
    korean = open_page_in_one_run(CARD, lang="ko")
    assert described.everyone["described"] == 2 and _page(korean)[0] != _page(first)[0]
    cnn = open_page(CARD, query={"card_model": "cifar10-cnn"})
    assert described.everyone["described"] == 3 and _page(cnn)[2] != _page(first)[2]
    again = open_page(CARD, query={"card_model": "cifar10-cnn"})
    assert described.everyone == {"drawn": 2, "described": 3} and _page(again) == _page(cnn)


def test_a_noting_mapping_reads_the_run_s_own_choices():
    choices = {"layer": 2, "not_a_choice": "x"}
    noting = described.Noting(choices)
    assert noting["not_a_choice"] == "x" and noting.get("head") is None and noting.get("layer") == 2
    assert noting.read == {"not_a_choice": "x", "head": None, "layer": 2}
    assert set(noting) == set(choices) and set(state.BY_KEY) <= set(noting.read)


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
