"""Step 8 as data (vitviz.steps.compare): a tiny ViT beside a tiny CNN; its takeaways read its
numbers, its controls hold only valid values, the hiding experiment is a figure to click, and
the handout draws every figure the page draws."""

from __future__ import annotations

import html

import numpy as np
import pytest
import torch
from PIL import Image

from vitviz.analyses import analysis, claims
from vitviz.analyses import compare as analyses
from vitviz.models import zoo
from vitviz.models.cnn import ConvNet, receptive_fields
from vitviz.models.config import CNNConfig, ViTConfig
from vitviz.models.data import to_tensor
from vitviz.models.model import VisionTransformer
from vitviz.render import handout
from vitviz.render.i18n import plain
from vitviz.steps import blocks, compare
from vitviz.steps.subject import Compute, Subject

torch.set_num_threads(1)
CLASSES = ("red", "green", "blue")
CNN = "tiny-cnn.safetensors"


def _spec(name: str, config) -> zoo.ModelSpec:
    return zoo.ModelSpec(
        name=name, title=name, source="file", config=config, trained=False, offline=True, description=""
    )


@pytest.fixture(scope="module")
def subject() -> Subject:
    torch.manual_seed(0)
    config = ViTConfig(
        image_size=32, patch_size=8, num_classes=3, embed_dim=16, depth=2, num_heads=2, class_names=CLASSES
    )
    vit = VisionTransformer(config).eval()
    with torch.no_grad():
        for block in vit.blocks:  # q and k scaled up: attention with peaks, so that its maps and reach differ
            block.attn.qkv.weight[:32] *= 30
    cnn_config = CNNConfig(image_size=32, num_classes=3, stem_width=4, widths=(8, 8), class_names=CLASSES)
    cnn = ConvNet(cnn_config).eval()
    image = np.random.default_rng(0).integers(0, 256, (32, 32, 3), dtype=np.uint8)
    with torch.inference_mode():
        trace = vit.explain(torch.rand(1, 3, 32, 32))
    compute = Compute({CNN: zoo.Loaded(cnn, _spec(CNN, cnn_config))})
    return Subject(vit, image, trace, compute=compute)


def describe(subject: Subject, **choices: object) -> blocks.Step:
    return compare.describe(subject, {"compare_cnn_path": CNN, **choices})


def test_every_figure_of_the_page_has_a_takeaway_read_from_its_numbers(subject):
    step = describe(subject)
    said = {figure.key: plain(figure.takeaway) for figure in step.figures()}
    assert list(said) == [
        "compare_vit_top", "compare_cnn_top", "compare_map_rollout", "compare_map_grad_rollout",
        "compare_map_gradcam", "compare_reach", "compare_input",
    ]  # fmt: skip
    vit, trace = subject.model, subject.trace
    cnn = subject.compute.model(CNN).model
    pixels = compare_pixels(subject, cnn)
    with torch.inference_mode():
        cnn_before = cnn(pixels)
    # both answers: every class by its probability, best first, from each model's own logits
    for key, logits in (("compare_vit_top", trace.logits), ("compare_cnn_top", cnn_before)):
        probs = logits[0].softmax(-1)
        order = probs.argsort(descending=True).tolist()
        expected = claims.top_answer([CLASSES[i] for i in order], [float(probs[i]) for i in order])
        assert said[key] == plain(claims.text(expected))
    assert said["compare_vit_top"] != said["compare_cnn_top"]  # the two answer differently: a swap would show
    # the maps, computed here rather than by the step's comparison, each on its own 0..1 scale; no true class,
    # so they explain the ViT's answer
    explained = int(trace.logits[0].argmax())
    maps = {
        "rollout": analysis.rollout_map(trace)[0].numpy(),
        "grad_rollout": analysis.grad_rollout(vit, trace.pixels.clone(), explained).numpy(),
        "gradcam": analyses.gradcam(cnn, pixels, explained).numpy(),
    }
    for key, values in maps.items():
        assert said[f"compare_map_{key}"] == plain(claims.text(claims.map_focus(values / values.max())))
    assert len({said[f"compare_map_{key}"] for key in maps}) == 3  # a takeaway under another map would show
    fields = [(field.name, field.size) for field in receptive_fields(cnn)]
    distances = analysis.mean_attention_distance(trace, 8).numpy()  # both read 32 x 32: nothing to scale
    assert said["compare_reach"] == plain(claims.text(claims.reach(fields, distances, 32)))
    outcome = subject.compute.experiment(subject, CNN, "shuffle", 0, 0, ())
    answer = lambda logits: (CLASSES[int(logits[0].argmax())], float(logits[0].softmax(-1).max()))  # noqa: E731
    expected = claims.experiment(
        answer(subject.trace.logits), answer(outcome.vit_logits), answer(cnn_before), answer(outcome.cnn_logits)
    )
    assert said["compare_input"] == plain(claims.text(expected))


def compare_pixels(subject: Subject, cnn) -> torch.Tensor:
    """The image as the CNN reads it, (1, C, H, W)."""
    return to_tensor(Image.fromarray(subject.image), cnn.config.preprocess, cnn.config.in_chans)


