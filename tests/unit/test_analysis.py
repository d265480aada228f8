"""Tests for vitviz.analyses.analysis: hand-made inputs with known answers, and a tiny random ViT."""

from __future__ import annotations

import math

import pytest
import torch
from torch import Tensor

from vitviz.analyses import analysis
from vitviz.models.config import ViTConfig
from vitviz.models.model import VisionTransformer
from vitviz.models.trace import Trace

torch.set_num_threads(1)  # a training job shares the CPU; these tensors are tiny anyway

TINY = ViTConfig(image_size=32, patch_size=8, num_classes=5, embed_dim=32, depth=2, num_heads=4)


def make_trace(attentions: list[Tensor], grid_size: tuple[int, int], prefix: int) -> Trace:
    """A Trace holding hand-made attention maps; the other fields are zeros of the right shape."""
    batch, _, tokens, _ = attentions[0].shape
    grid_h, grid_w = grid_size
    patch = 8
    dim = 4
    hidden = torch.zeros(batch, tokens, dim)
    return Trace(
        pixels=torch.zeros(batch, 3, grid_h * patch, grid_w * patch),
        patches=torch.zeros(batch, grid_h * grid_w, 3 * patch * patch),
        patch_tokens=torch.zeros(batch, grid_h * grid_w, dim),
        tokens=hidden,
        hidden_states=[hidden] * (len(attentions) + 1),
        attentions=attentions,
        attn_outputs=[hidden] * len(attentions),
        mlp_outputs=[hidden] * len(attentions),
        pre_logits=torch.zeros(batch, dim),
        logits=torch.zeros(batch, 5),
        grid_size=grid_size,
        num_prefix_tokens=prefix,
    )


@pytest.fixture(scope="module")
def tiny() -> tuple[VisionTransformer, Trace]:
    torch.manual_seed(0)
    model = VisionTransformer(TINY).eval()
    with torch.no_grad():
        trace = model.explain(torch.randn(2, 3, 32, 32))
    return model, trace


@pytest.fixture(scope="module")
def tiny_avg() -> tuple[VisionTransformer, Trace]:
    torch.manual_seed(1)
    model = VisionTransformer(TINY.replace(class_token=False, global_pool="avg")).eval()
    with torch.no_grad():
        trace = model.explain(torch.randn(2, 3, 32, 32))
    return model, trace


# ---------------------------------------------------------------- grid and indices


def test_grid_is_row_major() -> None:
    values = torch.arange(6)
    assert analysis.grid(values, (2, 3)).tolist() == [[0, 1, 2], [3, 4, 5]]
    assert analysis.grid(torch.zeros(2, 4, 6), (2, 3)).shape == (2, 4, 2, 3)
    with pytest.raises(ValueError, match="without \\[CLS\\]"):
        analysis.grid(torch.zeros(7), (2, 3))


def test_upsample_map() -> None:
    small = torch.tensor([[1.0, 2.0], [3.0, 4.0]])
    big = analysis.upsample_map(small, (4, 4))
    assert big.tolist() == [[1, 1, 2, 2], [1, 1, 2, 2], [3, 3, 4, 4], [3, 3, 4, 4]]
    smooth = analysis.upsample_map(torch.full((2, 3, 2, 2), 0.25), (8, 6), mode="bilinear")
    assert smooth.shape == (2, 3, 8, 6)
    torch.testing.assert_close(smooth, torch.full((2, 3, 8, 6), 0.25))
    with pytest.raises(ValueError):
        analysis.upsample_map(small, (4, 4), mode="bicubic")  # type: ignore[arg-type]


@pytest.mark.parametrize("prefix", [0, 1])
def test_patch_index_round_trip(prefix: int) -> None:
    grid_size = (2, 3)
    seen = []
    for row in range(2):
        for col in range(3):
            index = analysis.patch_index(row, col, grid_size, prefix)
            assert analysis.token_to_patch(index, grid_size, prefix) == (row, col)
            seen.append(index)
    assert seen == list(range(prefix, prefix + 6))
    if prefix:
        assert analysis.token_to_patch(0, grid_size, prefix) is None
    with pytest.raises(ValueError):
        analysis.patch_index(2, 0, grid_size, prefix)
    with pytest.raises(ValueError):
        analysis.token_to_patch(prefix + 6, grid_size, prefix)


