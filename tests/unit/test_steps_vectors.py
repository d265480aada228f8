"""Step 3, patch vectors, as data (vitviz.steps.vectors): the chosen patch is clipped to the grid,
its takeaways read its numbers, and paper gets no click."""

from __future__ import annotations

import html

import numpy as np
import pytest
import torch

from vitviz.analyses import claims
from vitviz.models.config import ViTConfig
from vitviz.models.model import VisionTransformer
from vitviz.render import handout
from vitviz.render.i18n import plain
from vitviz.steps import blocks, vectors
from vitviz.steps.subject import Subject


def subject(lang: str = "en", paper: bool = False, trained: bool = True) -> Subject:
    torch.manual_seed(0)
    config = ViTConfig(image_size=32, patch_size=4, num_classes=3, embed_dim=16, depth=1, num_heads=2)
    model = VisionTransformer(config).eval()
    image = np.random.default_rng(0).integers(0, 256, (32, 32, 3), dtype=np.uint8)
    with torch.inference_mode():
        trace = model.explain(torch.rand(1, 3, 32, 32))
    return Subject(model, image, trace, lang, trained=trained, paper=paper)


def takeaways(step: blocks.Step) -> list[str]:
    return [plain(figure.takeaway) for figure in step.figures()]


# ---- the claims it adds ---------------------------------------------------------------------------


def test_the_chosen_patch_is_placed_in_its_row_column_and_pixels():
    first = claims.text(claims.chosen_patch(0, (8, 8), 4))
    later = claims.text(claims.chosen_patch(10, (8, 8), 4))
    assert first == "Patch 1 of 64: row 1, column 1, pixels 1–4 across and 1–4 down."
    assert later == "Patch 11 of 64: row 2, column 3, pixels 9–12 across and 5–8 down."


def test_the_peak_of_x_p_is_traced_back_to_its_channel_row_and_column():
    vector = np.zeros(3 * 2 * 2)
    vector[0] = 1.0
    assert "position 1: channel R, row 1, column 1" in claims.text(claims.vector_peak(vector, 2, ["R", "G", "B"]))
    vector[7] = 2.0  # G (positions 5-8), its second row, second column
    assert "2.00, is at position 8: channel G, row 2, column 2" in claims.text(claims.vector_peak(vector, 2, "RGB"))
    assert claims.text(claims.vector_peak(vector, 2, None)).endswith("is feature channel 8 of 12.")


@pytest.mark.parametrize(
    ("length", "dim", "key"),
    [(48, 192, "claims.projection_more"), (768, 768, "claims.projection_same"), (768, 192, "claims.projection_fewer")],
)
def test_w_is_said_to_add_keep_or_drop_numbers(length, dim, key):
    assert claims.projection(length, dim).key == key
    assert f"{length} numbers" in claims.text(claims.projection(length, dim))


# ---- the step --------------------------------------------------------------------------------------


@pytest.mark.parametrize(("chosen", "used"), [(None, 36), (5, 5), (-3, 0), (999, 63), (True, 36), ("7", 36)])
def test_the_patch_control_holds_a_patch_of_the_grid(chosen, used):
    step = vectors.describe(subject(), {"patch": chosen} if chosen is not None else {})
    (control,) = step.controls()
    assert control.key == "patch" and control.value == used and control.options == tuple(range(64))
    assert control.format(used) == f"patch {used + 1} (row {used // 8 + 1}, col {used % 8 + 1})"
    assert control.static == f"Patch shown: {control.format(used)}"
    assert takeaways(step)[0].startswith(f"Patch {used + 1} of 64:")
    grid = step.figures()[0]
    assert grid.select == blocks.Select("patch", 64)


