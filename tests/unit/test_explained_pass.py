"""Every curve and experiment set beside a map follows the answer the map explains
(``vitviz.models.model.explained_pass``): a ViT's one pass, as the tour traces it, even where the
ViT answers elsewhere with the mean of its image and its mirror image (``config.test_flip``).

The model is ``helpers.left_right_vit``: on ``LEFT_DARK`` its one pass answers red and the mean
with the mirror answers blue, so a curve that read the mean would start from another class's
probability. Each check compares the mirror-averaging ViT with the very same weights without the
mirror, whose ``model(pixels)`` is the one pass."""

from __future__ import annotations

import io
import json

import numpy as np
import pytest
import torch
from PIL import Image
from safetensors import safe_open

from tests.helpers import LEFT_DARK, MIRROR_CLASSES, left_right_vit
from vitviz.analyses import analysis, compare, faithfulness, occlusion
from vitviz.analyses.evaluate import explained_inference, inference, read_table, weights_hash
from vitviz.models import precision
from vitviz.models.cnn import ConvNet
from vitviz.models.config import CNNConfig
from vitviz.models.model import explained_pass

torch.set_num_threads(1)

RED = MIRROR_CLASSES.index("red")
STEPS = 8


@pytest.fixture(scope="module")
def flip():
    return left_right_vit(test_flip=True)


@pytest.fixture(scope="module")
def one():
    return left_right_vit(test_flip=False)


@pytest.fixture(scope="module")
def cnn():
    """A CNN that averages its mirror image in: its Grad-CAM explains that mean, its answer."""
    return ConvNet(CNNConfig(image_size=32, num_classes=3, stem_width=4, widths=(8, 8), test_flip=True)).eval()


def test_the_model_s_two_answers_differ_so_these_tests_can_fail(flip, one, cnn):
    with torch.inference_mode():
        assert int(flip(LEFT_DARK).argmax()) == MIRROR_CLASSES.index("blue")
        assert int(one(LEFT_DARK).argmax()) == RED
        torch.testing.assert_close(explained_pass(flip)(LEFT_DARK), one(LEFT_DARK))
    assert explained_pass(cnn) is cnn  # a CNN's Grad-CAM explains its answer, the mean of both views


def test_the_occlusion_curves_follow_the_pass_the_trace_explains(flip, one):
    trace, alone = (precision.explain(model, LEFT_DARK, torch.float32) for model in (flip, one))
    torch.testing.assert_close(trace.logits, alone.logits)
    for kind in analysis.OCCLUSION_ORDERS:
        order, curve = occlusion.curve(flip, trace, kind, STEPS)  # the prediction step's curve
        expected_order, expected = occlusion.curve(one, alone, kind, STEPS)
        assert torch.equal(order, expected_order)
        torch.testing.assert_close(curve, expected)
        from_scratch = analysis.occlusion_curve(flip, LEFT_DARK, order, STEPS)  # its first point computed too
        torch.testing.assert_close(from_scratch, expected)
        assert float(from_scratch[0]) == pytest.approx(float(trace.logits[0].softmax(-1)[RED]))


def test_the_faithfulness_curves_and_every_ranking_follow_the_one_pass(flip, one):
    found = faithfulness.faithfulness(flip, LEFT_DARK, num_random=2, steps=STEPS)
    expected = faithfulness.faithfulness(one, LEFT_DARK, num_random=2, steps=STEPS)
    assert found.target == expected.target == RED
    assert found.probability == pytest.approx(expected.probability)
    assert set(found.methods) == set(expected.methods) >= {"integrated_gradients", "occlusion", "rollout"}
    for name, curves in found.methods.items():
        other = expected.methods[name]
        if curves.scores is not None:  # integrated gradients reads the one pass's gradient too
            torch.testing.assert_close(curves.scores, other.scores, atol=1e-5, rtol=1e-4)
        torch.testing.assert_close(curves.deletion, other.deletion)
        torch.testing.assert_close(curves.insertion, other.insertion)


def test_page_8_s_experiments_change_the_vit_s_one_pass(flip, one, cnn):
    pixels = LEFT_DARK + 0.1 * torch.randn(LEFT_DARK.shape, generator=torch.Generator().manual_seed(0))
    for kind in compare.EXPERIMENTS:
        found = compare.run_experiment(kind, flip, pixels, cnn, pixels, seed=3, hidden=(0, 5))
        expected = compare.run_experiment(kind, one, pixels, cnn, pixels, seed=3, hidden=(0, 5))
        torch.testing.assert_close(found.vit_logits, expected.vit_logits)


def test_a_table_measured_on_the_mean_with_the_mirror_is_stale_for_a_vit(flip, cnn, tmp_path):
    assert (inference(flip), explained_inference(flip)) == ("image and mirror", "image")
    path = tmp_path / "table.json"
    for said, fresh in (("image", True), ("image and mirror", False)):
        path.write_text(json.dumps({"weights_sha256": weights_hash(flip), "inference": said, "rows": [1]}))
        assert (read_table(path, flip) is not None) == fresh
    assert explained_inference(cnn) == inference(cnn) == "image and mirror"


def test_stored_occlusion_curves_say_the_pass_they_follow(flip, tmp_path):
    image = io.BytesIO()
    Image.fromarray(np.tile(np.arange(32, dtype=np.uint8)[None, :, None] * 8, (32, 1, 3))).save(image, "PNG")
    path = tmp_path / "curves.safetensors"
    occlusion.write(flip, [image.getvalue()], path)
    with safe_open(str(path), framework="pt") as file:
        assert file.metadata()["inference"] == "image"
    assert occlusion.read_stored(path, flip) is not None