# ---------------------------------------------------------------- raw attention maps


def distinct_attention(batch: int = 2, heads: int = 3, tokens: int = 7) -> Tensor:
    """Every entry different, so a wrong index or reshape shows (rows need not sum to 1)."""
    return torch.arange(batch * heads * tokens * tokens, dtype=torch.float32).reshape(
        batch, heads, tokens, tokens
    )  # (B, heads, T, T)


def test_cls_attention_picks_cls_row_row_major() -> None:
    attention = distinct_attention()
    trace = make_trace([torch.zeros_like(attention), attention], (2, 3), prefix=1)
    one = analysis.cls_attention(trace, layer=1, head=1)
    assert one.shape == (2, 2, 3)
    every = analysis.cls_attention(trace, layer=-1)
    assert every.shape == (2, 3, 2, 3)
    for b in range(2):
        for row in range(2):
            for col in range(3):
                assert one[b, row, col] == attention[b, 1, 0, 1 + row * 3 + col]
                for h in range(3):
                    assert every[b, h, row, col] == attention[b, h, 0, 1 + row * 3 + col]
    assert analysis.cls_attention(trace, layer=0).abs().sum() == 0
    with pytest.raises(ValueError, match="Layer 2"):
        analysis.cls_attention(trace, layer=2)


def test_query_attention_of_a_patch() -> None:
    attention = distinct_attention()
    trace = make_trace([attention], (2, 3), prefix=1)
    query = analysis.patch_index(1, 2, (2, 3), 1)
    got = analysis.query_attention(trace, 0, query, head=2)
    torch.testing.assert_close(got, attention[:, 2, query, 1:].reshape(2, 2, 3))
    torch.testing.assert_close(analysis.query_attention(trace, 0, 0), analysis.cls_attention(trace, 0))
    with pytest.raises(ValueError, match="Token 7"):
        analysis.query_attention(trace, 0, 7)


def test_cls_attention_without_class_token_raises() -> None:
    trace = make_trace([distinct_attention(tokens=6)], (2, 3), prefix=0)
    with pytest.raises(ValueError, match="no \\[CLS\\] token.*query_attention.*rollout_map"):
        analysis.cls_attention(trace, 0)
    assert analysis.query_attention(trace, 0, 4, head=0).shape == (2, 2, 3)


# ---------------------------------------------------------------- rollout


def test_rollout_of_identity_stays_identity() -> None:
    eye = torch.eye(5).expand(2, 3, 5, 5)  # (B, heads, T, T)
    for fusion in analysis.HEAD_FUSIONS:
        rollout = analysis.attention_rollout([eye, eye, eye], head_fusion=fusion)
        torch.testing.assert_close(rollout, torch.eye(5).expand(2, 5, 5))


def test_rollout_of_uniform_attention_one_layer() -> None:
    uniform = torch.full((1, 2, 4, 4), 0.25)
    rollout = analysis.attention_rollout([uniform])
    torch.testing.assert_close(rollout[0], 0.5 * torch.full((4, 4), 0.25) + 0.5 * torch.eye(4))
    plain = analysis.attention_rollout([uniform], residual=False)[0]
    torch.testing.assert_close(plain, uniform[0, 0])


def test_rollout_multiplies_later_layers_on_the_left() -> None:
    first = torch.tensor([[0.5, 0.5], [0.2, 0.8]])
    second = torch.tensor([[1.0, 0.0], [0.3, 0.7]])
    layers = [first[None, None], second[None, None]]  # (1, 1, 2, 2) each
    plain = analysis.attention_rollout(layers, residual=False)[0]
    # second @ first by hand: row 1 = 0.3 * [0.5, 0.5] + 0.7 * [0.2, 0.8]
    torch.testing.assert_close(plain, torch.tensor([[0.5, 0.5], [0.29, 0.71]]))
    # with the residual: (first + I) / 2 = [[.75, .25], [.1, .9]], (second + I) / 2 = [[1, 0],
    # [.15, .85]]; row 1 of the product = 0.15 * [.75, .25] + 0.85 * [.1, .9]
    mixed = analysis.attention_rollout(layers)[0]
    torch.testing.assert_close(mixed, torch.tensor([[0.75, 0.25], [0.1975, 0.8025]]))
    only_second = analysis.attention_rollout(layers, residual=False, start_layer=1)[0]
    torch.testing.assert_close(only_second, second)
    with pytest.raises(ValueError):
        analysis.attention_rollout(layers, start_layer=2)


