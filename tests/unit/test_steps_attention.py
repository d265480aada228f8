"""Step 5 (attention) as data: its takeaways read the maps they sit under, its controls hold only
valid values, its slides are its figure rows, and the handout draws every figure it describes.
The new blocks it needs (a formula, a number box, a CSV download, a sentence's paper variant)
are drawn by every renderer."""

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
from vitviz.steps import attention, attention_worked, blocks
from vitviz.steps.subject import Subject

torch.set_num_threads(1)


def _subject(lang: str = "en", class_token: bool = True, depth: int = 2) -> Subject:
    torch.manual_seed(0)
    config = ViTConfig(
        image_size=32, patch_size=8, num_classes=3, embed_dim=16, depth=depth, num_heads=2, class_token=class_token,
        global_pool="token" if class_token else "avg",
    )  # fmt: skip
    model = VisionTransformer(config).eval()
    image = np.random.default_rng(0).integers(0, 256, (32, 32, 3), dtype=np.uint8)
    with torch.inference_mode():
        trace = model.explain(torch.rand(1, 3, 32, 32))
    return Subject(model, image, trace, lang)


def _peaked_subject() -> Subject:
    """4 heads in 2 blocks with clear peaks (q and k scaled up 30 times), heads 1 to 3 sharing their q and k: every
    map's takeaway names its own patch and share, and the heads' sentence names the patch 3 of them look at."""
    torch.manual_seed(0)
    config = ViTConfig(image_size=32, patch_size=8, num_classes=3, embed_dim=16, depth=2, num_heads=4)
    model = VisionTransformer(config).eval()
    with torch.no_grad():
        for block in model.blocks:
            weight = block.attn.qkv.weight  # rows: q of heads 1..4, k of heads 1..4, v; 4 rows a head
            for start in (0, 16):
                weight[start + 4 : start + 12] = weight[start : start + 4].repeat(2, 1)
            weight[:32] *= 30
    image = np.random.default_rng(0).integers(0, 256, (32, 32, 3), dtype=np.uint8)
    with torch.inference_mode():
        trace = model.explain(torch.rand(1, 3, 32, 32))
    return Subject(model, image, trace, "en")


# ---- the takeaways' claims: numbers made so that each sentence must change --------------------


def test_a_map_with_one_bright_patch_says_where_and_an_even_one_says_even():
    peak = np.full((4, 4), 0.02)
    peak[1, 2] = 0.7  # patch 7: row 2, col 3
    en, ko = both(claims.attention_focus(peak, "[CLS]"))
    assert en.startswith("[CLS] looks most at patch 7 (row 2, col 3): 70.0% of its attention")
    assert "패치 7(2행 3열)" in ko
    assert "itself" in both(claims.attention_focus(peak, "[CLS]", own=6))[0]  # its own patch is the brightest
    assert "itself" not in both(claims.attention_focus(peak, "[CLS]", own=0))[0]
    even = np.full((4, 4), 1 / 16)
    even[0, 0] *= 1.5
    en, _ = both(claims.attention_focus(even, "[CLS]"))
    assert "almost evenly" in en and "1.5 times an even share" in en


def test_heads_that_agree_and_heads_that_differ():
    maps = np.zeros((3, 2, 2))
    maps[:, 1, 1] = 1.0  # every head's brightest patch is patch 4
    assert "All 3 heads of L1 look most at the same patch, 4 (row 2, col 2)" in both(claims.head_peaks(maps, "L1"))[0]
    maps[0, 0, 0] = 2.0
    assert "2 different patches; 2 of them at patch 4" in both(claims.head_peaks(maps, "L1"))[0]
    maps[1, 0, 1] = 2.0
    assert "3 different patches: each head" in both(claims.head_peaks(maps, "L1"))[0]
    assert "The one head of L1" in both(claims.head_peaks(maps[:1], "L1"))[0]


def test_the_key_weights_say_whether_one_key_or_many_carry_the_weight():
    one = both(claims.key_weights([0.8, 0.1], [5, 0], 17))[0]
    assert "One key takes most of the weight: token 5, 80%" in one and "top 2 of 17 keys carry 90%" in one
    assert "top 2 of 17 keys carry 70% of the weight" in both(claims.key_weights([0.4, 0.3], [5, 0], 17))[0]
    assert "spread out: the top 2 of 17 keys carry only 20%" in both(claims.key_weights([0.1, 0.1], [5, 0], 17))[0]


# ---- the step ----------------------------------------------------------------------------------


def _takeaways(step: blocks.Step) -> dict[str, str]:
    return {figure.key: plain(figure.takeaway) for figure in step.figures()}


def _said(claim: claims.Claim) -> str:
    return plain(claims.text(claim))


