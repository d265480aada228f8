"""Every sentence that states a fact about the model or the image is read from the numbers.

Each test builds numbers (or a small model) for which the sentence must say one thing, then
numbers for which the opposite is true, and checks that the sentence changes, in English and in
Korean. docs/claims.md lists the sentences and points here.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch

from tests.app.test_korean_pages import english_words
from vitviz.analyses import analysis, claims
from vitviz.models.config import ViTConfig
from vitviz.models.model import VisionTransformer
from vitviz.models.trace import Trace
from vitviz.render import plots

torch.set_num_threads(1)


def both(claim) -> tuple[str, str]:
    """The sentence in English and in Korean; the Korean one keeps no stray English word."""
    en, ko = claims.text(claim, "en"), claims.text(claim, "ko")
    assert english_words(ko) == [], ko
    return en, ko


def keys(found) -> list[str]:
    return [c.key for c in found]


# ---- page 5: mean attention distance ----------------------------------------------------------


def attention_trace(attention: torch.Tensor, grid: int = 4, patch: int = 8) -> Trace:
    """A Trace that holds only what mean_attention_distance reads: patch-to-patch attention
    (depth, heads, N, N) on a grid x grid image of patch-pixel patches, no [CLS]."""
    depth, heads, n, _ = attention.shape
    zeros = torch.zeros(1, n, 4)
    return Trace(
        pixels=torch.zeros(1, 3, grid * patch, grid * patch),
        patches=zeros,
        patch_tokens=zeros,
        tokens=zeros,
        hidden_states=[zeros] * (depth + 1),
        attentions=[attention[layer][None] for layer in range(depth)],
        attn_outputs=[zeros] * depth,
        mlp_outputs=[zeros] * depth,
        pre_logits=torch.zeros(1, 4),
        logits=torch.zeros(1, 3),
        grid_size=(grid, grid),
        num_prefix_tokens=0,
    )


def distance_claims(attention: torch.Tensor) -> list[claims.Claim]:
    trace = attention_trace(attention)
    distances = analysis.mean_attention_distance(trace, 8).numpy()
    return claims.attention_distance(distances, analysis.uniform_attention_distance((4, 4), 8), 32)


def test_heads_that_attend_to_themselves_are_all_local_and_uniform_heads_none():
    n = 16
    own = torch.eye(n).expand(2, 3, n, n)  # every patch looks only at itself: distance 0
    even = torch.full((2, 3, n, n), 1.0 / n)  # every patch looks everywhere equally
    local, spread = distance_claims(own), distance_claims(even)
    assert keys(local)[1] == "claims.distance.all"
    assert keys(spread)[1] == "claims.distance.none_near"
    en_local, ko_local = both(local)
    en_spread, ko_spread = both(spread)
    assert "All 6 heads are local" in en_local and "모두 국소적" in ko_local
    assert "No head is local" in en_spread and "국소적인 헤드는 없습니다" in ko_spread
    assert "100% to 100%" in en_spread  # exactly the uniform distance


def test_local_heads_are_named_and_the_rest_measured_against_uniform():
    uniform = 16.5
    distances = np.array([[3.0, 12.0, 14.0], [15.0, 16.0, 4.0]])  # two heads under 8.25 px
    found = claims.attention_distance(distances, uniform, 32)
    assert keys(found)[1] == "claims.distance.some"
    en, ko = both(found)
    assert "2 of the 6 heads are local: layer 1 head 1, layer 2 head 3" in en
    assert "1층 헤드 1, 2층 헤드 3" in ko
    assert "between 12.0 and 16.0 px, 73% to 97% of the uniform distance" in en
    assert "under 8.2 px" in en or "under 8.3 px" in en  # half the uniform distance
    assert "26% of the image's 32 px side" in en


def test_far_heads_short_of_uniform_are_not_called_near_uniform():
    found = claims.attention_distance(np.array([[11.6, 12.0, 13.0], [16.0, 16.5, 16.6]]), 16.5, 32)
    assert keys(found)[1] == "claims.distance.none"  # 70% of uniform is not "almost even"
    en, _ = both(found)
    assert "70% to 101%" in en and "layer 1 head 1" in en


def test_many_local_heads_are_counted_not_all_named():
    distances = np.full((4, 4), 2.0)
    distances[3, 3] = 16.0
    found = claims.attention_distance(distances, 16.5, 32)
    assert keys(found)[1] == "claims.distance.some_more"
    en, _ = both(found)
    assert "15 of the 16 heads are local" in en and "and 9 more" in en


def test_a_head_exactly_at_the_limit_is_not_local():
    # uniform 16 px: "local" means under 8 px, so the head at 8.0 px is one of the others
    found = claims.attention_distance(np.array([[8.0, 3.0], [12.0, 16.0]]), 16.0, 32)
    assert found[1].key == "claims.distance.some" and found[1].values["k"] == 1
    en, _ = both(found)
    assert "1 of the 4 heads are local: layer 1 head 2." in en
    assert "between 8.0 and 16.0 px, 50% to 100% of the uniform distance" in en


@pytest.mark.parametrize(
    "first, last, key",
    [(4.0, 15.0, "claims.distance.depth_farther"), (15.0, 4.0, "claims.distance.depth_nearer"),
     (10.0, 10.5, "claims.distance.depth_same")],
)  # fmt: skip
def test_whether_deeper_layers_look_farther_is_read_from_the_first_and_last_layer(first, last, key):
    distances = np.array([[first, first], [9.0, 9.0], [last, last]])
    found = claims.attention_distance(distances, 16.5, 32)
    assert keys(found)[-1] == key
    both(found)


def test_a_single_layer_says_nothing_about_depth():
    assert not any("depth" in k for k in keys(claims.attention_distance(np.array([[5.0, 6.0]]), 16.5, 32)))


# ---- page 7: occlusion -------------------------------------------------------------------------

FRACTIONS = np.linspace(0, 1, 11)


def test_curves_that_rise_first_are_said_to_rise():
    # the upload: both curves climb from 75% to 94% before they fall
    red = np.array([0.75, 0.90, 0.94, 0.80, 0.60, 0.40, 0.30, 0.20, 0.10, 0.05, 0.02])
    grey = np.array([0.75, 0.85, 0.94, 0.92, 0.90, 0.80, 0.70, 0.60, 0.50, 0.40, 0.30])
    found = claims.occlusion(FRACTIONS, red, grey)
    assert keys(found) == [
        "claims.occlusion.rise_both",
        "claims.occlusion.fall_both",
        "claims.occlusion.area_red_lower",
    ]
    en, ko = both(found)
    assert "Both curves first rise" in en and "from 75% to 94%" in en
    assert "두 곡선 모두 처음에는 올라갑니다" in ko
    assert "half its start (38%) once 60% of the patches are hidden, the grey one once 100%" in en


def test_curves_that_only_fall_are_not_said_to_rise_and_the_lower_area_is_named():
    red = np.linspace(0.9, 0.1, 11)
    grey = np.array([0.9, 0.3, 0.2, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1])  # random order hurts more
    found = claims.occlusion(FRACTIONS, red, grey)
    assert not any("rise" in k for k in keys(found))
    assert keys(found)[-1] == "claims.occlusion.area_grey_lower"
    en, ko = both(found)
    assert "the grey one is lower (mean probability 20% against 50% in red" in en
    assert "회색 곡선이 더 낮습니다" in ko


def test_a_rise_after_a_fall_is_not_a_first_rise():
    red = np.array([0.8, 0.5, 0.3, 0.95, 0.9, 0.8, 0.7, 0.6, 0.5, 0.4, 0.3])
    found = claims.occlusion(FRACTIONS, red, red)
    assert not any("rise" in k for k in keys(found))
    assert "claims.occlusion.fall_together" in keys(found)


def test_curves_that_never_halve_and_match_say_so():
    flat = np.full(11, 0.6)
    found = claims.occlusion(FRACTIONS, flat, flat + 0.01)
    assert keys(found) == ["claims.occlusion.fall_none", "claims.occlusion.area_similar"]
    en, _ = both(found)
    assert "Neither curve falls under half its start (30%)" in en


def test_only_one_curve_rising_or_falling_is_told_apart():
    red = np.array([0.5, 0.7, 0.6, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5])
    grey = np.array([0.5, 0.4, 0.3, 0.2, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1])
    assert keys(claims.occlusion(FRACTIONS, red, grey))[:2] == [
        "claims.occlusion.rise_red",
        "claims.occlusion.fall_grey",
    ]
    assert keys(claims.occlusion(FRACTIONS, grey, red))[:2] == [
        "claims.occlusion.rise_grey",
        "claims.occlusion.fall_red",
    ]


def test_a_curve_that_rises_by_less_than_the_threshold_does_not_rise():
    # both start at 60%: red climbs 4 points (under RISE, 5 points), grey 6 points
    red = np.array([0.60, 0.64, 0.62, 0.50, 0.45, 0.40, 0.35, 0.30, 0.25, 0.20, 0.15])
    grey = np.array([0.60, 0.66, 0.62, 0.50, 0.45, 0.40, 0.35, 0.30, 0.25, 0.20, 0.15])
    found = claims.occlusion(FRACTIONS, red, grey)
    assert keys(found)[0] == "claims.occlusion.rise_grey"
    assert found[0].values["grey_peak"] == 0.66 and found[0].values["grey_at"] == pytest.approx(0.1)


def test_a_curve_falls_under_half_its_start_only_below_the_half():
    # 80% at the start: 40% at 20% hidden is half, not under it; 30% at 30% hidden is under
    red = np.array([0.8, 0.6, 0.4, 0.3, 0.2, 0.2, 0.2, 0.2, 0.2, 0.2, 0.2])
    found = claims.occlusion(FRACTIONS, red, np.full(11, 0.8))
    fall = next(c for c in found if c.key.startswith("claims.occlusion.fall"))
    assert fall.key == "claims.occlusion.fall_red" and fall.values["red_at"] == pytest.approx(0.3)
    assert "half its start (40%) once 30% of the patches are hidden; the grey one never does" in claims.text(fall)


def starts_at_zero(axis) -> bool:
    """An axis drawn from 0: a fixed range from 0, or an automatic one that keeps 0 in view."""
    return (axis.range is not None and axis.range[0] == 0) or (axis.range is None and axis.rangemode == "tozero")


def test_probability_axes_start_at_zero():
    lines = plots.multi_line(FRACTIONS, {"p": np.linspace(0.75, 0.94, 11)}, percent=True)
    assert starts_at_zero(lines.layout.yaxis)
    assert not starts_at_zero(plots.multi_line(FRACTIONS, {"norm": np.linspace(4.5, 6, 11)}).layout.yaxis)
    assert starts_at_zero(plots.bars(["cat", "dog"], [0.9, 0.6]).layout.xaxis)


# ---- page 6: LayerNorm, the token axis, GELU, layer by layer ---------------------------------

TINY = ViTConfig(image_size=16, patch_size=8, num_classes=3, embed_dim=32, depth=1, num_heads=2)


def layer_norm_claim(scale: torch.Tensor | None) -> claims.Claim:
    torch.manual_seed(0)
    model = VisionTransformer(TINY).eval()
    if scale is not None:
        with torch.no_grad():
            model.blocks[0].norm1.weight.copy_(scale)
    with torch.no_grad():
        trace = model.explain(torch.randn(1, 3, 16, 16) * torch.tensor([0.1, 1.0, 5.0])[:, None, None])
    norms = analysis.block_token_norms(model, trace, 0)
    return claims.layer_norm_lengths(norms["input"].numpy(), norms["norm1"].numpy())


def test_a_layer_norm_without_a_learned_scale_equalises_and_one_with_an_uneven_scale_does_not():
    equal = layer_norm_claim(None)  # weight 1, bias 0: every token has length sqrt(D)
    uneven = layer_norm_claim(torch.linspace(0.05, 3.0, 32))
    assert equal.key == "claims.layernorm.equal"
    assert uneven.key == "claims.layernorm.narrower"
    en_equal, ko_equal = both(equal)
    en_uneven, ko_uneven = both(uneven)
    assert "nearly equal" in en_equal and "to 5.66 (spread 0.0%)" in en_equal  # sqrt(32)
    assert "more alike, not equal" in en_uneven and "같게 만들지는 않습니다" in ko_uneven
    assert uneven.values["cv_after"] < uneven.values["cv_before"]


def test_a_layer_norm_that_spreads_the_lengths_is_not_said_to_narrow_them():
    found = claims.layer_norm_lengths(np.array([5.0, 5.1, 4.9, 5.0]), np.array([1.0, 3.0, 5.0, 7.0]))
    assert found.key == "claims.layernorm.not_narrower"
    en, _ = both(found)
    assert "does not make the lengths more alike" in en
    assert claims.spread(np.full(5, 3.0)) == 0.0


@pytest.mark.parametrize(
    "half_width, key",
    [(0.149, "claims.layernorm.not_narrower"), (0.151, "claims.layernorm.narrower")],
)
def test_a_layer_norm_narrows_the_lengths_only_by_the_factor(half_width, key):
    # two tokens of lengths 1 -/+ w: spread (population std / mean) w. After: 0.9 and 1.1, spread 0.10.
    # NARROWER is 1.5: a spread of 0.149 is 1.49 times 0.10 (not narrower), 0.151 is 1.51 times (narrower)
    found = claims.layer_norm_lengths(np.array([1 - half_width, 1 + half_width]), np.array([0.9, 1.1]))
    assert found.values["cv_before"] == pytest.approx(half_width) and found.values["cv_after"] == pytest.approx(0.1)
    assert found.key == key
    both(found)


def test_the_token_axis_names_cls_only_when_there_is_one():
    with_cls, without = both(claims.token_axis(1)), both(claims.token_axis(0))
    assert "0 = [CLS]" in with_cls[0] and "0 = [CLS]" in with_cls[1]
    assert "[CLS]" in without[0] and "0 = [CLS]" not in without[0] and "patch k + 1" in without[0]
    assert "first token" not in with_cls[0]


def test_the_share_of_negative_gelu_inputs_is_counted():
    en, ko = both(claims.gelu_inputs(np.array([-1.0, -0.5, 2.0, 3.0, 4.0])))
    assert "all 5 numbers" in en and "40% of them are negative" in en and "40%" in ko
    assert "0% of them" in claims.text(claims.gelu_inputs(np.array([1.0, 2.0])))


def test_the_stream_and_branch_sentences_follow_the_layers():
    grows = claims.depth_trend(
        np.array([5.0, 10.0, 20.0]), np.array([0.3, 0.2, 0.1]), np.array([0.2, 0.1, 0.1]), np.array([0.9, 0.95, 0.99])
    )
    shrinks = claims.depth_trend(
        np.array([20.0, 10.0, 5.0]), np.array([1.5, 0.2, 0.1]), np.array([0.2, 0.1, 0.1]), np.array([0.1, 0.5, 0.9])
    )
    same = claims.depth_trend(np.array([10.0, 10.2, 10.4]), np.array([0.1]), np.array([0.1]), np.array([1.0]))
    assert keys(grows) == ["claims.depth.stream_grows", "claims.depth.branches_smaller"]
    assert keys(shrinks) == ["claims.depth.stream_shrinks", "claims.depth.branches_larger"]
    assert keys(same)[0] == "claims.depth.stream_same"
    en, _ = both(grows)
    assert "5.0 entering layer 1 and 20.0 entering layer 3" in en and "0.10 to 0.30 times" in en
    assert (
        "In layer 1 a branch is larger than the stream" in both(shrinks)[0] and "up to 1.50 times" in both(shrinks)[0]
    )
    both(same)


# ---- page 3: the filters' principal components and the routes ---------------------------------


def component_claims(weight: torch.Tensor) -> dict[str, claims.Claim]:
    _, ratios = analysis.patch_embed_components(weight, k=None)
    return claims.filter_components(ratios.numpy(), weight.shape[-1])


def test_filters_along_few_patterns_show_those_and_random_filters_are_called_even():
    torch.manual_seed(0)
    basis = torch.randn(3, 48)  # 48 = 3 x 4 x 4: every filter mixes three patterns
    few = component_claims((torch.randn(64, 3) @ basis).reshape(64, 3, 4, 4))
    even = component_claims(torch.randn(256, 3, 4, 4))
    assert few["spread"].key == "claims.filters.few" and even["spread"].key == "claims.filters.even"
    assert few["title"].key == "claims.filters.title" and few["title"].values["shown"] <= 3
    assert even["title"].key == "claims.filters.title_capped"  # 95% needs more than 28 tiles
    assert even["title"].values["shown"] == claims.MOST_COMPONENTS
    for claim in (*few.values(), *even.values()):
        both(claim)
    en = claims.text(few["title"])
    assert f"the {few['title'].values['shown']} principal components of W that carry 95%" in en


def test_the_number_shown_is_the_count_that_reaches_the_share():
    ratios = np.array([0.5, 0.3, 0.1, 0.06, 0.03, 0.01])  # 0.96 after four
    assert claims.components_to_show(ratios) == 4
    found = claims.filter_components(ratios, 4)
    assert found["title"].values["carried"] == pytest.approx(0.96)
    assert "(96.0%)" in claims.text(found["title"])
    assert claims.components_to_show(np.array([0.95, 0.05])) == 1


def test_the_spread_is_even_from_exactly_the_share_of_all_components():
    # 10 components; EVEN_SHARE 0.8: needing 8 of them for 95% is even, needing 7 is not
    eight = np.array([0.12] * 8 + [0.02, 0.02])  # 0.84 after 7, 0.96 after 8
    seven = np.array([0.14] * 7 + [0.01] * 3)  # 0.84 after 6, 0.98 after 7
    assert claims.components_needed(eight) == 8 and claims.components_needed(seven) == 7
    assert claims.filter_components(eight, 4)["spread"].key == "claims.filters.even"
    assert claims.filter_components(seven, 4)["spread"].key == "claims.filters.few"


def test_small_filters_are_said_not_to_look_like_the_papers():
    small, large = claims.filter_components(np.ones(4) / 4, 4), claims.filter_components(np.ones(4) / 4, 16)
    assert small["size"].key == "claims.filters.small" and large["size"].key == "claims.filters.paper_size"
    en, ko = both(small["size"])
    assert "4 x 4 pixels, 16 per channel" in en and "ViT-L/32" in en and "too few pixels" in en
    both(large["size"])


def test_the_route_check_says_whether_the_routes_agree():
    ok, bad = claims.routes({"a": 1e-7, "b": 2e-7}, 1e-4), claims.routes({"a": 1e-7, "b": 0.5}, 1e-4)
    assert ok.key == "vectors.check_ok" and bad.key == "vectors.check_fail"
    assert "2.0e-07" in both(ok)[0] and "5.0e-01" in both(bad)[0]


# ---- page 7: the logit lens ---------------------------------------------------------------------


def test_the_lens_chart_follows_every_class_that_leads_after_some_layer():
    lens = torch.zeros(4, 1, 8)
    lens[0, 0, 6] = lens[1, 0, 7] = 1.0  # classes 6 and 7 lead early, then fade out of the final top 3
    lens[2, 0, 2] = lens[3, 0, 2] = 1.0
    lens[3, 0, :3] += torch.tensor([0.0, 0.5, 0.0])
    lens[3, 0, 0] = 0.3
    classes, scores = analysis.logit_lens_tracks(lens, k=3)
    assert classes.tolist()[:3] == lens[-1, 0].topk(3).indices.tolist()
    assert set(analysis.logit_lens_top1(lens)[0].tolist()) <= set(classes.tolist())
    assert classes.tolist()[3:] == [6, 7]  # in the order they first lead
    torch.testing.assert_close(scores, lens[:, 0, classes])


def test_the_lens_sentence_says_from_which_layer_the_answer_leads():
    names = ["airplane", "cat", "frog"]
    late = claims.logit_lens([0, 2, 2, 1, 1], 1, names)
    last = claims.logit_lens([0, 2, 0, 2, 1], 1, names)
    always = claims.logit_lens([1, 1, 1], 1, names)
    assert (late.key, last.key, always.key) == (
        "claims.lens.from_layer",
        "claims.lens.only_last",
        "claims.lens.from_embeddings",
    )
    en, ko = both(late)
    assert en == "'cat' is on top from layer 3 on and stays there; before that, the lead went to airplane, frog."
    assert "고양이 (cat)" in ko and "비행기 (airplane), 개구리 (frog)" in ko
    assert "last layer (4)" in both(last)[0]
    assert "class 2" in claims.text(claims.logit_lens([2, 0], 0, None))  # no names: numbered


# ---- page 1 and page 8 ---------------------------------------------------------------------------


def test_the_normalised_histogram_is_said_to_be_centred_only_when_it_is():
    centred, dark, bright = (claims.normalised_input(np.array(v)) for v in ([-0.1, 0.2, 0.0], [-2.0, -1.5], [1.0, 2.0]))
    assert (centred.key, dark.key, bright.key) == ("claims.input.near", "claims.input.below", "claims.input.above")
    assert "mean -1.75" in both(dark)[0] and "darker" in both(dark)[0]
    both(centred), both(bright)


def test_the_reach_sentence_names_the_first_covering_layer_or_never():
    fields = [("conv1", 3), ("conv2", 10), ("pool", 40)]
    covered = claims.text(claims.reach(fields, np.array([[5.0, 9.5]]), 32))
    never = claims.text(claims.reach(fields[:2], np.array([[5.0, 9.5]]), 32))
    assert "9.5 px" in covered and "`pool`" in covered
    assert never.endswith("never covers the whole 32 px image: its last layer's sees 10 px.") and "`pool`" not in never
    assert " at never" not in never  # a word dropped into another sentence's slot, as it was
    assert english_words(claims.text(claims.reach(fields[:2], np.array([[5.0, 9.5]]), 32), "ko")) == []

    exactly = claims.text(claims.reach([("conv1", 3), ("conv2", 32), ("pool", 40)], np.array([[5.0]]), 32))
    assert "at `conv2`" in exactly  # a 32 px field covers a 32 px image


def test_the_component_tiles_fill_their_rows_evenly():
    def grid(count: int) -> tuple[int, int]:
        fig = plots.component_tiles(np.random.default_rng(0).normal(size=(count, 3, 4, 4)), np.full(count, 1 / count))
        titles = fig.layout.annotations  # one over each tile
        assert len(titles) == count
        return len({title.y for title in titles}), len({title.x for title in titles})

    assert grid(16) == (2, 8)  # the shipped model's 16 components: not 7 + 7 + 2
    assert grid(28) == (4, 7)
    assert grid(3) == (1, 3)


# ---- the lab's trust page and map -------------------------------------------------------------


def test_the_ablation_sentence_says_whether_the_answer_changed():
    names = ["cat", "dog", "bird"]
    before = np.array([0.7, 0.2, 0.1])
    assert claims.ablation_answer(before, before, names, 0, 0).key == "trust.ablation_none"
    same = claims.ablation_answer(before, np.array([0.5, 0.4, 0.1]), names, 2, 0)
    changed = claims.ablation_answer(before, np.array([0.3, 0.6, 0.1]), names, 2, 0)
    assert same.key == "trust.ablation_same" and changed.key == "trust.ablation_changed"
    assert "dog (60.0%)" in claims.text(changed) and "cat keeps 30.0%" in claims.text(changed)
    assert "50.0% after" in claims.text(same)
    assert "고양이" in claims.text(changed, "ko")


def test_the_costliest_head_is_read_from_the_grid():
    drops = np.zeros((3, 4))
    drops[2, 1] = 0.05  # layer 3, head 2
    said = claims.text(claims.costliest_head(drops, 0.85, 1000, "zero"))
    assert "head 2 of layer 3" in said and "5.0%" in said and "11 of the 12 heads" in said
    flat = claims.costliest_head(np.full((3, 4), 0.001), 0.85, 1000, "mean")
    assert flat.key == "trust.costliest_none"  # no head costs 1%: the opposite sentence

    edge = np.zeros((3, 4))
    edge[1, 2] = 0.01  # exactly 1% (SMALL_DROP): it costs, and is not one of the heads that cost less
    costs = claims.costliest_head(edge, 0.85, 1000, "zero")
    assert costs.key == "trust.costliest" and costs.values["small"] == 11
    assert "head 3 of layer 2 costs the most: 1.0%" in claims.text(costs)


def test_the_test_set_table_names_the_ranking_with_the_best_margin():
    row = {"deletion_auc_std": 0.1, "insertion_auc_std": 0.1, "below_random": 0.0}
    summary = {
        "images": 500,
        "methods": {
            "random": {"deletion_auc": 0.5, "insertion_auc": 0.5},
            "rollout": {**row, "deletion_auc": 0.5, "insertion_auc": 0.55, "beats_random": 0.7},
            "occlusion": {**row, "deletion_auc": 0.2, "insertion_auc": 0.8, "beats_random": 0.4},
        },
    }
    said = claims.text(claims.trust_over_images(summary))
    assert "follows occlusion (each patch hidden alone) best" in said and "attention rollout beats" in said
    summary["methods"]["rollout"].update(deletion_auc=0.1, insertion_auc=0.95)  # now rollout's margin is the larger
    assert "follows attention rollout best" in claims.text(claims.trust_over_images(summary))

    # the highest insertion area is not the highest margin: rollout reveals best but deletes worst
    summary["methods"]["rollout"].update(deletion_auc=0.6, insertion_auc=0.9)  # margin 0.3 against 0.6
    assert "follows occlusion (each patch hidden alone) best" in claims.text(claims.trust_over_images(summary))


def test_the_map_reads_how_often_a_neighbour_shares_the_class():
    rng = np.random.default_rng(0)
    labels = np.repeat([0, 1], 50)
    apart = np.concatenate([rng.normal(0, 0.1, (50, 2)), rng.normal(10, 0.1, (50, 2))])
    mixed = rng.normal(0, 1, (100, 2))
    assert claims.neighbour_agreement(apart, labels) == 1.0
    assert claims.neighbour_agreement(mixed, labels) < 0.8
    predictions = np.where(np.arange(100) < 90, labels, 1 - labels)
    said = claims.text(claims.test_set_map(apart, labels, predictions))
    assert "90 of 100 images" in said and "100%" in said and "mirror" not in said
    said = claims.text(claims.test_set_map(apart, labels, predictions, mirrored=True))  # the lab counts another answer
    assert "90 of 100 images are answered right by one pass" in said and "mirror image" in said and "100%" in said


def curves(method: str, deletion: list[list[float]], insertion: list[list[float]]):
    """A ranking's deletion and insertion curves (one row per order) for ``faithfulness.read``."""
    from vitviz.analyses import faithfulness

    rows = len(deletion)
    orders = torch.stack([torch.randperm(16, generator=torch.Generator().manual_seed(i)) for i in range(rows)])
    return faithfulness.MethodCurves(method, None, orders, torch.tensor(deletion), torch.tensor(insertion))