def test_rollout_head_fusion_and_discard() -> None:
    swap = torch.tensor([[0.0, 1.0], [1.0, 0.0]])
    heads = torch.stack([torch.eye(2), swap])[None]  # (1, 2, 2, 2)
    torch.testing.assert_close(
        analysis.attention_rollout([heads], head_fusion="max", residual=False)[0],
        torch.full((2, 2), 0.5),
    )
    torch.testing.assert_close(analysis.attention_rollout([heads], head_fusion="min")[0], torch.eye(2))
    # max of the identity and a uniform head: [[1, .5], [.5, 1]], renormalised; the mean of the two
    # heads would give [[.75, .25], [.25, .75]] (above, the max and the mean renormalise alike)
    halves = torch.stack([torch.eye(2), torch.full((2, 2), 0.5)])[None]
    torch.testing.assert_close(
        analysis.attention_rollout([halves], head_fusion="max", residual=False)[0],
        torch.tensor([[2 / 3, 1 / 3], [1 / 3, 2 / 3]]),
    )
    row = torch.tensor([0.1, 0.2, 0.3, 0.4])
    attention = row.expand(1, 1, 4, 4)  # every query has the same row
    kept = analysis.attention_rollout([attention], residual=False, discard_ratio=0.5)[0]
    torch.testing.assert_close(kept, torch.tensor([0.0, 0.0, 3 / 7, 4 / 7]).expand(4, 4))
    with pytest.raises(ValueError):
        analysis.attention_rollout([attention], head_fusion="sum")  # type: ignore[arg-type]


def test_rollout_on_model(tiny: tuple[VisionTransformer, Trace]) -> None:
    _, trace = tiny
    for attention in trace.attentions:
        torch.testing.assert_close(attention.sum(dim=-1), torch.ones(attention.shape[:-1]))
    rollout = analysis.attention_rollout(trace.attentions, discard_ratio=0.3)
    assert rollout.shape == (2, 17, 17)
    torch.testing.assert_close(rollout.sum(dim=-1), torch.ones(2, 17))
    heat = analysis.rollout_map(trace)
    assert heat.shape == (2, 4, 4)
    full = analysis.attention_rollout(trace.attentions)
    torch.testing.assert_close(heat, full[:, 0, 1:].reshape(2, 4, 4))


def test_no_cls_model(tiny_avg: tuple[VisionTransformer, Trace]) -> None:
    model, trace = tiny_avg
    assert trace.num_prefix_tokens == 0
    with pytest.raises(ValueError, match="no \\[CLS\\] token"):
        analysis.cls_attention(trace, 0)
    heat = analysis.rollout_map(trace, head_fusion="max")
    assert heat.shape == (2, 4, 4)
    torch.testing.assert_close(heat.sum(dim=(-2, -1)), torch.ones(2))  # mean of rows summing to 1
    full = analysis.attention_rollout(trace.attentions, head_fusion="max")  # (2, 16, 16): patches only
    torch.testing.assert_close(heat, full.mean(dim=1).reshape(2, 4, 4))  # the mean over the query rows
    lens = analysis.logit_lens(model, trace, softmax=False)
    torch.testing.assert_close(lens[-1], trace.logits)


def test_no_cls_rollout_map_is_the_mean_of_the_patch_rows() -> None:
    # 2x2 grid, no [CLS]: every patch attends to patch 1 (index 0). With the residual, patch 1
    # keeps itself and the three others keep half of themselves: rows [1, 0, 0, 0] and
    # [0.5, ..., 0.5 at i, ...]. Their mean: patch 1 gets (1 + 3 * 0.5) / 4, each other 0.5 / 4.
    attention = torch.zeros(1, 2, 4, 4)
    attention[..., 0] = 1.0
    trace = make_trace([attention], (2, 2), prefix=0)
    expected = torch.tensor([[[0.625, 0.125], [0.125, 0.125]]])
    torch.testing.assert_close(analysis.rollout_map(trace), expected)  # a flat map (0.25 each) also sums to 1


