"""The tour from a trace made in bf16 (VITVIZ_PRECISION=bfloat16): every page renders from it, and a
page converts only the tensors it reads (Trace.read_in_float32, issue 40)."""

from __future__ import annotations

import pytest
import torch

from tests.apptest import errors, open_page
from vitviz import precision
from vitviz.app import caches, tour


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
    # blocks' tensors stay as they were made
    assert still_bf16(trace.mlp_outputs) == still_bf16(trace.attn_outputs) == depth
    assert still_bf16(trace.attentions) >= depth - 1
    for page in tour.scripts():
        at.switch_page(page).run()
        assert errors(at) == [], page
    assert len(bf16_traces) == 1  # every page read the one cached trace
    assert still_bf16(trace.attentions) < depth  # the attention pages read it, in float32
