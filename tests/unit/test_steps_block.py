"""Step 6 (the encoder block) as data: its takeaways read the charts they sit under, its
controls hold only valid values, its slides are its figure rows, and the handout draws every
figure it describes."""

from __future__ import annotations

import html

import numpy as np
import pytest
import torch

from tests.unit.test_claims import both
from vitviz.analyses import analysis, claims
from vitviz.models.config import ViTConfig
from vitviz.models.model import VisionTransformer
from vitviz.render import handout
from vitviz.render.i18n import plain, t
from vitviz.steps import block, blocks
from vitviz.steps.subject import Subject

torch.set_num_threads(1)


def _subject(lang: str = "en", class_token: bool = True, depth: int = 2, mlp_ratio: float = 4.0) -> Subject:
    torch.manual_seed(0)
    config = ViTConfig(
        image_size=32, patch_size=8, num_classes=3, embed_dim=16, depth=depth, num_heads=2, mlp_ratio=mlp_ratio,
        class_token=class_token, global_pool="token" if class_token else "avg",
    )  # fmt: skip
    model = VisionTransformer(config).eval()
    image = np.random.default_rng(0).integers(0, 256, (32, 32, 3), dtype=np.uint8)
    with torch.inference_mode():
        trace = model.explain(torch.rand(1, 3, 32, 32))
    return Subject(model, image, trace, lang)


# ---- the takeaways' claims: numbers made so that each sentence must change --------------------


def test_the_block_keeps_the_shape_and_the_mlp_widens_or_narrows():
    widens = both(claims.block_shape((1, 65, 192), 768, 12))[0]
    assert "Each of the 12 blocks gives back the shape it takes, (1, 65, 192)" in widens
    assert "widens every token from 192 to 768 numbers (4 times)" in widens
    assert "squeezes every token from 192 to 96 numbers" in both(claims.block_shape((1, 65, 192), 96, 12))[0]


def test_the_layer_norm_line_says_what_the_spreads_say():
    before = np.array([1.0, 2.0, 3.0, 4.0])
    assert both(claims.layer_norm_takeaway(before, np.full(4, 4.0)))[0].startswith("norm1 gives every token nearly")
    narrower = both(claims.layer_norm_takeaway(before, np.array([3.0, 3.5, 4.0, 4.5])))[0]
    assert narrower.startswith("norm1 makes the tokens' lengths more alike, not equal") and "from 44.7% to" in narrower
    assert both(claims.layer_norm_takeaway(before, before * 2))[0].startswith("norm1 does not make")


def test_the_larger_branch_is_named():
    mlp = both(claims.branch_sizes(np.array([0.1, 0.3]), np.array([0.5, 0.7]), 3))[0]
    assert mlp.startswith("In layer 3 the MLP changes a token more than attention") and "averages 0.60" in mlp
    attn = both(claims.branch_sizes(np.array([0.9, 0.7]), np.array([0.5, 0.7]), 3))[0]
    assert attn.startswith("In layer 3 attention changes a token more than the MLP") and "averages 0.80" in attn


def test_the_gelu_line_counts_the_negative_inputs():
    assert both(claims.gelu_share(np.array([-1.0, -2.0, 3.0])))[0].startswith("67% of the 3 numbers")
    assert both(claims.gelu_share(np.array([-1.0, 2.0, 3.0])))[0].startswith("Only 33% of the 3 numbers")


# ---- the step ----------------------------------------------------------------------------------


def _takeaways(step: blocks.Step) -> dict[str, str]:
    return {figure.key: plain(figure.takeaway) for figure in step.figures()}


def test_every_figure_has_a_takeaway_read_from_its_own_numbers():
    subject = _subject()
    step = block.describe(subject, {"layer": 1, "query": 5})
    takeaways = _takeaways(step)
    assert list(takeaways) == [
        "block_diagram", "block_token_norms", "block_token_ratios", "block_gelu", "block_depth_norms",
        "block_depth_cosine",
    ]  # fmt: skip
    model, trace = subject.model, subject.trace
    assert "Each of the 2 blocks gives back the shape it takes, (1, 17, 16)" in takeaways["block_diagram"]
    assert "from 16 to 64 numbers (4 times)" in takeaways["block_diagram"]
    norms = analysis.block_token_norms(model, trace, 1)
    expected = claims.layer_norm_takeaway(norms["input"].numpy(), norms["norm1"].numpy())
    assert takeaways["block_token_norms"] == plain(claims.text(expected))
    ratios = claims.branch_sizes(norms["attn_ratio"].numpy(), norms["mlp_ratio"].numpy(), 2)
    assert takeaways["block_token_ratios"] == plain(claims.text(ratios))
    pre = analysis.mlp_preactivations(model, trace, 1, 5).numpy()
    assert takeaways["block_gelu"] == plain(claims.text(claims.gelu_share(pre)))
    stats = analysis.block_statistics(trace)
    stream, branches = claims.depth_trend(
        *(stats[k].numpy() for k in ("residual_norm", "attn_ratio", "mlp_ratio", "cosine"))
    )
    assert (takeaways["block_depth_norms"], takeaways["block_depth_cosine"]) == (
        plain(claims.text(stream)),
        plain(claims.text(branches)),
    )
    assert step.shape == "(1, 17, 16)"
    metrics = next(b for b in step.blocks if isinstance(b, blocks.Metrics))
    assert metrics.items[0][1] == f"{float(stats['attn_ratio'][1]):.2f}" and len(metrics.helps) == 3


