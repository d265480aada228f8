"""Every test image's first view of page 8, stored beside the ViT's weights
(vitviz.analyses.comparison): a stored row is what the page computes for that image and class,
and it is read only where both models, the image's bytes and the class are the very ones."""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch

from tests.conftest import CIFAR10
from tests.helpers import CLASSES, make_image_folder
from vitviz.analyses import compare, comparison
from vitviz.analyses.occlusion import every_test_image
from vitviz.models import data as vdata
from vitviz.models import precision, zoo
from vitviz.models.cnn import ConvNet
from vitviz.models.config import CNNConfig
from vitviz.models.model import VisionTransformer


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    return make_image_folder(tmp_path_factory.mktemp("data"), per_class=2, splits=("test",))


@pytest.fixture
def models(tiny_config) -> tuple[VisionTransformer, ConvNet]:
    torch.manual_seed(0)
    vit = VisionTransformer(tiny_config.replace(depth=2, num_classes=3, class_names=CLASSES)).eval()
    config = CNNConfig(image_size=32, num_classes=3, stem_width=4, widths=(8, 8), class_names=CLASSES, test_flip=True)
    return vit, ConvNet(config).eval()


def _live(vit: VisionTransformer, cnn: ConvNet, image_bytes: bytes, class_index: int) -> dict:
    """What page 8 computes (vitviz.app.caches.cached_comparison and cached_experiment)."""
    vit_pixels, cnn_pixels = comparison.inputs(vit, cnn, image_bytes)
    trace = precision.explain(vit, vit_pixels)
    found = compare.comparison(vit, vit_pixels, trace, cnn, cnn_pixels, class_index, with_ig=False)
    shuffled = compare.run_experiment("shuffle", vit, trace.pixels, cnn, cnn_pixels, seed=compare.DEFAULT_SEED)
    return found | {"shuffled": shuffled, "size": tuple(cnn_pixels.shape[-2:]), "pixels": trace.pixels}


def test_the_command_stores_what_page_8_computes_for_every_test_image_and_its_class(folder, models, tmp_path, capsys):
    vit, cnn = models
    weights, cnn_weights = tmp_path / "vit.safetensors", tmp_path / "cnn.safetensors"
    zoo.save(vit, weights), zoo.save(cnn, cnn_weights)
    out = comparison.comparison_path(weights)
    argv = ["--model", str(weights), "--cnn", str(cnn_weights), "--data", str(folder), "--json", "--out", str(out)]
    assert comparison.main(argv) == 0
    assert json.loads(capsys.readouterr().out.strip().splitlines()[-1])["images"] == 6
    table = comparison.read_stored(out, vit, cnn)
    assert out.name == "vit.comparison.safetensors" and table is not None and table.seed == compare.DEFAULT_SEED
    for class_name, image_bytes in list(every_test_image(str(folder))):
        class_index = CLASSES.index(class_name)  # a test image's page explains its true class first
        assert table.row(image_bytes, (class_index + 1) % 3) is None
        stored, live = table.row(image_bytes, class_index), _live(vit, cnn, image_bytes, class_index)
        np.testing.assert_array_equal(stored["cnn_logits"], live["cnn_logits"])
        np.testing.assert_array_equal(stored["grad_rollout"], live["grad_rollout"])
        gradcam = compare.gradcam_from_maps(torch.from_numpy(stored["gradcam_maps"]), live["size"], True)
        np.testing.assert_array_equal(gradcam.numpy(), live["gradcam"])
        np.testing.assert_array_equal(stored["shuffle_vit_logits"], live["shuffled"].vit_logits[0].numpy())
        np.testing.assert_array_equal(stored["shuffle_cnn_logits"], live["shuffled"].cnn_logits[0].numpy())
        shuffled_input = compare.shuffled_input(vit, live["pixels"], table.seed)
        assert torch.equal(shuffled_input, live["shuffled"].vit_input)


def test_other_weights_of_either_model_find_no_stored_row(folder, models, tmp_path):
    vit, cnn = models
    path = tmp_path / "vit.comparison.safetensors"
    images = [(image_bytes, CLASSES.index(name)) for name, image_bytes in list(every_test_image(str(folder)))[:2]]
    assert comparison.write(vit, cnn, images, path) == 2
    assert comparison.read_stored(path, vit, cnn).row(images[1][0]) is not None  # any class: the experiment's
    with torch.no_grad():
        cnn.head.bias += 1.0
    assert comparison.read_stored(path, vit, cnn) is None
    with torch.no_grad():
        cnn.head.bias -= 1.0
        vit.head.bias += 1.0
    assert comparison.read_stored(path, vit, cnn) is None


def test_models_that_name_other_classes_are_refused_with_a_sentence(folder, models, tmp_path, capsys):
    vit, _ = models
    other = ConvNet(CNNConfig(image_size=32, num_classes=3, stem_width=4, widths=(8, 8), class_names=("a", "b", "c")))
    zoo.save(vit, tmp_path / "vit.safetensors"), zoo.save(other.eval(), tmp_path / "cnn.safetensors")
    argv = ["--model", str(tmp_path / "vit.safetensors"), "--cnn", str(tmp_path / "cnn.safetensors")]
    assert comparison.main([*argv, "--data", str(folder), "--out", str(tmp_path / "o")]) == 2
    assert "do not name the same classes" in capsys.readouterr().err


SHIPPED_WEIGHTS = zoo.MODELS_DIR / f"{zoo.SHIPPED}.safetensors"


def test_the_shipped_comparisons_were_made_by_the_shipped_models():
    vit, _ = zoo.load(zoo.SHIPPED, device="cpu")
    cnn, _ = zoo.load("cifar10-cnn", device="cpu")
    table = comparison.read_stored(comparison.comparison_path(SHIPPED_WEIGHTS), vit, cnn)
    assert table is not None, "the comparisons are missing or stale: python -m tools.ship --analyses-only"
    assert len(table.rows) == 10_000 and table.seed == compare.DEFAULT_SEED


@pytest.mark.cifar10
def test_the_shipped_comparisons_are_what_the_library_computes_for_cifar10_test_images():
    vit, _ = zoo.load(zoo.SHIPPED, device="cpu")
    cnn, _ = zoo.load("cifar10-cnn", device="cpu")
    table = comparison.read_stored(comparison.comparison_path(SHIPPED_WEIGHTS), vit, cnn)
    names = list(vit.config.class_names)
    for name, index in [("airplane", 0), ("cat", 517), ("ship", 999)]:
        image_bytes = vdata.folder_image_bytes(CIFAR10 / "test", name, index)
        stored, live = table.row(image_bytes, names.index(name)), _live(vit, cnn, image_bytes, names.index(name))
        for key in ("cnn_logits", "grad_rollout"):
            np.testing.assert_allclose(stored[key], live[key], atol=1e-5, err_msg=f"{name} {key}")
        gradcam = compare.gradcam_from_maps(torch.from_numpy(stored["gradcam_maps"]), live["size"], True)
        np.testing.assert_allclose(gradcam.numpy(), live["gradcam"], atol=1e-5, err_msg=name)
        np.testing.assert_allclose(stored["shuffle_vit_logits"], live["shuffled"].vit_logits[0].numpy(), atol=1e-5)
