"""Step 1, the image to the model's input, as data (vitviz.steps.model_input): what the crop keeps,
how far the photo is scaled, and what normalisation does, each read from the numbers."""

from __future__ import annotations

import html
import io

import numpy as np
import torch
from PIL import Image

from vitviz.analyses import claims
from vitviz.models.config import Preprocess, ViTConfig
from vitviz.models.data import load_image, to_tensor
from vitviz.models.model import VisionTransformer
from vitviz.render import handout
from vitviz.render.i18n import plain
from vitviz.steps import blocks, model_input
from vitviz.steps.subject import Subject


def subject(width: int = 48, height: int = 32, lang: str = "en", crop: bool = True) -> Subject:
    torch.manual_seed(0)
    pre = Preprocess(resize=32, crop=(32, 32) if crop else None, mean=(0.5, 0.5, 0.5), std=(0.25, 0.25, 0.25))
    config = ViTConfig(image_size=32, patch_size=4, num_classes=3, embed_dim=16, depth=1, num_heads=2, preprocess=pre)
    model = VisionTransformer(config).eval()
    buffer = io.BytesIO()
    pixels = np.random.default_rng(0).integers(0, 256, (height, width, 3), dtype=np.uint8)
    Image.fromarray(pixels).save(buffer, "PNG")
    picture = load_image(buffer.getvalue())
    with torch.inference_mode():
        trace = model.explain(to_tensor(picture, pre))
    return Subject(model, np.asarray(picture), trace, lang, image_bytes=buffer.getvalue())


def takeaways(step: blocks.Step) -> list[str]:
    return [plain(figure.takeaway) for figure in step.figures()]


# ---- the claims it adds ---------------------------------------------------------------------------

CROP = Preprocess(resize=32, crop=(32, 32))


def test_the_crop_keeps_the_middle_of_a_wide_photo_and_all_of_a_square_one():
    wide = claims.text(claims.kept_region((600, 400), CROP))
    assert wide == "The centre crop keeps the middle 400 x 400 px, 67% of the photo; its edges are cut."
    assert claims.text(claims.kept_region((400, 400), CROP)) == "The whole photo goes in: no crop cuts its edges."
    assert claims.kept_region((600, 400), Preprocess(resize=32, crop=None)).key == "claims.kept_all"


def test_the_scale_says_shrunk_enlarged_or_as_it_was():
    assert "about 12.5 x 12.5 pixels of the photo" in claims.text(claims.input_scale((600, 400), CROP))
    assert "about 2.0 x 2.0 input pixels" in claims.text(claims.input_scale((16, 16), CROP))
    assert claims.input_scale((32, 32), CROP).key == "claims.scale_same"


def test_the_highest_channel_is_the_one_with_the_highest_mean():
    red_high = claims.text(claims.channel_means(["R", "G", "B"], np.array([[1.0, 0.8], [0.0, 0.2], [-1.0, -0.6]])))
    blue_high = claims.text(claims.channel_means(["R", "G", "B"], np.array([[-1.0, -0.6], [0.0, 0.2], [1.0, 0.8]])))
    assert red_high == "R is the highest channel on average (0.90), B the lowest (-0.80)."
    assert blue_high == "B is the highest channel on average (0.90), R the lowest (-0.80)."
    assert claims.text(claims.channel_means(["L"], np.full((1, 4), 0.25))) == "Its one channel averages 0.25."


def test_a_low_contrast_picture_is_told_from_one_that_uses_the_range():
    full = claims.pixel_range(np.linspace(0, 1, 1001))
    narrow = claims.pixel_range(np.linspace(0.4, 0.6, 1001))
    assert full.key == "claims.range_full" and narrow.key == "claims.range_narrow"
    assert "between 0.40 and 0.60" in claims.text(narrow)


def test_normalisation_says_where_the_mean_lands():
    before = np.full(10, 0.5)
    near, dark, bright = (claims.normalisation(before, before * 0 + mean) for mean in (0.1, -1.0, 1.0))
    assert (near.key, dark.key, bright.key) == (
        "claims.normalised.near",
        "claims.normalised.below",
        "claims.normalised.above",
    )
    assert "from 0.50 to -1.00, below 0" in claims.text(dark)


