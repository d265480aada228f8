"""The lab's page "How the ViT learned" (app_pages/13_learn.py) through AppTest: the shipped grey
run's snapshots, for the session's grey image or, beside a colour model, a Fashion-MNIST test
image; the snapshot chooser; both languages."""

from __future__ import annotations

import io

import numpy as np
from PIL import Image

from tests.apptest import errors, figure, figure_array, open_page, open_page_in_one_run
from vitviz.models import snapshots

PAGE = "app_pages/13_learn.py"
KEYS = ["learn_attention", "learn_answer", "learn_positions", "learn_filters", "learn_curves", "learn_positions_curve"]


def grey_png() -> bytes:
    """A 28 x 28 light boot-like block on a dark ground."""
    pixels = np.zeros((28, 28), dtype=np.uint8)
    pixels[14:24, 4:24] = 200
    buffer = io.BytesIO()
    Image.fromarray(pixels).save(buffer, "PNG")
    return buffer.getvalue()


def test_beside_the_colour_vit_the_page_follows_a_fashion_test_image_and_says_so():
    at = open_page(PAGE)
    assert errors(at) == []
    run = snapshots.read()
    assert any("follows a Fashion-MNIST test image instead of yours" in i.value for i in at.info)
    for key in KEYS:
        figure(at, key)
    slider = at.select_slider(key="learn_epoch")
    assert list(slider.options) == ["Before training", *(f"After epoch {e}" for e in run.epochs[1:])]
    assert slider.value == run.epochs[-1]
    shown = figure_array(figure(at, "learn_attention")["data"][0]["z"])
    first = int(np.argmin(run.sample_indices))  # the first of the samples in the test split
    assert np.array_equal(shown[..., 0], run.samples[first][0])  # the picture the page follows
    after = figure(at, "learn_answer")["layout"]["title"]["text"]
    slider.set_value(0).run()
    assert errors(at) == []
    before = figure(at, "learn_answer")["layout"]["title"]["text"]
    # the colour ViT's session follows the grey ViT's run: the titles name it (a slide has no paragraph)
    assert "This grey ViT's answer before training" in before and "This grey ViT's answer after epoch" in after
    assert at.query_params.get("learn_epoch") in ("0", ["0"])


def test_with_the_grey_vit_the_page_draws_the_session_s_own_image():
    at = open_page(PAGE, model="fashion-mnist-vit", source="upload", upload_bytes=grey_png())
    assert errors(at) == []
    assert not any("instead of yours" in i.value for i in at.info)
    assert not [s for s in at.selectbox if s.key == "learn_sample"]
    shown = figure_array(figure(at, "learn_attention")["data"][0]["z"]).astype(int)
    assert shown[18, 10, 0] > 150 and shown[2, 2, 0] < 60  # the uploaded block, not a test image
    assert figure(at, "learn_answer")["layout"]["title"]["text"].startswith("Its answer after epoch")


def test_a_shared_link_opens_its_snapshot_in_korean():
    at = open_page_in_one_run(PAGE, lang="ko", learn_epoch=0, learn_head=1)
    assert errors(at) == []
    assert "학습 전 흑백 ViT의 답" in figure(at, "learn_answer")["layout"]["title"]["text"]
    assert "헤드 2" in figure(at, "learn_attention")["layout"]["title"]["text"]
    assert any("흑백 ViT" in c.value for c in at.caption)
