"""Pages 6 (encoder block) and 7 (prediction): AppTests, and the vitviz functions behind them.

Unit tests use hand-made traces with known answers and a tiny random ViT (32 px, 8 px patches,
4x4 grid, D = 32, depth 2); the AppTests open both pages on the default model and on ViT-B/16.
"""

from __future__ import annotations

import math
from types import SimpleNamespace

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from streamlit.testing.v1 import AppTest

from tests.apptest import TIMEOUT, charts, errors, open_page, open_page_in_one_run
from tests.apptest import figure as _figure
from tests.apptest import figure_array as _array
from tests.figure_reading import residual_skips
from vitviz.analyses import analysis
from vitviz.app import tour
from vitviz.models import zoo
from vitviz.models.config import ViTConfig
from vitviz.models.model import VisionTransformer, flops_per_image
from vitviz.models.trace import Trace
from vitviz.models.zoo import VIT_B16
from vitviz.render import i18n, plots, tables

torch.set_num_threads(1)  # a training job shares the CPU; these tensors are tiny

TINY = ViTConfig(image_size=32, patch_size=8, num_classes=5, embed_dim=32, depth=2, num_heads=4)
BLOCK = "app_pages/6_block.py"
PREDICTION = "app_pages/7_prediction.py"


@pytest.fixture(scope="module")
def tiny() -> tuple[VisionTransformer, Trace]:
    torch.manual_seed(0)
    model = VisionTransformer(TINY).eval()
    with torch.no_grad():
        trace = model.explain(torch.randn(1, 3, 32, 32))
    return model, trace


def hand_trace(hidden: list[torch.Tensor], attn: list[torch.Tensor], mlp: list[torch.Tensor], prefix: int = 1) -> Trace:
    """A Trace with hand-made residual streams and branches on a 2x2 grid; the rest is zeros."""
    batch, tokens, dim = hidden[0].shape
    depth = len(attn)
    uniform = torch.full((batch, 1, tokens, tokens), 1.0 / tokens)
    return Trace(
        pixels=torch.zeros(batch, 3, 16, 16),
        patches=torch.zeros(batch, 4, 192),
        patch_tokens=torch.zeros(batch, 4, dim),
        tokens=hidden[0],
        hidden_states=hidden,
        attentions=[uniform] * depth,
        attn_outputs=attn,
        mlp_outputs=mlp,
        pre_logits=torch.zeros(batch, dim),
        logits=torch.zeros(batch, 3),
        grid_size=(2, 2),
        num_prefix_tokens=prefix,
    )


# ---- block statistics ---------------------------------------------------------------------------


def test_block_statistics_zero_branches_give_ratio_zero_and_cosine_one() -> None:
    x = torch.randn(1, 5, 8)
    zero = torch.zeros_like(x)
    stats = analysis.block_statistics(hand_trace([x, x, x], [zero, zero], [zero, zero]))
    assert set(stats) == {"residual_norm", "attn_norm", "mlp_norm", "output_norm", "attn_ratio", "mlp_ratio", "cosine"}
    assert all(v.shape == (2,) for v in stats.values())
    torch.testing.assert_close(stats["attn_ratio"], torch.zeros(2))
    torch.testing.assert_close(stats["mlp_ratio"], torch.zeros(2))
    torch.testing.assert_close(stats["cosine"], torch.ones(2))
    patch_norm = x[0, 1:].norm(dim=-1).mean()  # the mean leaves [CLS] out
    torch.testing.assert_close(stats["residual_norm"], patch_norm.repeat(2))


def test_block_statistics_orthogonal_branch_known_answers() -> None:
    e1 = torch.tensor([1.0, 0.0, 0.0]).expand(1, 5, 3)  # every token = e1
    e2 = torch.tensor([0.0, 2.0, 0.0]).expand(1, 5, 3)
    zero = torch.zeros(1, 5, 3)
    stats = analysis.block_statistics(hand_trace([e1, e1 + e2], [e2], [zero]))
    torch.testing.assert_close(stats["attn_ratio"], torch.tensor([2.0]))  # ||e2|| / ||e1||
    torch.testing.assert_close(stats["attn_norm"], torch.tensor([2.0]))
    torch.testing.assert_close(stats["cosine"], torch.tensor([1 / math.sqrt(5)]))  # cos(e1, e1 + e2)
    torch.testing.assert_close(stats["output_norm"], torch.tensor([math.sqrt(5)]))