@pytest.mark.parametrize(
    ("red", "grey", "margin", "verdict"),
    [
        # rollout's patches hurt more than page 7's one random order, yet among 8 orders it is chance
        (np.linspace(0.9, 0.1, 11), np.linspace(0.9, 0.6, 11), 0.2, "chance"),
        # page 7's one random order hurts more, yet rollout beats every one of 8 orders
        (np.linspace(0.9, 0.6, 11), np.linspace(0.9, 0.1, 11), 0.6, "better"),
    ],
)
def test_page_7_states_no_verdict_that_the_trust_page_can_contradict(red, grey, margin, verdict):
    """Issue 55: page 7 said rollout "points at patches the model uses" where the trust page said
    it was no better than chance. A map built so that page 7's one random order and the trust
    page's eight disagree: page 7 says what its curves show, and leaves the verdict to that page."""
    from vitviz.analyses import faithfulness
    from vitviz.render.i18n import t

    margins = np.linspace(-0.1, 0.5, 8)  # the random orders' band: -0.1 to 0.5
    band = curves("random", [[0.5] * 3] * 8, [[0.5 + m] * 3 for m in margins])
    rollout = curves("rollout", [[0.3] * 3], [[0.3 + margin] * 3])
    result = faithfulness.Faithfulness(
        3, 0.9, 0.1, torch.tensor([0, 8, 16]), 8, (4, 4), {"random": band, "rollout": rollout}
    )
    reading = faithfulness.read(result)
    assert reading.verdicts["rollout"] == verdict
    trust = claims.text(faithfulness.sentences(reading), "en")
    assert ("No better than chance: attention rollout" in trust) == (verdict == "chance")

    found = claims.occlusion(FRACTIONS, red, grey)
    assert keys(found)[-1] == (
        "claims.occlusion.area_red_lower" if verdict == "chance" else "claims.occlusion.area_grey_lower"
    )
    for lang in ("en", "ko"):
        page7 = claims.text(found, lang)
        pointer = t("prediction.occlusion_verdict", lang, page=t("page.trust", lang), orders=faithfulness.RANDOM_ORDERS)
        assert t("page.trust", lang) in pointer and str(faithfulness.RANDOM_ORDERS) in pointer
        # no verdict either way: neither "the map points at the patches the model uses" nor its opposite
        for verdict_said in {
            "en": ("points at patches the model uses", "does not point at the evidence"),
            "ko": ("모델이 쓰는 패치를 가리킵니다", "근거를 가리키지 않습니다"),
        }[lang]:
            assert verdict_said not in page7 and verdict_said not in t("prediction.occlusion_intro", lang)