def test_every_figure_has_a_takeaway_read_from_its_own_numbers():
    subject = _peaked_subject()
    step = attention.describe(subject, {"layer": 1, "head": 3, "query": 15})  # token 15: patch 15 (row 4, col 3)
    figures = {figure.key: figure for figure in step.figures()}
    assert list(figures) == [
        "attention_readout", "attention_query", "attention_heads", "attention_rollout", "attention_last_layer",
        "attention_distance", "attention_worked_bars",
    ]  # fmt: skip
    said, trace = _takeaways(step), subject.trace
    readout = analysis.readout_attention(trace, 1)[0].numpy()  # layer 2: (heads, 4, 4)
    query = analysis.query_attention(trace, 1, 15)[0].numpy()
    # a patch query: its map is not the readout's, so a takeaway that read the other map would say another patch
    assert not np.allclose(readout[3], query[3])
    assert said["attention_readout"] == _said(claims.attention_focus(readout[3], "[CLS] in Layer 2, Head 4"))
    np.testing.assert_allclose(np.asarray(figures["attention_readout"].figure.data[1].z), readout[3])
    assert said["attention_query"] == _said(claims.attention_focus(query[3], "Token 15 in Layer 2, Head 4", own=14))
    assert "looks most at itself" in said["attention_query"]  # so the query's own patch is passed on
    np.testing.assert_allclose(np.asarray(figures["attention_query"].figure.data[1].z), query[3])
    assert said["attention_heads"] == _said(claims.head_peaks(readout, "Layer 2"))
    rollout, rolled = analysis.rollout_map(trace, head_fusion="mean")[0].numpy(), "Rollout of the [CLS] vector"
    assert said["attention_rollout"] == _said(claims.attention_focus(rollout, rolled))
    last = readout.mean(axis=0)  # the last layer with its heads averaged, whatever head is chosen
    assert said["attention_last_layer"] == _said(claims.attention_focus(last, "[CLS] in Layer 2, Mean of heads"))
    distances = analysis.mean_attention_distance(trace, 8).numpy()
    uniform = analysis.uniform_attention_distance(trace.grid_size, 8)
    assert said["attention_distance"] == _said(claims.attention_distance(distances, uniform, 32)[-1])
    # the bars: the query's heaviest keys in its softmax row as the trace holds it (not the worked recomputation)
    weights, tokens = trace.attentions[1][0, 3, 15].topk(attention_worked.TOP_KEYS)
    assert said["attention_worked_bars"] == _said(claims.key_weights(weights.tolist(), tokens.tolist(), 17))
    assert step.shape == "(1, 4, 17, 17)"
    # the small multiples of the query instead, and rollout by the heads' maximum
    other = attention.describe(
        subject, {"layer": 1, "head": 3, "query": 15, "attention_heads_of": "query", "attention_fusion": "max"}
    )
    assert _takeaways(other)["attention_heads"] == _said(claims.head_peaks(query, "Layer 2"))
    assert _takeaways(other)["attention_heads"] != said["attention_heads"]
    rollout = analysis.rollout_map(trace, head_fusion="max")[0].numpy()
    assert _takeaways(other)["attention_rollout"] == _said(claims.attention_focus(rollout, rolled))
    assert _takeaways(other)["attention_rollout"] != said["attention_rollout"]


def test_another_query_changes_the_query_map_and_its_takeaway_not_the_readout():
    subject = _peaked_subject()
    corner, centre = attention.describe(subject, {"query": 16}), attention.describe(subject, {})
    assert _takeaways(corner)["attention_readout"] == _takeaways(centre)["attention_readout"]
    drawn = {}
    for step, token in ((corner, 16), (centre, 11)):  # 4 x 4: token 11 is the centre
        query = analysis.query_attention(subject.trace, 0, token, 0)[0].numpy()  # layer 1, head 1
        figure = next(figure for figure in step.figures() if figure.key == "attention_query")
        drawn[token] = np.asarray(figure.figure.data[1].z)
        np.testing.assert_allclose(drawn[token], query)
        who = f"Token {token} in Layer 1, Head 1"
        assert _takeaways(step)["attention_query"] == _said(claims.attention_focus(query, who, own=token - 1))
    assert not np.allclose(drawn[16], drawn[11])
    assert "looks most at itself, patch 16" in _takeaways(corner)["attention_query"]
    assert "looks most at patch 16" in _takeaways(centre)["attention_query"]  # the same patch, not its own


@pytest.mark.parametrize(
    ("choices", "layer", "head", "query", "heads_of", "fusion"),
    [({}, 0, 0, 11, "readout", "mean"),
     ({"layer": 99, "head": 99, "query": 5000, "attention_heads_of": "query", "attention_fusion": "max"}, 1, 1, 16, "query", "max"),
     ({"layer": -3, "head": -7, "query": -1, "attention_heads_of": "x", "attention_fusion": "median"}, 0, -1, 0, "readout", "mean"),
     ({"layer": "2", "head": True, "query": 2.5}, 0, 0, 11, "readout", "mean")],
)  # fmt: skip
def test_the_controls_hold_only_valid_values(choices, layer, head, query, heads_of, fusion):
    step = attention.describe(_subject(), choices)
    by_key = {control.key: control for control in step.controls()}
    said = {key: by_key[key].value for key in ("layer", "head", "query", "attention_heads_of", "attention_fusion")}
    assert said == {
        "layer": layer,
        "head": head,
        "query": query,
        "attention_heads_of": heads_of,
        "attention_fusion": fusion,
    }
    for control in by_key.values():
        assert control.value in control.options
    assert by_key["query"].kind == "number" and by_key["query"].options == tuple(range(17))