# ---------------------------------------------------------------- attention distance


def test_patch_distances() -> None:
    dist = analysis.patch_distances((2, 2), 8)
    side, diag = 8.0, 8.0 * math.sqrt(2)
    expected = torch.tensor(
        [[0, side, side, diag], [side, 0, diag, side], [side, diag, 0, side], [diag, side, side, 0]]
    )
    torch.testing.assert_close(dist, expected)


def test_mean_attention_distance_self_is_zero() -> None:
    attention = torch.eye(5).expand(2, 3, 5, 5)  # every token attends only to itself
    trace = make_trace([attention, attention], (2, 2), prefix=1)
    result = analysis.mean_attention_distance(trace, patch_size=8)
    assert result.shape == (2, 3)
    torch.testing.assert_close(result, torch.zeros(2, 3))


def test_mean_attention_distance_neighbour_is_one_patch() -> None:
    # grid 1x2 with [CLS]: tokens [CLS, left, right]; each patch gives half to [CLS], half to
    # the other patch; dropping [CLS] and renormalising leaves all weight on the neighbour.
    attention = torch.tensor([[1.0, 0.0, 0.0], [0.5, 0.0, 0.5], [0.5, 0.5, 0.0]])
    trace = make_trace([attention.expand(1, 2, 3, 3)], (1, 2), prefix=1)
    torch.testing.assert_close(analysis.mean_attention_distance(trace, patch_size=8), torch.full((1, 2), 8.0))
    # patch size read from the pixels (make_trace uses 8-pixel patches)
    torch.testing.assert_close(analysis.mean_attention_distance(trace), torch.full((1, 2), 8.0))


def test_mean_attention_distance_of_an_asymmetric_attention() -> None:
    # grid 1x3 with [CLS]: patch centres 8 px apart, so d(1, 2) = d(2, 3) = 8 and d(1, 3) = 16.
    # Head 1's rows (query patches 1, 2, 3) over [CLS, p1, p2, p3], each a query's own weights:
    #   p1: [0.5, 0.5, 0, 0]    -> patches [1, 0, 0]           -> 0 px
    #   p2: [0, 0, 0.25, 0.75]  -> patches [0, 0.25, 0.75]     -> 0.75 * 8 = 6 px
    #   p3: [0.2, 0.6, 0.2, 0]  -> patches [0.75, 0.25, 0] (renormalised by 0.8) -> 0.75 * 16 + 0.25 * 8 = 14 px
    # mean over the queries: 20 / 3. Head 2 attends to every token equally: the uniform distance, 64 / 9.
    # No column sums to what its row does, so normalising over the keys' axis instead gives other numbers.
    first = torch.tensor([[1.0, 0, 0, 0], [0.5, 0.5, 0, 0], [0, 0, 0.25, 0.75], [0.2, 0.6, 0.2, 0]])
    uniform = torch.full((4, 4), 0.25)
    trace = make_trace([torch.stack([first, uniform])[None]], (1, 3), prefix=1)
    result = analysis.mean_attention_distance(trace, patch_size=8)
    torch.testing.assert_close(result, torch.tensor([[20 / 3, 64 / 9]]))
    assert analysis.uniform_attention_distance((1, 3), 8) == pytest.approx(64 / 9)


def test_mean_attention_distance_on_model(tiny: tuple[VisionTransformer, Trace]) -> None:
    _, trace = tiny
    result = analysis.mean_attention_distance(trace, TINY.patch_size)
    assert result.shape == (TINY.depth, TINY.num_heads)
    assert (result > 0).all() and (result < 32 * math.sqrt(2)).all()


# ---------------------------------------------------------------- embeddings