def test_block_statistics_for_one_token_reads_only_that_token() -> None:
    x = torch.ones(1, 5, 4)
    attn = torch.zeros(1, 5, 4)
    attn[0, 0] = 3.0  # only [CLS] gets an attention update
    stats_cls = analysis.block_statistics(hand_trace([x, x + attn], [attn], [torch.zeros_like(x)]), token=0)
    stats_patches = analysis.block_statistics(hand_trace([x, x + attn], [attn], [torch.zeros_like(x)]))
    torch.testing.assert_close(stats_cls["attn_ratio"], torch.tensor([3.0]))
    torch.testing.assert_close(stats_patches["attn_ratio"], torch.tensor([0.0]))
    with pytest.raises(ValueError, match="Token 9"):
        analysis.block_statistics(hand_trace([x, x], [attn], [attn]), token=9)


def test_block_statistics_on_a_model_chain_up(tiny) -> None:
    _, trace = tiny
    stats = analysis.block_statistics(trace)
    torch.testing.assert_close(stats["output_norm"][:-1], stats["residual_norm"][1:])  # out of l = into l + 1
    assert ((stats["cosine"] > -1.0001) & (stats["cosine"] < 1.0001)).all()


def test_block_token_norms_recompute_the_layer_norms(tiny) -> None:
    model, trace = tiny
    norms = analysis.block_token_norms(model, trace, 1)
    tokens = trace.hidden_states[0].shape[1]
    assert all(v.shape == (tokens,) for v in norms.values())
    # LayerNorm with its initial scale 1 and shift 0 gives std 1 and length sqrt(D)
    torch.testing.assert_close(norms["norm1_std"], torch.ones(tokens), atol=1e-3, rtol=0)
    torch.testing.assert_close(norms["norm1"], torch.full((tokens,), math.sqrt(32)), atol=1e-2, rtol=0)
    torch.testing.assert_close(norms["input"], trace.hidden_states[1][0].norm(dim=-1))
    torch.testing.assert_close(norms["output"], trace.hidden_states[2][0].norm(dim=-1))
    torch.testing.assert_close(norms["mid"], (trace.hidden_states[1] + trace.attn_outputs[1])[0].norm(dim=-1))
    torch.testing.assert_close(norms["attn_ratio"], norms["attn"] / norms["input"])


def test_mlp_preactivations_rebuild_the_mlp_branch(tiny) -> None:
    model, trace = tiny
    for layer, token in ((0, 0), (1, 7), (-1, -1)):
        pre = analysis.mlp_preactivations(model, trace, layer, token)
        assert pre.shape == (model.config.mlp_hidden_dim,)
        with torch.no_grad():
            rebuilt = model.blocks[layer].mlp.fc2(F.gelu(pre))
        torch.testing.assert_close(rebuilt, trace.mlp_outputs[layer][0, token], atol=1e-5, rtol=1e-4)


def test_activation_curves_known_values() -> None:
    curves = analysis.activation_curves(-4.0, 4.0, 9)
    torch.testing.assert_close(curves["x"], torch.arange(-4.0, 5.0))
    assert curves["gelu"][4] == 0 and curves["relu"][4] == 0
    assert abs(float(curves["gelu"][-1]) - 4.0) < 1e-3 and abs(float(curves["gelu"][0])) < 1e-3
    torch.testing.assert_close(curves["gelu"][5], torch.tensor(0.8413447))  # 1 * Phi(1)
    torch.testing.assert_close(curves["relu"], curves["x"].clamp_min(0))
    with pytest.raises(ValueError):
        analysis.activation_curves(1.0, 1.0)


def test_block_shapes_match_the_modules(tiny) -> None:
    model, trace = tiny
    shapes = dict(analysis.block_shapes(model, trace))
    assert list(shapes) == list(analysis.BLOCK_STEPS)
    assert shapes["input"] == shapes["add2"] == (1, 17, 32)
    assert shapes["qkv"] == (1, 17, 96)
    assert shapes["attention"] == tuple(trace.attentions[0].shape) == (1, 4, 17, 17)
    assert shapes["fc1"] == shapes["gelu"] == (1, 17, 128)


# ---- logit lens summaries ----------------------------------------------------------------------


