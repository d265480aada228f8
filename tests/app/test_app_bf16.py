"""The tour from a trace made in bf16 (VITVIZ_PRECISION=bfloat16): every page renders from it, and a
page converts only the tensors it reads (Trace.read_in_float32, issue 40)."""

from __future__ import annotations

import pytest
import torch

from tests.apptest import errors, open_page
from vitviz.app import caches, tour
from vitviz.models import precision, zoo


@pytest.fixture
def bf16_traces(monkeypatch):
    """The server runs the explained pass in bf16 (emulated where the CPU lacks it: the same
    numbers, only slower); the traces it made, and caches that forget them before and after."""
    monkeypatch.setenv("VITVIZ_PRECISION", "bfloat16")
    monkeypatch.setattr(precision, "native_bf16", lambda device: True)
    real_explain, made = precision.explain, []

    def keep(model, pixels, dtype=torch.float32):
        made.append(real_explain(model, pixels, dtype))
        return made[-1]

    monkeypatch.setattr(precision, "explain", keep)
    caches.cached_precision.clear(), caches.cached_trace.clear()
    yield made
    caches.cached_precision.clear(), caches.cached_trace.clear()


def still_bf16(tensors) -> int:
    """How many of a trace's per-block tensors nobody has read yet (white box)."""
    return sum(t.dtype == torch.bfloat16 for t in tensors._tensors)


def test_every_page_renders_from_a_bf16_trace_that_converts_what_the_pages_read(bf16_traces):
    at = open_page(sample="astronaut.jpg")
    assert errors(at) == []
    (trace,) = bf16_traces
    assert trace.computed_in == "bfloat16"
    depth = trace.depth
    # the first page shows the input, the prediction and the shapes (one attention map's): the
    # blocks' tensors stay as they were made. (Attention weights come out of a CPU's autocast in
    # bf16; CUDA's runs softmax in float32, so on a GPU they are float32 from the start.)
    made_bf16 = depth if zoo.pick_device().type == "cpu" else 0  # where the app's models run
    assert still_bf16(trace.mlp_outputs) == still_bf16(trace.attn_outputs) == depth
    assert still_bf16(trace.attentions) >= made_bf16 - 1
    for page in tour.scripts():
        at.switch_page(page).run()
        assert errors(at) == [], page
    assert len(bf16_traces) == 1  # every page read the one cached trace
    assert still_bf16(trace.attentions) < max(made_bf16, 1)  # the attention pages read it, in float32


def test_occlusion_runs_in_the_precision_the_server_set(monkeypatch):
    """cached_occlusion under bf16 autocast: close to the float32 curve, and not the same numbers
    (but for the unoccluded image's, which is the explained pass's: one value on a page)."""
    from vitviz.analyses import analysis
    from vitviz.app.caches import DEFAULT_SAMPLE, SAMPLES
    from vitviz.models import zoo

    image = (SAMPLES / DEFAULT_SAMPLE).read_bytes()
    name = zoo.default_name()
    steps = analysis.occlusion_steps(caches.cached_model(name)[0])
    curves = {}
    for setting in ("float32", "bfloat16"):
        monkeypatch.setenv("VITVIZ_PRECISION", setting)
        monkeypatch.setattr(precision, "native_bf16", lambda device: True)
        caches.cached_precision.clear(), caches.cached_occlusion.clear(), caches.cached_trace.clear()
        assert caches.cached_precision(name).dtype == getattr(torch, setting)
        curves[setting] = caches.cached_occlusion(name, image, "rollout", steps)[1]
    caches.cached_precision.clear(), caches.cached_occlusion.clear(), caches.cached_trace.clear()
    difference = abs(curves["float32"] - curves["bfloat16"])[1:].max()
    assert 0 < difference < 0.05