def test_the_neighbours_of_a_map_larger_than_one_chunk_are_found_in_every_chunk():
    # five points on a line: 0 and 1 are each other's nearest (same label), 3's nearest is 1,
    # 7's is 8 and 8's is 7 (labels differ): 2 of 5 agree, however the points are cut into chunks
    points = np.array([[0.0, 0.0], [1.0, 0.0], [3.0, 0.0], [7.0, 0.0], [8.0, 0.0]])
    labels = np.array([0, 0, 1, 1, 0])
    for chunk in (1, 2, 3, 5, 1024):
        assert claims.neighbour_agreement(points, labels, chunk=chunk) == 0.4, chunk


def test_the_map_of_a_test_set_larger_than_one_chunk_agrees_with_a_plain_loop():
    rng = np.random.default_rng(1)
    points = rng.integers(0, 1000, (1500, 2)).astype(np.float64)  # integers: every distance exact in float32
    labels = rng.integers(0, 3, 1500)
    same = 0
    for i in range(len(points)):
        squared = ((points - points[i]) ** 2).sum(axis=1)
        squared[i] = np.inf
        same += int(labels[squared.argmin()] == labels[i])
    assert claims.neighbour_agreement(points, labels) == same / 1500
    assert 0.2 < same / 1500 < 0.5  # three labels at random: about a third agree