def test_logit_lens_top1_table_agrees_with_the_lens(tiny) -> None:
    model, trace = tiny
    lens = analysis.logit_lens(model, trace)  # (depth + 1, 1, K)
    classes, scores = analysis.logit_lens_top1(lens)
    assert classes.shape == scores.shape == (trace.depth + 1,)
    torch.testing.assert_close(classes, lens[:, 0].argmax(dim=-1))
    torch.testing.assert_close(scores, lens[:, 0].amax(dim=-1))
    assert int(classes[-1]) == int(trace.logits[0].argmax())  # the last row is the prediction
    ranks = analysis.class_rank_by_layer(lens, classes[-1])[:, 0]
    assert (ranks[classes == classes[-1]] == 0).all()


def test_logit_lens_tracks_follow_the_final_top_classes(tiny) -> None:
    model, trace = tiny
    lens = analysis.logit_lens(model, trace)
    classes, scores = analysis.logit_lens_tracks(lens, k=3)  # the final top 3, then any other leader
    assert classes.shape[0] >= 3 and scores.shape == (trace.depth + 1, classes.shape[0])
    torch.testing.assert_close(classes[:3], trace.logits[0].topk(3).indices)
    torch.testing.assert_close(scores[-1, :3], trace.logits[0].softmax(-1).topk(3).values, atol=1e-5, rtol=1e-4)
    assert analysis.logit_lens_tracks(lens, k=50)[0].numel() == TINY.num_classes


# ---- occlusion ---------------------------------------------------------------------------------


def test_occlusion_order_from_rollout_is_a_permutation_most_attended_first(tiny) -> None:
    _, trace = tiny
    order = analysis.occlusion_order(trace, "rollout")
    shares = analysis.rollout_map(trace)[0].flatten()
    assert torch.equal(order.sort().values, torch.arange(16))
    assert int(order[0]) == int(shares.argmax())
    assert (shares[order][:-1] >= shares[order][1:]).all()  # never increases


def test_occlusion_order_rollout_hand_made() -> None:
    attention = torch.eye(5)[None, None].clone()  # every token keeps itself
    attention[0, 0, 0] = torch.tensor([0.1, 0.0, 0.0, 0.7, 0.2])  # [CLS] looks at patches 2, then 3
    trace = hand_trace([torch.zeros(1, 5, 4)] * 2, [torch.zeros(1, 5, 4)], [torch.zeros(1, 5, 4)])
    trace.attentions = [attention]
    assert analysis.occlusion_order(trace, "rollout").tolist() == [2, 3, 0, 1]


def test_occlusion_order_random_is_seeded(tiny) -> None:
    _, trace = tiny
    first, again = analysis.occlusion_order(trace, "random", seed=3), analysis.occlusion_order(trace, "random", seed=3)
    assert torch.equal(first, again)
    assert torch.equal(first.sort().values, torch.arange(16))
    assert not torch.equal(first, analysis.occlusion_order(trace, "random", seed=4))
    with pytest.raises(ValueError, match="kind"):
        analysis.occlusion_order(trace, "saliency")  # type: ignore[arg-type]


def test_occlusion_counts_and_masks() -> None:
    counts = analysis.occlusion_counts(196, 7)
    assert counts[0] == 0 and counts[-1] == 196 and counts.shape == (8,)
    assert (counts[1:] >= counts[:-1]).all()
    order = torch.tensor([3, 0, 2, 1])
    masks = analysis.occlusion_masks(order, 4)  # hide 0, 1, 2, 3, 4 patches
    assert masks.tolist() == [
        [False, False, False, False],
        [False, False, False, True],
        [True, False, False, True],
        [True, False, True, True],
        [True, True, True, True],
    ]
    with pytest.raises(ValueError, match="permutation"):
        analysis.occlusion_masks(torch.tensor([0, 0, 1, 2]), 2)
    with pytest.raises(ValueError, match="steps"):
        analysis.occlusion_counts(4, 0)


def test_occlude_fills_exactly_the_hidden_patches() -> None:
    pixels = torch.randn(1, 3, 16, 16)
    hidden = torch.tensor([[False, True, False, False]])  # patch 1: row 0, col 1
    out = analysis.occlude(pixels, hidden, 8, fill=0.5)
    assert out.shape == (1, 3, 16, 16)
    assert (out[0, :, :8, 8:] == 0.5).all()
    torch.testing.assert_close(out[0, :, 8:, :], pixels[0, :, 8:, :])
    torch.testing.assert_close(out[0, :, :8, :8], pixels[0, :, :8, :8])