def test_a_narrow_mlp_is_said_to_squeeze():
    takeaways = _takeaways(block.describe(_subject(mlp_ratio=0.5), {}))
    assert "squeezes every token from 16 to 8 numbers" in takeaways["block_diagram"]


def _box_labels(step: blocks.Step) -> list[str]:
    diagram = next(figure for figure in step.figures() if figure.key == "block_diagram")
    layout = diagram.figure.to_dict()["layout"]
    return [a["text"] for a in layout["annotations"] if not a.get("showarrow", True) and a.get("x") == 0]


@pytest.mark.parametrize(("mlp_ratio", "width"), [(4.0, "4D"), (2.0, "2D"), (0.5, "0.5D"), (1.0, "D")])
@pytest.mark.parametrize("lang", ["en", "ko"])
def test_the_diagram_s_mlp_boxes_say_the_model_s_own_width(mlp_ratio, width, lang):
    labels = _box_labels(block.describe(_subject(lang, mlp_ratio=mlp_ratio), {}))
    assert f"fc1: Linear D → {width}" in labels and f"fc2: Linear {width} → D" in labels, labels


def test_the_mlp_width_is_a_multiple_of_d_where_it_is_one():
    assert [block.mlp_width(h, 768) for h in (3072, 1536, 384, 768, 1000)] == ["4D", "2D", "0.5D", "D", "1000"]


@pytest.mark.parametrize(
    ("choices", "layer", "query"),
    [({}, 0, 11), ({"layer": 99, "query": 5000}, 1, 16), ({"layer": -1, "query": -4}, 0, 0),
     ({"layer": "1", "query": None}, 0, 11)],
)  # fmt: skip
def test_the_controls_hold_only_valid_values(choices, layer, query):
    step = block.describe(_subject(), choices)
    by_key = {control.key: control for control in step.controls()}
    assert (by_key["layer"].value, by_key["query"].value) == (layer, query)
    assert by_key["layer"].options == (0, 1) and by_key["query"].options == tuple(range(17))
    assert f"Layer {layer + 1} (blocks[{layer}])" in by_key["layer"].static


def test_slides_are_the_figure_rows():
    slides = block.describe(_subject(), {}).slides()
    # the line charts side by side on the page are a slide each: their legends need a slide's width
    assert [[figure.key for figure in slide.figures] for slide in slides] == [
        ["block_diagram"], ["block_token_norms"], ["block_token_ratios"], ["block_gelu"], ["block_depth_norms"],
        ["block_depth_cosine"],
    ]  # fmt: skip
    assert slides[0].controls == () and [c.key for c in slides[1].controls] == ["layer", "query"]


def test_a_model_without_cls_draws_no_cls_twins():
    step = block.describe(_subject(class_token=False), {})
    depth = next(f for f in step.figures() if f.key == "block_depth_norms").figure
    assert len(depth.data) == 3 and not any("[CLS]" in trace.name for trace in depth.data)
    assert any(isinstance(b, blocks.Text) and b.text == t("block.no_cls") for b in step.blocks)


def test_a_model_without_blocks_says_so():
    step = block.describe(_subject(depth=0), {})
    assert step.figures() == [] and step.blocks == (blocks.Text(t("block.no_blocks"), role="info"),)


def test_korean_takeaways_are_korean():
    assert _takeaways(block.describe(_subject("ko"), {}))["block_diagram"].startswith("블록 2개는")


def test_the_handout_draws_every_figure_of_the_step():
    step = block.describe(_subject(), {})
    page = handout._Page("en")
    page.described(6, 9, step)
    markup = html.unescape(page.html())
    for figure in step.figures():
        assert f'id="fig-{figure.key.replace("_", "-")}"' in markup
        assert plain(figure.takeaway) in markup
    assert "Layer: Layer 1 (blocks[0]) · Token (for the GELU histogram): Token 11: patch 11 (row 3, col 3)" in markup
    assert "Download" not in markup