def test_the_mean_of_heads_is_shown_and_the_worked_example_falls_back_to_head_1():
    step = attention.describe(_subject(), {"head": -1})
    assert "Mean of heads" in _takeaways(step)["attention_readout"]
    captions = [block.text for block in step.blocks if isinstance(block, blocks.Text) and block.role == "caption"]
    assert t("attention.worked_mean_note") in captions


def test_slides_are_the_figure_rows_each_with_the_controls_before_it():
    step = attention.describe(_subject(), {})
    slides = step.slides()
    assert [[figure.key for figure in slide.figures] for slide in slides] == [
        ["attention_readout", "attention_query"], ["attention_heads"], ["attention_rollout", "attention_last_layer"],
        ["attention_distance"], ["attention_worked_bars"],
    ]  # fmt: skip
    assert [c.key for c in slides[0].controls] == ["layer", "head", "query"]
    assert [c.key for c in slides[2].controls][-1] == "attention_fusion"
    assert any(note.startswith("$$") and "softmax" in note for note in slides[4].notes)  # the formula, as a note


def test_a_model_without_cls_reads_the_mean_patch_query():
    step = attention.describe(_subject(class_token=False), {})
    assert _takeaways(step)["attention_readout"].startswith("The mean patch query in Layer 1, Head 1")
    assert any(isinstance(b, blocks.Text) and b.text == t("attention.no_cls") for b in step.blocks)
    by_key = {control.key: control for control in step.controls()}
    assert by_key["query"].value == 2 * 4 + 2  # no prefix: the centre patch is token 10


def test_a_model_without_blocks_says_so():
    step = attention.describe(_subject(depth=0), {})
    assert step.figures() == [] and step.blocks == (blocks.Text(t("attention.no_blocks"), role="info"),)


def test_korean_takeaways_are_korean():
    takeaways = _takeaways(attention.describe(_subject("ko"), {}))
    assert takeaways["attention_readout"].startswith("1층, 헤드 1의 [CLS]:")


def test_the_handout_draws_every_figure_and_says_instead_of_asking_for_a_click():
    step = attention.describe(_subject(), {})
    page = handout._Page("en")
    page.described(5, 9, step)
    markup = html.unescape(page.html())
    for figure in step.figures():
        assert f'id="fig-{figure.key.replace("_", "-")}"' in markup
        assert plain(figure.takeaway) in markup
    assert "Layer: Layer 1 · Head: Head 1 · Query token: token 11 = patch 11 (row 3, col 3)" in markup
    assert "Attention(q, K, V) = softmax(q Kᵀ / √d) V,   d = 8" in markup  # the formula, in plain text
    assert plain(t("attention.click_hint")) not in markup and plain(t("attention.maps_caption", tokens=17)) in markup
    assert plain(t("attention.intro_paper")) in markup and "click" not in markup.lower()  # no click asked of paper
    assert "Download" not in markup


def test_paper_variants_of_text_and_the_new_blocks_on_paper():
    page = handout._Page("en")
    step = blocks.Step(
        "T",
        "Click to choose.",
        (
            blocks.Text("Click a patch.", paper="The centre patch."),
            blocks.Text("Click here.", paper=""),
            blocks.Formula(r"\frac{a}{b}", "a / b"),
            blocks.DownloadCsv("download.csv", "x.csv", "x_csv", lambda: "a\n1\n"),
        ),
        paper_intro="One patch, chosen.",
    )
    page.described(1, 9, step)
    markup = page.html()
    assert "The centre patch." in markup and "One patch, chosen." in markup and "Click" not in markup
    assert '<p class="formula"><code>a / b</code></p>' in markup and "frac" not in markup
    assert step.slides()[0].notes == ("Click to choose.", "Click a patch.", "Click here.", "$$\n\\frac{a}{b}\n$$")


def test_figures_apart_are_side_by_side_on_the_page_and_a_slide_each():
    one, two = (blocks.Figure(key, None, key) for key in ("a", "b"))  # type: ignore[arg-type]
    step = blocks.Step("T", "intro", (blocks.Figures((one, two), apart=True), blocks.Text("after")))
    assert step.slides() == [blocks.Slide((one,), ("intro",), ()), blocks.Slide((two,), ("after",), ())]
    assert step.figures() == [one, two]