def test_pos_embed_similarity_of_one_hot_is_identity() -> None:
    grid_h, grid_w = 2, 3
    table = torch.cat([torch.full((1, 8), 3.0), torch.eye(6, 8) * 2.0])  # [CLS] + one-hot rows
    similarity = analysis.pos_embed_similarity(table[None], (grid_h, grid_w), 1)
    assert similarity.shape == (2, 3, 2, 3)
    torch.testing.assert_close(similarity, torch.eye(6).reshape(2, 3, 2, 3))
    torch.testing.assert_close(analysis.pos_embed_similarity(table[1:], (grid_h, grid_w), 0), similarity)
    with pytest.raises(ValueError):
        analysis.pos_embed_similarity(table, (3, 3), 1)


def test_pos_embed_similarity_on_model(tiny: tuple[VisionTransformer, Trace]) -> None:
    model, _ = tiny
    similarity = analysis.pos_embed_similarity(model.pos_embed, TINY.grid_size, 1)
    assert similarity.shape == (4, 4, 4, 4)
    diagonal = similarity.reshape(16, 16).diagonal()  # (N,)
    torch.testing.assert_close(diagonal, torch.ones(16))


def test_patch_embed_components_of_one_direction() -> None:
    torch.manual_seed(0)
    direction = torch.randn(3 * 2 * 2)
    direction[5] = 10.0  # the entry of largest magnitude, positive
    scales = torch.randn(6)
    weight = (scales[:, None] * direction).reshape(6, 3, 2, 2)  # (D, C, P, P), rank one
    components, ratio = analysis.patch_embed_components(weight, k=4)
    assert components.shape == (4, 3, 2, 2) and ratio.shape == (4,)
    torch.testing.assert_close(ratio, torch.tensor([1.0, 0.0, 0.0, 0.0]), atol=1e-6, rtol=0)
    torch.testing.assert_close(components[0].flatten(), direction / direction.norm())
    flipped, _ = analysis.patch_embed_components(-weight, k=4)  # same filters up to sign
    torch.testing.assert_close(flipped[0], components[0])


def test_patch_embed_components_clips_k_and_is_orthonormal() -> None:
    torch.manual_seed(0)
    weight = torch.randn(5, 1, 3, 3)  # D = 5 filters of 9 numbers: at most 5 components
    components, ratio = analysis.patch_embed_components(weight, k=28)
    assert components.shape == (5, 1, 3, 3) and ratio.shape == (5,)
    flat = components.reshape(5, -1)  # (k, C*P*P)
    torch.testing.assert_close(flat @ flat.T, torch.eye(5), atol=1e-5, rtol=0)
    torch.testing.assert_close(ratio.sum(), torch.tensor(1.0))
    assert (ratio[:-1] >= ratio[1:]).all()
    signs = flat.gather(1, flat.abs().argmax(dim=1, keepdim=True))
    assert (signs > 0).all()


# ---------------------------------------------------------------- logit lens


def test_logit_lens_last_layer_is_the_prediction(tiny: tuple[VisionTransformer, Trace]) -> None:
    model, trace = tiny
    logits = analysis.logit_lens(model, trace, softmax=False)
    assert logits.shape == (TINY.depth + 1, 2, TINY.num_classes)
    torch.testing.assert_close(logits[-1], trace.logits)
    probs = analysis.logit_lens(model, trace)
    torch.testing.assert_close(probs.sum(dim=-1), torch.ones(TINY.depth + 1, 2))
    torch.testing.assert_close(probs[-1], trace.logits.softmax(dim=-1))
    top = trace.logits.argmax(dim=-1)  # (B,)
    ranks = analysis.class_rank_by_layer(probs, top)
    assert ranks.shape == (TINY.depth + 1, 2)
    assert ranks[-1].tolist() == [0, 0]


def test_class_rank_by_layer() -> None:
    lens = torch.tensor(
        [[[0.1, 0.7, 0.2], [0.5, 0.3, 0.2]], [[0.6, 0.3, 0.1], [0.2, 0.2, 0.6]]]
    )  # (depth + 1 = 2, B = 2, K = 3)
    assert analysis.class_rank_by_layer(lens, 1).tolist() == [[0, 1], [1, 1]]
    assert analysis.class_rank_by_layer(lens, torch.tensor([0, 2])).tolist() == [[2, 2], [0, 0]]
    with pytest.raises(ValueError):
        analysis.class_rank_by_layer(lens, 3)