def test_occlusion_curve_end_points(tiny) -> None:
    model, trace = tiny
    pixels = trace.pixels
    order = analysis.occlusion_order(trace, "rollout")
    curve = analysis.occlusion_curve(model, pixels, order, steps=4)
    assert curve.shape == (5,)
    with torch.no_grad():
        probs = model(pixels).softmax(-1)[0]
        mean_probs = model(torch.zeros_like(pixels)).softmax(-1)[0]  # 0 = the dataset mean everywhere
    target = int(probs.argmax())
    torch.testing.assert_close(curve[0], probs[target], atol=1e-5, rtol=1e-4)
    torch.testing.assert_close(curve[-1], mean_probs[target], atol=1e-5, rtol=1e-4)
    other = analysis.occlusion_curve(model, pixels, order, steps=2, target=(target + 1) % 5)
    torch.testing.assert_close(other[0], probs[(target + 1) % 5], atol=1e-5, rtol=1e-4)
    with pytest.raises(ValueError, match="patches"):
        analysis.occlusion_curve(model, pixels, torch.arange(4), steps=2)


def test_occlusion_steps_fit_the_budget() -> None:
    vit_b = SimpleNamespace(config=VIT_B16)
    steps = analysis.occlusion_steps(vit_b)  # type: ignore[arg-type]
    assert 4 <= steps <= 20
    assert (steps + 1) * flops_per_image(VIT_B16) <= 250e9
    tiny = SimpleNamespace(config=TINY)
    assert analysis.occlusion_steps(tiny) == 16  # type: ignore[arg-type]  # cheap: one step per patch


# ---- figures -----------------------------------------------------------------------------------


def test_block_figures() -> None:
    fig = plots.block_diagram(
        [("a", "(1, 2)", "norm"), ("b", "(1, 3)", "mlp"), ("+", "(1, 2)", "add")], residuals=[(0, 2)]
    )
    texts = [a.text for a in fig.layout.annotations]
    assert "a" in texts and "<b>(1, 3)</b>" in texts
    assert len([s for s in fig.layout.shapes if s.type == "rect"]) == 3
    assert len([s for s in fig.layout.shapes if s.type == "path"]) == 1
    lines = plots.multi_line([1, 2], {"x": np.array([1.0, 2.0]), "y": np.array([3.0, 4.0])}, dashed=["y"], marked_x=1)
    assert [t.name for t in lines.data] == ["x", "y"] and lines.data[1].line.dash == "dash"
    gelu = plots.gelu_histogram(np.zeros(3), np.zeros(3), np.zeros(3), np.arange(10.0))
    assert {t.type for t in gelu.data} == {"histogram", "scatter"}
    row = plots.image_row([np.zeros((4, 4, 3)), np.ones((4, 4, 3))], ["a", "b"])
    (picture,) = row.data  # both pictures in one, a white column between them, each titled over its own
    assert np.asarray(picture.z)[:, :, 0].tolist() == [[0] * 4 + [255] * 5] * 4
    assert [(a.text, a.x, a.y) for a in row.layout.annotations] == [("a", 1.5, -0.5), ("b", 6.5, -0.5)]
    assert tables.columns_csv({"a": [1, 2], "b, c": np.array([0.5, 0.25])}) == 'a,"b, c"\n1,0.5\n2,0.25\n'
    with pytest.raises(ValueError):
        tables.columns_csv({"a": [1], "b": [1, 2]})


# ---- the pages in AppTest ----------------------------------------------------------------------


@pytest.mark.parametrize("lang", ["en", "ko"])
def test_the_block_diagram_wires_each_skip_from_the_stream_it_adds_back(lang: str) -> None:
    at = open_page_in_one_run(BLOCK, lang=lang)
    assert errors(at) == []
    step = {name: i18n.t(f"block.step.{name}", lang) for name in ("input", "add1", "add2")}
    skips = residual_skips(_figure(at, "block_diagram")["layout"])
    # pre-LN: x + attention(norm1(x)), then that sum + mlp(norm2(that sum)); the second skip never starts at x
    assert skips == [(step["input"], step["add1"]), (step["add1"], step["add2"])]


