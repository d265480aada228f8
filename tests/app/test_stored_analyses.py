"""The prediction step reads a CIFAR-10 test image's occlusion curves, and page 8 its first view
of the comparison with the CNN, from the tables shipped beside the weights
(vitviz.analyses.occlusion, vitviz.analyses.comparison) instead of computing them, and computes
what the tables do not hold: another image, or a server that runs its passes in bf16."""

from __future__ import annotations

import numpy as np
import pytest

from tests.apptest import errors, figure, figure_array, open_page, tables
from tests.conftest import CIFAR10
from vitviz.analyses import analysis, comparison, occlusion
from vitviz.app import caches
from vitviz.models import zoo
from vitviz.models.data import folder_image_bytes
from vitviz.render.i18n import class_label

pytestmark = pytest.mark.cifar10


@pytest.fixture
def planted(monkeypatch) -> occlusion.Table:
    """The shipped table with every curve turned upside down (1 - p): what no pass computes, so a
    page that shows it read the table."""
    stored = caches.stored_occlusion(zoo.default_name())
    assert stored is not None
    upside_down = occlusion.Table(stored.kinds, stored.steps, stored.rows, 1 - stored.curves)
    monkeypatch.setattr(caches, "stored_occlusion", lambda name: upside_down)
    caches.cached_occlusion.clear()
    yield upside_down
    caches.cached_occlusion.clear()


def _shown_curves(at) -> list[np.ndarray]:
    return [figure_array(trace["y"]) for trace in figure(at, "prediction_occlusion")["data"]]


def test_a_test_image_s_curves_come_from_the_shipped_table(planted):
    at = open_page("app_pages/7_prediction.py", source="test", test="cat/3")
    assert errors(at) == []
    image = folder_image_bytes(CIFAR10 / "test", "cat", 3)
    steps = planted.steps
    wanted = [planted.curve(image, kind, steps) for kind in analysis.OCCLUSION_ORDERS]
    shown = _shown_curves(at)
    assert len(shown) == 2 and all(any(np.allclose(s, w) for s in shown) for w in wanted)


def test_a_sample_photo_and_a_bf16_server_compute_their_curves(planted, monkeypatch):
    name = zoo.default_name()
    image = folder_image_bytes(CIFAR10 / "test", "cat", 3)
    sample = (caches.SAMPLES / caches.DEFAULT_SAMPLE).read_bytes()
    assert planted.curve(sample, "rollout", planted.steps) is None  # not a test image
    model, _ = caches.cached_model(name)
    trace = caches.cached_trace(name, sample)
    _, computed = caches.cached_occlusion(name, sample, "rollout", planted.steps)
    np.testing.assert_array_equal(computed, occlusion.curve(model, trace, "rollout", planted.steps)[1].numpy())
    monkeypatch.setenv("VITVIZ_PRECISION", "bfloat16")
    monkeypatch.setattr(caches.precision, "native_bf16", lambda device: True)
    caches.cached_precision.clear(), caches.cached_trace.clear()
    try:
        _, in_bf16 = caches.cached_occlusion(name, image, "rollout", planted.steps)
    finally:
        caches.cached_precision.clear(), caches.cached_trace.clear()
    assert abs(in_bf16 - planted.curve(image, "rollout", planted.steps)).max() > 0.1  # not the planted table's


@pytest.fixture
def planted_comparison(monkeypatch) -> comparison.Table:
    """The shipped comparisons with every logit negated and every map mirrored: what no model
    computes, so a page that shows it read the table."""
    vit, cnn = zoo.default_name(), zoo.SHIPPED_CNN
    stored = caches.stored_comparison(vit, cnn)
    assert stored is not None
    fields = {name: -values if "logits" in name else values[..., ::-1].copy() for name, values in stored.fields.items()}
    upside_down = comparison.Table(stored.seed, stored.rows, fields)
    monkeypatch.setattr(caches, "stored_comparison", lambda vit_name, cnn_name: upside_down)
    caches.cached_comparison.clear(), caches.cached_experiment.clear()
    yield upside_down
    caches.cached_comparison.clear(), caches.cached_experiment.clear()


def test_a_test_image_s_comparison_and_shuffle_come_from_the_shipped_table(planted_comparison):
    at = open_page("app_pages/8_compare.py", source="test", test="cat/3")
    assert errors(at) == []
    names = list(caches.cached_model(zoo.default_name())[0].config.class_names)
    image = folder_image_bytes(CIFAR10 / "test", "cat", 3)
    planted = planted_comparison.row(image, names.index("cat"))
    cnn_top = figure(at, "compare_cnn_top")["data"][0]["y"][0]
    assert cnn_top == class_label(names[int(np.argmax(planted["cnn_logits"]))], "en")  # the negated logits' winner
    shown = figure_array(figure(at, "compare_map_grad_rollout")["data"][1]["z"])
    np.testing.assert_allclose(shown, planted["grad_rollout"] / planted["grad_rollout"].max(), rtol=1e-4, atol=1e-5)
    table = tables(at)[0]
    shuffled = {row.iloc[0]: row.iloc[2] for _, row in table.iterrows()}
    assert shuffled["ViT"].startswith(class_label(names[int(np.argmax(planted["shuffle_vit_logits"]))], "en"))