# --------------------------------------------------------------------------------------------
# Pages 7 and 8: the takeaways of the answer, a map, the occluded strip and an experiment
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("probabilities", "key", "said"),
    [((0.6, 0.2, 0.1), "claims.top.clear", "3.0 times the next class, dog (20.0%)"),
     ((0.4, 0.35, 0.1), "claims.top.close", "by only 5.0 percentage points"),
     ((0.9,), "claims.top.only", "with 90.0%")],
)  # fmt: skip
def test_the_answer_is_clear_or_close_by_how_far_it_leads(probabilities, key, said):
    claim = claims.top_answer(["cat", "dog", "frog"][: len(probabilities)], probabilities)
    assert claim.key == key and said in claims.text(claim)
    assert "고양이" in claims.text(claim, "ko")


def test_a_map_is_focused_when_its_brightest_quarter_holds_half_its_weight():
    peaked = np.zeros((4, 4))
    peaked[1, 2] = 1.0
    even = np.ones((4, 4))
    assert claims.map_focus(peaked).key == "claims.focus.focused" and "100%" in claims.text(claims.map_focus(peaked))
    assert claims.map_focus(even).key == "claims.focus.spread" and "only 25%" in claims.text(claims.map_focus(even))
    assert claims.map_focus(-even).key == "claims.focus.empty"  # negative values weigh nothing