def test_block_page_default_model_layer_widget_changes_the_figures() -> None:
    at = open_page(BLOCK)
    assert errors(at) == []
    layer = at.select_slider(key="layer")
    assert layer.value == 0
    assert at.number_input(key="query") is not None
    before = [_array(t["y"]) for t in _figure(at, "block_token_norms")["data"]]
    before_gelu = _array(_figure(at, "block_gelu")["data"][0]["x"])
    layer.set_value(1).run()
    assert errors(at) == []
    assert at.session_state["layer"] == 1
    after = [_array(t["y"]) for t in _figure(at, "block_token_norms")["data"]]
    assert not np.allclose(before[0], after[0])
    assert not np.array_equal(before_gelu, _array(_figure(at, "block_gelu")["data"][0]["x"]))
    for key in ("block_diagram", "block_token_ratios", "block_depth_norms", "block_depth_cosine"):
        _figure(at, key)
    assert len(at.main.get("download_button")) == 2


def test_prediction_page_default_model_topk_slider_changes_the_bars() -> None:
    at = open_page(PREDICTION)
    assert errors(at) == []
    slider = at.slider(key="topk")
    assert slider.value == 5
    assert len(_array(_figure(at, "prediction_topk")["data"][0]["y"])) == 5
    slider.set_value(3).run()
    assert errors(at) == []
    assert len(_array(_figure(at, "prediction_topk")["data"][0]["y"])) == 3
    occlusion = _figure(at, "prediction_occlusion")["data"]
    assert len(occlusion) == 2  # rollout order and random order
    assert len(at.main.get("download_button")) == 3


@pytest.mark.parametrize("page", [BLOCK, PREDICTION])
def test_pages_on_vit_b16(page: str) -> None:
    at = open_page(page, model="untrained-vit-b16")
    assert errors(at) == []
    assert charts(at)


def _standalone(page: str, model_path: str, lang: str = "en") -> AppTest:
    """Open one page through a shared link (?step=...) in one run: AppTest formats widget options
    outside the script, in English, so a Korean page is only run once (as in test_app_attention)."""
    step = [script for script, _, _ in tour.TOUR].index(page)
    at = AppTest.from_file(str(tour.ROOT / "app.py"), default_timeout=TIMEOUT)
    at.query_params["step"] = str(step)
    at.query_params["lang"] = lang
    at.session_state["custom_model"] = model_path
    at.run()
    assert any(t.value == i18n.t(tour.TOUR[step][1], lang) for t in at.title), "the page did not open"
    return at


def test_model_without_cls_token_in_korean(tmp_path) -> None:
    torch.manual_seed(0)
    config = TINY.replace(class_token=False, global_pool="avg", num_classes=3)
    path = tmp_path / "no_cls.safetensors"
    zoo.save(VisionTransformer(config), path)
    block = _standalone(BLOCK, str(path), "ko")
    assert errors(block) == []
    assert any("[CLS] 토큰이 없" in caption.value for caption in block.caption)
    names = [t["name"] for t in _figure(block, "block_depth_norms")["data"]]
    assert len(names) == 3 and not any("[CLS]" in name for name in names)  # no dashed [CLS] twins
    prediction = _standalone(PREDICTION, str(path), "ko")
    assert errors(prediction) == []
    assert any("[CLS] 토큰이 없습니다" in m.value for m in prediction.markdown)
    assert len(_figure(prediction, "prediction_occlusion")["data"]) == 2


def test_model_without_head_says_so(tmp_path) -> None:
    path = tmp_path / "features.safetensors"
    zoo.save(VisionTransformer(TINY.replace(num_classes=0)), path)
    at = _standalone(PREDICTION, str(path))
    assert errors(at) == []
    assert any("no classification head" in info.value for info in at.info)
    assert _standalone(BLOCK, str(path)).exception == []


def test_occlusion_steps_hide_the_same_number_of_patches_at_every_step_where_they_can() -> None:
    cifar = SimpleNamespace(config=ViTConfig(image_size=32, patch_size=4, embed_dim=192, depth=6, num_heads=3))
    assert analysis.occlusion_steps(cifar) == 16  # type: ignore[arg-type]  # 64 patches: 4 a step, not 3 or 4
    counts = analysis.occlusion_counts(64, 16)
    assert set((counts[1:] - counts[:-1]).tolist()) == {4}
    grey = SimpleNamespace(
        config=ViTConfig(image_size=28, patch_size=4, in_chans=1, embed_dim=128, depth=3, num_heads=4)
    )
    assert analysis.occlusion_steps(grey) == 20  # type: ignore[arg-type]  # 49 patches: 7 is too few, 20 stays
    vit_b = SimpleNamespace(config=VIT_B16)
    assert analysis.occlusion_steps(vit_b) == 6  # type: ignore[arg-type]  # 196 patches: 4 is too few, 6 stays