def test_the_figures_show_the_chosen_patch_and_say_what_they_show():
    shown = subject()
    step = vectors.describe(shown, {"patch": 9})
    assert [figure.key for figure in step.figures()] == [
        "vectors_grid",
        "vectors_planes",
        "vectors_flat",
        "vectors_token",
        "vectors_components",
    ]
    vector = shown.trace.patches[0, 9].numpy()
    planes = step.figures()[1]
    assert [note.text for note in planes.figure.layout.annotations] == [
        "c = 1 (R)<br>1-16",
        "c = 2 (G)<br>17-32",
        "c = 3 (B)<br>33-48",
    ]
    means = vector.reshape(3, 16).mean(axis=1)
    assert f"({means.max():.2f})" in plain(planes.takeaway) and f"({means.min():.2f})" in plain(planes.takeaway)
    assert f"is at position {int(vector.argmax()) + 1}:" in plain(step.figures()[2].takeaway)
    assert takeaways(step)[3].startswith("W squeezes the patch's 48 numbers into 16")
    token = step.figures()[3].figure
    assert np.allclose(np.asarray(token.data[0].y, dtype=np.float32), shown.trace.patch_tokens[0, 9].numpy())


def test_the_routes_agree_and_the_equation_has_the_models_sizes():
    step = vectors.describe(subject(), {})
    said = [block for block in step.blocks if isinstance(block, blocks.Text) and block.role == "success"]
    assert len(said) == 1 and said[0].text.startswith("All routes agree")
    (formula,) = [block for block in step.blocks if isinstance(block, blocks.Formula)]
    assert r"_{16 \times 48}" in formula.latex and formula.text == "z_p (16) = W (16 x 48) x_p (48) + b (16)"


def test_an_untrained_model_is_warned_about_its_filters():
    def notes(step):
        return [block.text for block in step.blocks if isinstance(block, blocks.Text) and block.role == "info"]

    assert notes(vectors.describe(subject(trained=True), {})) == []
    assert len(notes(vectors.describe(subject(trained=False), {}))) == 1


def test_slides_follow_the_figure_rows_with_the_patch_control_from_the_first():
    step = vectors.describe(subject(), {})
    slides = step.slides()
    assert [len(slide.figures) for slide in slides] == [2, 1, 1, 1]
    assert all([control.key for control in slide.controls] == ["patch"] for slide in slides)
    assert any(note.startswith("$$") for note in slides[2].notes)  # the equation, in the notes of W's slide


def test_paper_is_told_which_patch_without_a_click_or_a_hover():
    page, paper = vectors.describe(subject(), {}), vectors.describe(subject(paper=True), {})
    assert "Click" in page.figures()[0].figure.layout.title.text
    assert paper.figures()[0].figure.layout.title.text == "Patch 37, outlined"
    captions = " ".join(block.text for block in paper.blocks if isinstance(block, blocks.Text))
    assert "hover" not in captions and "click" not in captions.lower()


def test_korean_takeaways_are_korean():
    assert "패치 64개 중 패치 37" in takeaways(vectors.describe(subject("ko"), {}))[0]


def test_the_handout_draws_every_figure_takeaway_and_the_equation():
    step = vectors.describe(subject(paper=True), {})
    page = handout._Page("en")
    page.described(3, 9, step)
    markup = page.html()
    for figure in step.figures():
        assert f'id="fig-{figure.key.replace("_", "-")}"' in markup
        assert html.escape(plain(figure.takeaway)) in markup
    assert "Patch shown: patch 37 (row 5, col 5)" in markup
    assert '<p class="formula"><code>z_p (16) = W (16 x 48) x_p (48) + b (16)</code></p>' in markup


@pytest.mark.parametrize("lang", ["en", "ko"])
def test_a_grey_model_s_filters_are_grey_pictures_and_a_colour_model_s_colour_ones(lang):
    torch.manual_seed(0)
    config = ViTConfig(image_size=28, patch_size=7, in_chans=1, num_classes=3, embed_dim=16, depth=1, num_heads=2)
    model = VisionTransformer(config).eval()
    image = np.random.default_rng(0).integers(0, 256, (28, 28), dtype=np.uint8)
    with torch.inference_mode():
        trace = model.explain(torch.rand(1, 1, 28, 28))
    grey = vectors.describe(Subject(model, image, trace, lang), {})
    colour = vectors.describe(subject(lang), {})

    def said(step: blocks.Step) -> str:
        return " ".join(plain(b.text) for b in step.blocks if isinstance(b, blocks.Text))

    grey_word, colour_word = ("grey picture", "colour picture") if lang == "en" else ("흑백 그림", "컬러 그림")
    assert said(grey).count(grey_word) == 2 and colour_word not in said(grey)
    assert said(colour).count(colour_word) == 2 and grey_word not in said(colour)