def test_logit_lens_without_head_raises() -> None:
    model = VisionTransformer(TINY.replace(num_classes=0, depth=1)).eval()
    with torch.no_grad():
        trace = model.explain(torch.zeros(1, 3, 32, 32))
    with pytest.raises(ValueError, match="no classification head"):
        analysis.logit_lens(model, trace)


# ---------------------------------------------------------------- worked attention


def test_worked_attention_matches_trace(tiny: tuple[VisionTransformer, Trace]) -> None:
    model, trace = tiny
    layer, query, b = 1, analysis.patch_index(2, 1, TINY.grid_size, 1), 1
    parts = {
        head: analysis.worked_attention(model, trace, layer, head, query, batch_index=b)
        for head in range(TINY.num_heads)
    }
    head_dim, tokens = TINY.head_dim, TINY.num_tokens
    for head, worked in parts.items():
        assert worked["q"].shape == (head_dim,)
        assert worked["k"].shape == worked["v"].shape == (tokens, head_dim)
        assert worked["scores"].shape == worked["weights"].shape == (tokens,)
        torch.testing.assert_close(worked["weights"], trace.attentions[layer][b, head, query])
        torch.testing.assert_close(worked["weights"].sum(), torch.tensor(1.0))
        torch.testing.assert_close(worked["scores"], worked["k"] @ worked["q"] / math.sqrt(head_dim))
        torch.testing.assert_close(worked["output"], worked["weights"] @ worked["v"])
    # the heads' outputs, concatenated and projected, are the block's attention branch
    merged = torch.cat([parts[h]["output"] for h in range(TINY.num_heads)])  # (D,)
    with torch.no_grad():
        projected = model.blocks[layer].attn.proj(merged)
    torch.testing.assert_close(projected, trace.attn_outputs[layer][b, query])


def test_worked_attention_refuses_a_foreign_trace(tiny: tuple[VisionTransformer, Trace]) -> None:
    model, trace = tiny
    other = VisionTransformer(TINY).eval()  # different random weights
    with pytest.raises(RuntimeError, match="explain the image again"):
        analysis.worked_attention(other, trace, 0, 0, 0)
    with pytest.raises(ValueError, match="Head 4"):
        analysis.worked_attention(model, trace, 0, 4, 0)


def test_occlusion_reading_says_which_curve_fell_faster():
    import numpy as np

    from vitviz.analyses.analysis import occlusion_reading

    slow = np.array([0.6, 0.6, 0.58, 0.55, 0.3])
    fast = np.array([0.6, 0.2, 0.1, 0.05, 0.05])
    assert occlusion_reading(fast, slow)[0] == "rollout_faster"
    assert (
        occlusion_reading(slow, fast)[0] == "random_faster"
    )  # the default cat: attended patches hidden first, 'cat' holds
    kind, rollout_mean, random_mean = occlusion_reading(slow, slow + 0.01)
    assert kind == "similar" and abs(rollout_mean - slow.mean()) < 1e-9 and random_mean > rollout_mean


def test_an_occlusion_curve_starts_from_the_answer_it_is_given(tiny):
    """One quantity, one value (issue 55): given the unoccluded image's probabilities (the
    explained pass's, which the top-k bars show), the curve starts from them and runs only the
    occluded images; the other points are the curve's own."""
    model, trace = tiny
    order = analysis.occlusion_order(trace, "random")
    own = analysis.occlusion_curve(model, trace.pixels[:1], order, 4, target=3)
    given = torch.full((model.config.num_classes,), 0.01)
    given[3] = 0.91  # not what the model answers: the curve must take it, not recompute it
    started = analysis.occlusion_curve(model, trace.pixels[:1], order, 4, target=3, start=given)
    assert started[0] == pytest.approx(0.91) and started.shape == own.shape
    torch.testing.assert_close(started[1:], own[1:])
    with pytest.raises(ValueError, match="probabilities"):
        analysis.occlusion_curve(model, trace.pixels[:1], order, 4, start=given[1:])
