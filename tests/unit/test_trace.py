"""A bf16 trace read in float32 where it is read (Trace.read_in_float32, Float32Tensors; issue 40):
every reader gets exactly what converting the whole trace at once gave, and nothing unread is
converted."""

from __future__ import annotations

import dataclasses

import pytest
import torch

from vitviz.analyses import analysis
from vitviz.models import precision
from vitviz.models.config import ViTConfig
from vitviz.models.model import VisionTransformer
from vitviz.models.trace import Float32Tensors, Trace

CONFIG = ViTConfig(image_size=32, patch_size=8, embed_dim=64, depth=3, num_heads=4, num_classes=10)
PER_BLOCK = ("hidden_states", "attentions", "attn_outputs", "mlp_outputs")
WHOLE = ("pixels", "patches", "patch_tokens", "tokens", "pre_logits", "logits")


@pytest.fixture(scope="module")
def model() -> VisionTransformer:
    torch.manual_seed(0)
    return VisionTransformer(CONFIG).eval()


@pytest.fixture(scope="module")
def pixels() -> torch.Tensor:
    return torch.randn(2, 3, 32, 32, generator=torch.Generator().manual_seed(1))


def converted_at_once(model: VisionTransformer, pixels: torch.Tensor) -> Trace:
    """What precision.explain handed on before issue 40: the whole bf16 trace in float32 at once."""
    with torch.no_grad(), torch.autocast("cpu", dtype=torch.bfloat16):
        trace = model.explain(pixels)
    return dataclasses.replace(trace.detach().float(), computed_in="bfloat16")


def same(a: torch.Tensor, b: torch.Tensor) -> bool:
    """Equal values in the same dtype (torch.equal alone compares bf16 and float32 by value)."""
    return a.dtype == b.dtype and torch.equal(a, b)


def held(tensors: Float32Tensors) -> list[torch.dtype]:
    """The dtypes a lazy list still holds (white box: what has been converted so far)."""
    return [t.dtype for t in tensors._tensors]


def test_a_bf16_trace_converts_a_per_block_tensor_only_when_it_is_read(model, pixels):
    trace = precision.explain(model, pixels, torch.bfloat16)
    assert trace.computed_in == "bfloat16"
    assert all(getattr(trace, name).dtype == torch.float32 for name in WHOLE)  # small: converted at once
    for name in ("attentions", "attn_outputs", "mlp_outputs"):  # the matrix products' outputs: still bf16
        assert held(getattr(trace, name)) == [torch.bfloat16] * CONFIG.depth, name
    first = analysis.cls_attention(trace, 1)  # the attention page reads one layer
    assert held(trace.attentions) == [torch.bfloat16, torch.float32, torch.bfloat16]
    assert trace.attentions[1] is trace.attentions[1]  # converted once, then shared by every reader
    assert torch.equal(first, analysis.cls_attention(converted_at_once(model, pixels), 1))


def test_every_reader_gets_the_values_the_whole_conversion_gave(model, pixels):
    lazy, eager = precision.explain(model, pixels, torch.bfloat16), converted_at_once(model, pixels)
    assert held(lazy.mlp_outputs) == [torch.bfloat16] * CONFIG.depth  # read below for the first time
    for name in WHOLE:
        assert same(getattr(lazy, name), getattr(eager, name)), name
    for name in PER_BLOCK:
        mine, theirs = getattr(lazy, name), getattr(eager, name)
        assert len(mine) == len(theirs) and bool(mine)
        # every way of reading a list: index, negative index, slice, iteration, zip, reversed
        assert all(same(mine[i], theirs[i]) for i in range(len(theirs)))
        assert same(mine[-1], theirs[-1])
        assert all(same(a, b) for a, b in zip(mine[1:], theirs[1:], strict=True)) and len(mine[1:]) == len(theirs) - 1
        assert all(same(a, b) for a, b in zip(mine, theirs, strict=True)), name
        assert all(same(a, b) for a, b in zip(reversed(mine), reversed(theirs), strict=True)), name
        assert [t.dtype for t in list(mine)] == [torch.float32] * len(theirs)
    # what the pages compute from a trace
    readers = {
        "rollout_map": lambda t: analysis.rollout_map(t),
        "mean_attention_distance": lambda t: analysis.mean_attention_distance(t),
        "query_attention": lambda t: analysis.query_attention(t, 2, 3, head=1),
        "readout_attention": lambda t: analysis.readout_attention(t, 0),
        "block_statistics": lambda t: analysis.block_statistics(t, token=0),
        "block_token_norms": lambda t: analysis.block_token_norms(model, t, 1),
        "mlp_preactivations": lambda t: analysis.mlp_preactivations(model, t, 2, 5),
        "logit_lens": lambda t: analysis.logit_lens(model, t),
        "occlusion_order": lambda t: analysis.occlusion_order(t, "rollout"),
        "worked_attention": lambda t: analysis.worked_attention(model, t, 1, 2, 0),
    }
    for name, read in readers.items():
        mine, theirs = read(precision.explain(model, pixels, torch.bfloat16)), read(eager)
        if isinstance(theirs, dict):
            assert mine.keys() == theirs.keys(), name
            assert all(same(mine[key], theirs[key]) for key in theirs), name
        else:
            assert same(mine, theirs), name


def test_a_float32_trace_is_handed_on_as_made_in_the_same_read_only_lists(model, pixels):
    with torch.no_grad():
        made = model.explain(pixels)
    trace = precision.explain(model, pixels)
    assert trace.computed_in == "float32"
    for name in PER_BLOCK:
        assert isinstance(getattr(trace, name), Float32Tensors)
        assert all(same(a, b) for a, b in zip(getattr(trace, name), getattr(made, name), strict=True))


def test_c_code_that_wants_a_real_list_is_told_so_rather_than_given_bf16(model, pixels):
    trace = precision.explain(model, pixels, torch.bfloat16)
    with pytest.raises(TypeError, match="tuple of Tensors"):
        torch.stack(trace.attentions)  # type: ignore[arg-type]
    stacked = torch.stack(list(trace.attentions))  # (depth, B, heads, T, T), in float32
    assert stacked.dtype == torch.float32 and stacked.shape[0] == CONFIG.depth
    assert "held in bfloat16" in repr(trace.mlp_outputs)