def test_the_occluded_strip_says_whether_the_answer_survives():
    holds = claims.occluded_strip(0.75, 0.5, 0.6, claims.ClassName("cat"))
    falls = claims.occluded_strip(0.75, 0.2, 0.6, claims.ClassName("cat"))
    assert (
        claims.text(holds) == "With 75% of the patches hidden, most attended first, 'cat' still has 50.0% (from 60.0%)."
    )
    assert falls.key == "claims.occluded.falls" and "falls to 20.0%" in claims.text(falls)


@pytest.mark.parametrize(
    ("vit_after", "cnn_after", "key"),
    [(("cat", 0.5), ("cat", 0.4), "both_keep"), (("dog", 0.5), ("dog", 0.4), "both_change"),
     (("dog", 0.5), ("cat", 0.4), "vit_changes"), (("cat", 0.5), ("dog", 0.4), "cnn_changes"),
     (("cat", 0.5), None, "vit_keeps_na"), (("dog", 0.5), None, "vit_changes_na")],
)  # fmt: skip
def test_an_experiment_says_which_model_changed_its_answer(vit_after, cnn_after, key):
    claim = claims.experiment(("cat", 0.9), vit_after, ("cat", 0.8), cnn_after)
    assert claim.key == f"claims.experiment.{key}"
    assert f"{vit_after[0]} (50%)" in claims.text(claim)
    assert ("does not apply" in claims.text(claim)) == (cnn_after is None)


