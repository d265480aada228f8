"""What a class reads is the same on every run (issue 55): no number shown depends on a timing the
server takes at start, and one quantity has one value on a page.

Page 7 is rendered for one image in two processes, each with the server's precision measurement
forced the other way (bf16 3x as fast in one, 3x as slow in the other), and the two must say the
same sentences and show the same figures' numbers.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch

from tests.apptest import errors, figure, figure_array, open_page
from vitviz.analyses import analysis
from vitviz.app import caches
from vitviz.models import precision, zoo

ROOT = Path(__file__).resolve().parents[2]
SAMPLE = (caches.SAMPLES / caches.DEFAULT_SAMPLE).read_bytes()  # the image a first visit shows

# One run of page 7 in a fresh process. A machine with native bf16 is pretended, and whatever the
# server would time comes out as "bf16 is 3x as fast" (bf16) or "3x as slow" (float32): today's
# measurement functions, and those of before issue 55 (choose_batched) where they exist.
RENDER = """
import json, sys, torch
from vitviz.models import precision
measured = sys.argv[1]
precision.native_bf16 = lambda device: True
fast, slow = (3.0, 1.0) if measured == "bfloat16" else (1.0, 3.0)
dtype = getattr(torch, measured)
precision.choose = lambda *a, **k: precision.Precision(dtype, fast, slow, 0.0)
if hasattr(precision, "Batched"):
    precision.choose_batched = lambda *a, **k: precision.Batched(dtype, fast, slow, 0.0)
from tests.apptest import errors, plotly_figures, open_page
at = open_page("app_pages/7_prediction.py")
texts = [m.value for m in at.markdown] + [c.value for c in at.caption if not c.value.startswith("Precision")]
strip = [fig for fig in plotly_figures(at) if fig["layout"].get("annotations")]
titles = [a["text"] for fig in strip for a in fig["layout"]["annotations"]]
print(json.dumps({"errors": errors(at), "texts": texts, "titles": titles}))
"""


def render_page_7(measured: str) -> dict:
    env = {k: v for k, v in os.environ.items() if k != "VITVIZ_PRECISION"}  # the server's default
    env["PYTHONPATH"] = str(ROOT)
    done = subprocess.run(
        [sys.executable, "-c", RENDER, measured], cwd=ROOT, env=env, capture_output=True, text=True, timeout=600
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_page_7_says_the_same_in_two_processes_whatever_the_timing_said():
    one, other = render_page_7("bfloat16"), render_page_7("float32")
    assert one["errors"] == other["errors"] == []
    assert any("%" in text for text in one["texts"])  # the occlusion sentences, with their numbers
    assert one["texts"] == other["texts"]
    assert one["titles"] == other["titles"] and any("%" in title for title in one["titles"])


@pytest.fixture
def bf16_measured_faster(monkeypatch):
    """A server on a machine with native bf16, at its default setting, whose timing at start would
    call bf16 3x as fast for every pass; the caches forget before and after."""
    monkeypatch.delenv("VITVIZ_PRECISION", raising=False)
    monkeypatch.setattr(precision, "native_bf16", lambda device: True)
    monkeypatch.setattr(precision, "choose", lambda *a, **k: precision.Precision(torch.bfloat16, 3.0, 1.0, 0.0))
    if hasattr(precision, "Batched"):  # before issue 55, batches were timed apart
        batched = precision.Batched(torch.bfloat16, 3.0, 1.0, 0.0)
        monkeypatch.setattr(precision, "choose_batched", lambda *a, **k: batched)
    caches.cached_precision.clear(), caches.cached_trace.clear(), caches.cached_occlusion.clear()
    yield
    caches.cached_precision.clear(), caches.cached_trace.clear(), caches.cached_occlusion.clear()


def test_no_timing_picks_the_precision_of_what_the_pages_show(bf16_measured_faster):
    at = open_page("app_pages/7_prediction.py")
    assert errors(at) == []
    assert "Precision: float32" in [c.value for c in at.sidebar.caption]
    assert caches.cached_trace(zoo.default_name(), SAMPLE).computed_in == "float32"


def bars_and_strip(at) -> tuple[dict[str, float], str]:
    """The top-k bars (label -> probability) and the first title of the occlusion strip (0 hidden)."""
    bars = figure(at, "prediction_topk")["data"][0]
    values = dict(zip(bars["y"], figure_array(bars["x"]).tolist(), strict=True))
    strip = figure(at, "prediction_occluded")["layout"]["annotations"]
    return values, strip[0]["text"]


@pytest.mark.parametrize("setting", ["default", "bfloat16"])
def test_the_strip_s_nothing_hidden_is_the_top_bar_s_value(bf16_measured_faster, monkeypatch, setting):
    """The occlusion strip's "0 hidden" and the top-k bar of the same class show one number, at the
    server's default and where it sets bf16 (emulated here: the same numbers, only slower)."""
    if setting == "bfloat16":
        monkeypatch.setenv("VITVIZ_PRECISION", "bfloat16")
    at = open_page("app_pages/7_prediction.py")
    assert errors(at) == []
    values, nothing_hidden = bars_and_strip(at)
    top = max(values.values())
    assert nothing_hidden.startswith("0 ") and nothing_hidden.endswith(f"{top:.1%}"), (nothing_hidden, top)
    name = zoo.default_name()
    trace = caches.cached_trace(name, SAMPLE)
    steps = analysis.occlusion_steps(caches.cached_model(name)[0])
    for kind in analysis.OCCLUSION_ORDERS:  # the curves themselves start at the bars' value
        _, curve = caches.cached_occlusion(name, SAMPLE, kind, steps)
        assert curve[0] == np.float32(trace.logits[0].softmax(dim=-1).max())
