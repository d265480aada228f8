"""Every test image's occlusion curves, stored beside the weights (vitviz.analyses.occlusion): a
stored curve is the curve the prediction step computes, and the app reads one only where the
weights, the image's bytes, the order and the steps are the very ones it was made with."""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch

from tests.conftest import CIFAR10
from tests.helpers import CLASSES, make_image_folder
from vitviz.analyses import analysis, occlusion
from vitviz.models import data as vdata
from vitviz.models import precision, zoo
from vitviz.models.model import VisionTransformer
from vitviz.steps.subject import Compute, Subject


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    return make_image_folder(tmp_path_factory.mktemp("data"), per_class=3, splits=("test",))


@pytest.fixture
def classifier(tiny_config) -> VisionTransformer:
    torch.manual_seed(0)
    return VisionTransformer(tiny_config.replace(depth=2, num_classes=3, class_names=CLASSES)).eval()


def _explained(model: VisionTransformer, image_bytes: bytes):
    image = vdata.load_image(image_bytes)
    return precision.explain(model, vdata.to_tensor(image, model.config.preprocess, model.config.in_chans))


def test_the_command_stores_the_curve_the_prediction_step_computes_for_every_test_image(
    folder, classifier, tmp_path, capsys
):
    weights = tmp_path / "tiny.safetensors"
    zoo.save(classifier, weights)
    out = occlusion.occlusion_path(weights)
    assert occlusion.main(["--model", str(weights), "--data", str(folder), "--json", "--out", str(out)]) == 0
    assert json.loads(capsys.readouterr().out.strip().splitlines()[-1])["images"] == 9
    table = occlusion.read_stored(out, classifier)
    assert out.name == "tiny.occlusion.safetensors" and table is not None and len(table.rows) == 9
    steps = analysis.occlusion_steps(classifier)
    images = [image for _, image in occlusion.every_test_image(str(folder))]
    assert images[0] == (folder / "test" / CLASSES[0] / "0000.png").read_bytes()  # the lab's first image
    for image_bytes in images:
        subject = Subject(classifier, np.zeros((1, 1, 3), np.uint8), _explained(classifier, image_bytes), "en")
        for kind in analysis.OCCLUSION_ORDERS:
            _, live = Compute().occlusion(subject, kind, steps)  # what the handout and a page compute
            np.testing.assert_array_equal(table.curve(image_bytes, kind, steps), live)


def test_another_image_order_count_of_steps_or_weights_finds_no_stored_curve(folder, classifier, tmp_path):
    path = tmp_path / "tiny.occlusion.safetensors"
    images = [image for _, image in occlusion.every_test_image(str(folder))][:2]
    assert occlusion.write(classifier, images, path) == 2
    table = occlusion.read_stored(path, classifier)
    steps = analysis.occlusion_steps(classifier)
    assert table.curve(images[1], "random", steps) is not None
    assert table.curve(images[1] + b"\0", "random", steps) is None  # the same picture, other bytes
    assert table.curve(images[1], "random", steps + 1) is None
    assert table.curve(images[1], "saliency", steps) is None
    with torch.no_grad():
        classifier.head.bias += 1.0
    assert occlusion.read_stored(path, classifier) is None
    path.write_bytes(b"not a safetensors file")
    assert occlusion.read_stored(path, classifier) is None


def test_a_model_without_a_head_is_refused_with_a_sentence(tiny_config, tmp_path, capsys):
    weights = tmp_path / "headless.safetensors"
    zoo.save(VisionTransformer(tiny_config.replace(num_classes=0)).eval(), weights)
    assert occlusion.main(["--model", str(weights), "--data", str(tmp_path), "--out", str(tmp_path / "o")]) == 2
    assert "not a ViT classifier" in capsys.readouterr().err


SHIPPED_WEIGHTS = zoo.MODELS_DIR / f"{zoo.SHIPPED}.safetensors"


@pytest.mark.parametrize("name", [zoo.SHIPPED, zoo.SHIPPED_FASHION])
def test_the_shipped_curves_were_made_by_the_shipped_weights(name):
    model, _ = zoo.load(name, device="cpu")
    table = occlusion.read_stored(occlusion.occlusion_path(zoo.MODELS_DIR / f"{name}.safetensors"), model)
    assert table is not None, "the curves are missing or stale: python -m tools.ship --analyses-only"
    assert len(table.rows) == 10_000 and table.steps == analysis.occlusion_steps(model)
    assert table.kinds == analysis.OCCLUSION_ORDERS


@pytest.mark.fashion_mnist
def test_the_grey_vit_s_shipped_curves_are_what_the_library_computes_for_its_test_images():
    model, _ = zoo.load(zoo.SHIPPED_FASHION, device="cpu")
    table = occlusion.read_stored(
        occlusion.occlusion_path(zoo.MODELS_DIR / f"{zoo.SHIPPED_FASHION}.safetensors"), model
    )
    steps = analysis.occlusion_steps(model)
    chosen = {0, 517, 4_999, 9_999}  # positions in the lab's order
    images = [found for i, found in enumerate(occlusion.every_test_image("fashion-mnist")) if i in chosen]
    assert len(images) == len(chosen)
    for name, image_bytes in images:
        trace = _explained(model, image_bytes)
        for kind in analysis.OCCLUSION_ORDERS:
            expected = occlusion.curve(model, trace, kind, steps)[1]
            np.testing.assert_allclose(table.curve(image_bytes, kind, steps), expected, atol=1e-5, err_msg=name)


@pytest.mark.cifar10
def test_the_shipped_curves_are_what_the_library_computes_for_cifar10_test_images():
    model, _ = zoo.load(zoo.SHIPPED, device="cpu")
    table = occlusion.read_stored(occlusion.occlusion_path(SHIPPED_WEIGHTS), model)
    steps = analysis.occlusion_steps(model)
    for name, index in [("airplane", 0), ("cat", 517), ("frog", 999), ("truck", 250)]:
        image_bytes = vdata.folder_image_bytes(CIFAR10 / "test", name, index)
        stored = {kind: table.curve(image_bytes, kind, steps) for kind in analysis.OCCLUSION_ORDERS}
        trace = _explained(model, image_bytes)
        for kind, curve in stored.items():
            np.testing.assert_allclose(curve, occlusion.curve(model, trace, kind, steps)[1], atol=1e-5, err_msg=name)