def test_an_experiment_the_cnn_cannot_take_says_so(subject):
    step = describe(subject, compare_experiment="no_position")
    (table,) = [block for block in step.blocks if isinstance(block, blocks.Table)]
    assert table.rows[1]["After"] == "does not apply"
    assert "does not apply to the CNN" in plain(step.figures()[-1].takeaway)


@pytest.mark.parametrize(
    ("choices", "kind", "shift", "seed", "explained"),
    [({}, "shuffle", 2, 0, None), ({"compare_experiment": "shift", "compare_shift": 3}, "shift", 3, 0, None),
     ({"compare_experiment": "nope", "compare_shift": 9, "compare_seed": -4}, "shuffle", 2, 0, None),
     ({"compare_class": 99}, "shuffle", 2, 0, 2), ({"compare_class": -3}, "shuffle", 2, 0, 0)],
)  # fmt: skip
def test_the_controls_hold_only_valid_values(subject, choices, kind, shift, seed, explained):
    by_key = {control.key: control for control in describe(subject, **choices).controls()}
    assert by_key["compare_experiment"].value == kind
    assert by_key["compare_shift"].value == shift and by_key["compare_shift"].disabled == (kind != "shift")
    assert by_key["compare_seed"].value == seed and by_key["compare_seed"].disabled == (kind != "shuffle")
    assert (by_key["compare_shift"].static == "") == (kind != "shift")  # paper names only the setting in use
    if explained is not None:
        assert by_key["compare_class"].value == explained


def test_hiding_is_a_figure_whose_clicks_toggle_patches(subject):
    step = describe(subject, compare_experiment="hide", compare_hidden=[0, 5, 99])
    grid = step.figures()[-1]
    assert grid.key == "compare_hide_grid" and grid.select == blocks.Select("compare_hidden", 16, toggle=True)
    (button,) = [block for block in step.blocks if isinstance(block, blocks.Button)]
    assert button.sets == {"compare_hidden": []} and not button.disabled
    assert any("2 hidden" in block.text for block in step.blocks if isinstance(block, blocks.Text))  # 99 is no patch
    none = describe(subject, compare_experiment="hide")
    assert [block for block in none.blocks if isinstance(block, blocks.Button)][0].disabled


def test_integrated_gradients_add_a_second_row_of_maps_a_third_wide(subject):
    step = describe(subject, compare_ig=True)
    rows = [block for block in step.blocks if isinstance(block, blocks.Figures) and "map" in block.figures[0].key]
    assert [len(row.figures) for row in rows] == [3, 2] and rows[1].widths == (1, 1, 1)
    assert [len(slide.figures) for slide in step.slides()] == [2, 3, 2, 1, 1]


def test_a_cnn_of_other_classes_or_a_vit_in_its_place_is_said_so(subject):
    other = ConvNet(CNNConfig(image_size=32, num_classes=2, stem_width=4, widths=(8, 8), class_names=("a", "b")))
    vit = subject.model
    compute = Compute(
        {
            "two.safetensors": zoo.Loaded(other, _spec("two", other.config)),
            "vit": zoo.Loaded(vit, _spec("vit", vit.config)),
        }
    )
    shown = Subject(vit, subject.image, subject.trace, compute=compute)
    step = compare.describe(shown, {"compare_cnn_path": "two.safetensors"})
    assert step.figures() == [] and "different classes" in step.blocks[-1].text
    shown.compute.cnns = lambda: []  # with no CNN in the list, a ViT in the box is all there is: one sentence
    step = compare.describe(shown, {"compare_cnn_path": "vit"})
    assert step.figures() == [] and "is not a CNN" in step.blocks[-1].text
    assert "No CNN is in the model list" in compare.describe(shown, {}).blocks[-1].text


def test_the_handout_draws_every_figure_and_the_cnn_it_used(subject):
    step = describe(subject)
    page = handout._Page("en")
    page.described(8, 9, step)
    markup = page.html()
    for figure in step.figures():
        assert f'id="fig-{figure.key.replace("_", "-")}"' in markup
        assert html.escape(plain(figure.takeaway)) in markup
    assert f"CNN to compare with: {CNN}" in markup and "Shuffle number (another order): 0" in markup
    assert "Shift right" not in markup  # the shift's slider is not in use: paper says nothing of it
    assert markup.count('class="figure"') == len(step.figures()) == 7


@pytest.mark.parametrize("lang", ["en", "ko"])
def test_the_toggle_says_the_steps_integrated_gradients_take(subject, monkeypatch, lang):
    labels = {}
    for steps in (analyses.IG_STEPS, 7):
        monkeypatch.setattr(analyses, "IG_STEPS", steps)
        translated = Subject(subject.model, subject.image, subject.trace, lang, compute=subject.compute)
        by_key = {control.key: control for control in describe(translated).controls()}
        labels[steps] = plain(by_key["compare_ig"].label)
    assert "32" in labels[32] and "7" in labels[7] and "32" not in labels[7], labels
