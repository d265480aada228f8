"""The tour's steps as data (vitviz.steps): what a step says is computed from its model and image,
its slides follow its blocks, and the handout draws the blocks the page draws."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from vitviz.models.config import ViTConfig
from vitviz.models.model import VisionTransformer
from vitviz.render import handout, plots
from vitviz.render.i18n import plain
from vitviz.steps import blocks, patches
from vitviz.steps.subject import Subject


def _subject(patch_size: int, image_size: int = 32, lang: str = "en") -> Subject:
    torch.manual_seed(0)
    config = ViTConfig(image_size=image_size, patch_size=patch_size, num_classes=3, embed_dim=16, depth=1, num_heads=2)
    model = VisionTransformer(config).eval()
    image = np.random.default_rng(0).integers(0, 256, (image_size, image_size, 3), dtype=np.uint8)
    pixels = torch.rand(1, 3, image_size, image_size)
    with torch.inference_mode():
        trace = model.explain(pixels)
    return Subject(model, image, trace, lang)


def _takeaways(step: blocks.Step) -> list[str]:
    return [plain(figure.takeaway) for figure in step.figures()]


def test_the_patch_step_says_what_its_model_cuts():
    fine, coarse = patches.describe(_subject(4), {}), patches.describe(_subject(8), {})
    assert "8 x 8 = 64 patches of 4 x 4 pixels, each 48 numbers" in _takeaways(fine)[0]
    assert "4 x 4 = 16 patches of 8 x 8 pixels, each 192 numbers" in _takeaways(coarse)[0]
    assert "patch 9 starts the second row" in _takeaways(fine)[1]
    assert "patch 5 starts the second row" in _takeaways(coarse)[1]
    assert fine.shape == "(1, 64, 48)" and coarse.shape == "(1, 16, 192)"


def test_a_one_row_grid_is_read_left_to_right():
    step = patches.describe(_subject(16, image_size=16), {})
    assert _takeaways(step)[1] == "The model reads the 1 patches from left to right."


@pytest.mark.parametrize(
    ("choices", "size", "side"),
    [({}, 512, 16), ({"concept_size": 224, "concept_p": 14}, 224, 14), ({"concept_size": 999, "concept_p": 3}, 512, 16),
     ({"concept_size": 32, "concept_p": 14}, 32, 16)],
)  # fmt: skip
def test_the_concept_controls_hold_only_valid_values(choices, size, side):
    step = patches.describe(_subject(4), choices)
    by_key = {control.key: control for control in step.controls()}
    assert by_key["concept_size"].value == size and by_key["concept_p"].value == side
    assert side in by_key["concept_p"].options and all(size % q == 0 for q in by_key["concept_p"].options)
    tokens = (size // side) ** 2 + 1
    assert f"{tokens} tokens make {tokens * tokens:,} attention scores" in plain(_takeaways(step)[-1])
    grid = size // side  # a slide shows the figure and its takeaway alone: the title names the sizes tried
    title = step.figures()[-1].figure.layout.title.text
    assert title == f"{size} x {size} pixels cut into {side} x {side} patches: {grid} x {grid} = {grid * grid}"


def test_slides_are_the_figure_blocks_with_the_paragraphs_as_notes():
    step = patches.describe(_subject(4), {})
    slides = step.slides()
    assert [len(slide.figures) for slide in slides] == [2, 1]  # the grid beside the gallery; the concept figure
    assert slides[0].notes[0] == step.intro and slides[0].controls == ()
    assert any("Choose an image size" in note for note in slides[1].notes)
    assert [control.key for control in slides[1].controls] == ["concept_size", "concept_p"]
    assert [figure for slide in slides for figure in slide.figures] == step.figures()


def test_a_step_without_figures_is_one_slide_of_notes():
    step = blocks.Step("T", "intro", (blocks.Text("a"), blocks.Heading("b")))
    assert step.slides() == [blocks.Slide((), ("intro", "a", "b"), ())]


def test_captions_and_boxes_after_a_figure_are_its_slide_s_and_a_slide_box_is_shown_on_it():
    """What follows a figure before anything else (its verdict, what it leaves out) belongs to that
    figure's slide, not to the next one's notes; a box marked ``slide`` is shown under the
    takeaways, where the figure alone would mislead a class."""
    figure = blocks.Figure("a", plots.bars(["x"], [1.0]), "takeaway a")
    other = blocks.Figure("b", plots.bars(["y"], [1.0]), "takeaway b")
    verdict, shown = blocks.Text("wrong", role="warning"), blocks.Text("the lab answers y", role="info", slide=True)
    before = blocks.Text("about the maps", role="info", slide=True)
    step = blocks.Step(
        "T",
        "intro",
        (figure, verdict, shown, blocks.Text("caption a", role="caption"), blocks.Text("on to b"), before, other),
    )
    first, second = step.slides()
    assert first.notes == ("intro", "wrong", "caption a") and first.callouts == (shown,)
    assert second.notes == ("on to b",) and second.callouts == (before,)  # a box before a figure: its slide
    # a paragraph (role body) after a figure is the next figure's introduction, as before
    step = blocks.Step("T", "intro", (figure, blocks.Text("on to b"), blocks.Text("note", role="caption"), other))
    assert [slide.notes for slide in step.slides()] == [("intro",), ("on to b", "note")]
    # no figure: the boxes are notes, as everything else
    alone = blocks.Step("T", "intro", (blocks.Text("a"), shown))
    assert alone.slides() == [blocks.Slide((), ("intro", "a", "the lab answers y"), ())]


def test_korean_takeaways_are_written_in_korean():
    step = patches.describe(_subject(4, lang="ko"), {})
    assert "패치 8 x 8 = 64개" in _takeaways(step)[0]


def test_the_handout_draws_every_figure_and_takeaway_of_the_described_step():
    subject = _subject(4)
    step = patches.describe(subject, {})
    page = handout._Page("en")
    page.described(2, 9, step)
    markup = page.html()
    for figure in step.figures():
        assert f'id="fig-{figure.key.replace("_", "-")}"' in markup
        assert plain(figure.takeaway) in markup
    assert "Patch size P: 16" in markup  # a control, as the value it was described with
    assert "Download" not in markup