@pytest.mark.parametrize(
    ("red", "grey", "key"),
    [((0.6, 0.2, 0.1), (0.6, 0.5, 0.4), "red_lower"), ((0.6, 0.5, 0.4), (0.6, 0.2, 0.1), "grey_lower"),
     ((0.6, 0.4, 0.2), (0.6, 0.41, 0.2), "similar")],
)  # fmt: skip
def test_the_occlusion_chart_s_line_names_the_order_that_costs_more(red, grey, key):
    claim = claims.occlusion_area(np.array(red), np.array(grey))
    assert claim.key == f"claims.occlusion.short_{key}"
    assert (
        claims.occlusion(np.linspace(0, 1, 3), np.array(red), np.array(grey))[-1].key == f"claims.occlusion.area_{key}"
    )
    assert "(red)" in claims.text(claim) and "(빨강)" in claims.text(claim, "ko")


# --------------------------------------------------------------------------------------------
# Pages 0 and 2: how the image becomes tokens
# --------------------------------------------------------------------------------------------


def test_a_hybrid_s_tokens_are_said_to_stand_for_squares_not_to_be_patches():
    plain_vit = claims.patch_grid((32, 32), 4, (8, 8), 48)
    hybrid = claims.patch_grid((224, 224), 32, (7, 7), 1024, hybrid=True)
    assert plain_vit.key == "claims.patch_grid" and hybrid.key == "claims.patch_grid_hybrid"
    en, ko = both(plain_vit)
    assert en == "The 32 x 32 image becomes 8 x 8 = 64 patches of 4 x 4 pixels, each 48 numbers." and "64개" in ko
    en, ko = both(hybrid)
    assert "7 x 7 = 49 tokens, each standing for a 32 x 32-pixel square" in en and "patches" not in en
    assert "1024 numbers from the ResNet" in en and "49개" in ko


def test_the_class_s_patch_poll_says_whether_its_top_patch_is_among_the_model_s():
    model_map = np.array([0.9, 0.8, 0.7, 0.1, 0.05, 0.0])
    among = claims.class_patch(np.array([0, 3, 1, 0, 0, 0]), model_map, k=2)
    outside = claims.class_patch(np.array([0, 1, 0, 0, 4, 0]), model_map, k=2)
    assert claims.text(among) == (
        "The class's most-clicked patch, 2 (3 of 4 votes), is among the model's 2 most important: it ranks 2."
    )
    assert outside.key == "claims.patch_poll.outside" and "ranks 5" in claims.text(outside)
    assert "5위" in claims.text(outside, "ko")
    assert claims.class_patch(np.zeros(6), model_map).key == "claims.patch_poll.no_votes"