# ---- the step --------------------------------------------------------------------------------------


def test_the_input_step_reads_its_photo():
    step = model_input.describe(subject(48, 32), {})
    assert [figure.key for figure in step.figures()] == [
        "input_original",
        "input_resized",
        "input_channels",
        "input_hist_before",
        "input_hist_after",
    ]
    said = takeaways(step)
    assert said[0] == "The centre crop keeps the middle 32 x 32 px, 67% of the photo; its edges are cut."
    assert said[1] == "The photo already has the input's size: one photo pixel is one input pixel."
    square = takeaways(model_input.describe(subject(64, 64), {}))
    assert square[0] == "The whole photo goes in: no crop cuts its edges."
    assert "about 2.0 x 2.0 pixels of the photo" in square[1]
    assert step.figures()[0].figure.layout.title.text == "Original: 48 x 32 px"
    assert step.shape == "(1, 3, 32, 32)"


def test_the_histograms_read_the_arrays_they_draw():
    shown = subject()
    step = model_input.describe(shown, {})
    after = shown.trace.pixels[0].numpy()  # (C, H, W)
    pre = shown.config.preprocess
    # the pixels in [0, 1] undone from the input here, not read from the step's resized picture
    before = after * np.array(pre.std)[:, None, None] + np.array(pre.mean)[:, None, None]
    channels, hist_before, hist_after = step.figures()[2:]

    def drawn(figure) -> np.ndarray:
        return np.sort(np.concatenate([np.asarray(trace.x, dtype=np.float64) for trace in figure.figure.data]))

    assert np.allclose(drawn(hist_before), np.sort(before.ravel()), atol=1e-6)
    assert plain(hist_before.takeaway) == plain(claims.text(claims.pixel_range(before)))
    assert f"to {after.mean():.2f}" in plain(hist_after.takeaway)
    assert np.allclose(drawn(hist_after), np.sort(after.ravel()), atol=1e-6)
    assert plain(channels.takeaway) == plain(claims.text(claims.channel_means(["R", "G", "B"], after)))


def test_the_recipe_table_lists_the_models_preprocessing():
    step = model_input.describe(subject(), {})
    table = next(block for block in step.blocks if isinstance(block, blocks.Table))
    settings = [row["Setting"] for row in table.rows]
    assert settings[0] == "32 (shorter side), bicubic" and settings[1] == "32 x 32"
    assert settings[-1] == "(x - mean) / std, mean=(0.5, 0.5, 0.5), std=(0.25, 0.25, 0.25)"


def test_slides_are_the_photo_row_the_channels_and_the_histograms():
    step = model_input.describe(subject(), {})
    slides = step.slides()
    assert [len(slide.figures) for slide in slides] == [2, 1, 2]
    assert any("This model's preprocessing" in note for note in slides[1].notes)


def test_korean_takeaways_are_korean():
    assert "가운데 크롭" in takeaways(model_input.describe(subject(lang="ko"), {}))[0]


def test_the_handout_draws_every_figure_and_takeaway():
    step = model_input.describe(subject(), {})
    page = handout._Page("en")
    page.described(1, 9, step)
    markup = page.html()
    for figure in step.figures():
        assert f'id="fig-{figure.key.replace("_", "-")}"' in markup
        assert html.escape(plain(figure.takeaway)) in markup
    assert "Download" not in markup


def test_paper_gets_the_photo_as_a_jpeg_and_the_page_as_exact_pixels():
    page = model_input.describe(subject(120, 80), {}).figures()[0].figure
    paper_subject = subject(120, 80)
    paper = model_input.describe(Subject(**{**paper_subject.__dict__, "paper": True}), {}).figures()[0].figure
    assert page.data[0].source.startswith("data:image/png;base64,")
    assert paper.data[0].source.startswith("data:image/jpeg;base64,")
    assert len(paper.data[0].source) < len(page.data[0].source) / 2
