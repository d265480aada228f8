"""The map of the test set (vitviz.analyses.projection): its points are the test images' tokens, projected."""

from __future__ import annotations

import json

import pytest
import torch

from tests.helpers import CLASSES, make_image_folder
from vitviz.analyses import projection
from vitviz.models import zoo
from vitviz.models.data import load_split, preprocess_batch
from vitviz.models.model import VisionTransformer


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    return make_image_folder(tmp_path_factory.mktemp("data"), per_class=6, splits=("test",))


@pytest.fixture
def model(tiny_config) -> VisionTransformer:
    torch.manual_seed(0)
    return VisionTransformer(tiny_config.replace(depth=4, num_classes=3, class_names=CLASSES)).eval()


def test_the_points_are_the_test_images_tokens_projected(folder, model, tmp_path):
    data = load_split(folder, "test")
    steps = []
    made = projection.compute(model, data, methods=["pca"], batch_size=5, progress=lambda d, t: steps.append((d, t)))
    assert made.layers == projection.default_layers(4) == [2, 4]
    assert steps[-1] == (8, 8) and [d for d, _ in steps] == list(range(1, 9))  # 4 batches, then 4 maps
    with torch.no_grad():
        trace = model.explain(preprocess_batch(data.images, model.config.preprocess))
    for layer in made.layers:
        hidden = trace.hidden_states[layer]  # (n, T, D), the tokens the tour shows
        assert torch.allclose(made.tokens[("cls", layer)], hidden[:, 0], atol=1e-5)
        assert torch.allclose(made.tokens[("mean", layer)], hidden[:, 1:].mean(dim=1), atol=1e-5)
        for token in projection.TOKENS:
            assert torch.equal(made.points[("pca", token, layer)], projection.pca(made.tokens[(token, layer)]))
    assert torch.equal(made.predictions, trace.logits.argmax(dim=-1))
    assert torch.equal(made.labels, data.labels) and made.files == data.files
    # the stored file holds the same points, in float16
    path = projection.projection_path(tmp_path / "tiny.safetensors")
    assert path.name == "tiny.projection.safetensors"
    projection.save(made, path, model, data)
    stored = projection.read_stored(path, model, data)
    assert stored.points.keys() == made.points.keys() and stored.classes == list(CLASSES)
    for key, points in made.points.items():
        assert torch.allclose(stored.points[key], points, rtol=1e-3, atol=1e-3), key
    assert torch.equal(stored.predictions, made.predictions) and torch.equal(stored.correct, made.correct)


def test_a_stored_map_of_other_weights_or_other_images_is_not_read(folder, model, tmp_path):
    data = load_split(folder, "test")
    path = tmp_path / "map.safetensors"
    projection.save(projection.compute(model, data, layers=[4], methods=["pca"]), path, model, data)
    assert projection.read_stored(path, model) is not None
    assert projection.read_stored(path, model, data.subset(list(range(10)))) is None
    with torch.no_grad():
        model.head.weight.mul_(2.0)
    assert projection.read_stored(path, model) is None
    assert projection.read_stored(tmp_path / "missing.safetensors", model) is None


def test_pca_is_the_top_principal_axes_with_a_fixed_sign():
    torch.manual_seed(0)
    x = torch.randn(500, 3) * torch.tensor([10.0, 3.0, 0.1]) + 7.0  # long along x, then y, flat along z
    points = projection.pca(x)
    assert points.shape == (500, 2)
    assert torch.allclose(points.mean(dim=0), torch.zeros(2), atol=1e-4)
    assert points[:, 0].var() > points[:, 1].var() > 4.0  # the long axes, longest first

    def correlation(a: torch.Tensor, b: torch.Tensor) -> float:
        return float(torch.corrcoef(torch.stack([a, b]))[0, 1])

    assert abs(correlation(points[:, 0], x[:, 0])) > 0.99 and abs(correlation(points[:, 1], x[:, 1])) > 0.99
    # the sign is the data's, not the SVD's: mirrored data gives the mirrored picture
    assert torch.allclose(projection.pca(-x), -points, atol=1e-4)
    assert torch.equal(projection.pca(x), points)


@pytest.mark.parametrize(
    "axis",
    [(3.0, -1.0, 0.5), (-3.0, 1.0, 0.5), (1.0, -4.0, 2.0), (-1.0, 4.0, 2.0), (0.5, 2.0, -5.0), (-0.5, -2.0, 5.0)],
)
def test_pca_turns_each_axis_so_its_largest_loading_by_size_is_positive(axis):
    """Points along a line: the first axis is the line's direction, turned so that its entry of
    largest size is positive (the line (-3, 1, 0.5) is read as (3, -1, -0.5)). A point's first
    coordinate is then its signed distance from the centre along that turned direction."""
    direction = torch.tensor(axis, dtype=torch.float64)
    direction = direction / direction.norm()
    turned = direction * torch.sign(direction[direction.abs().argmax()])
    steps = torch.linspace(-5.0, 5.0, 21, dtype=torch.float64)  # along the line, centred at 0
    across = torch.tensor([1.0, 1.0, 1.0], dtype=torch.float64)
    across = across - (across @ direction) * direction  # a little spread off the line, for a second axis
    x = steps[:, None] * direction + 0.01 * torch.cos(steps)[:, None] * across + 2.0
    expected = (steps * float(turned @ direction)).float()  # +-steps: the turned axis is +-direction
    torch.testing.assert_close(projection.pca(x)[:, 0], expected, atol=1e-3, rtol=0)


def test_a_model_without_cls_projects_its_mean_patch_token(folder, tiny_config):
    torch.manual_seed(0)
    model = VisionTransformer(
        tiny_config.replace(class_token=False, global_pool="avg", num_classes=3, class_names=CLASSES)
    ).eval()
    data = load_split(folder, "test")
    made = projection.compute(model, data, layers=[1], methods=["pca"])
    assert list(made.points) == [("pca", "mean", 1)]
    with pytest.raises(ValueError, match="no \\[CLS\\]"):
        projection.compute(model, data, tokens=["cls"], methods=["pca"])
    with pytest.raises(ValueError, match="does not exist"):
        projection.compute(model, data, layers=[9], methods=["pca"])


# numba compiles UMAP afresh in every process (about 45 s on 2 cores; docs/trust.md)
@pytest.mark.parametrize("method", [pytest.param("umap", marks=pytest.mark.slow), "tsne"])
def test_the_nonlinear_maps_are_seeded(method):
    torch.manual_seed(0)
    centres = torch.randn(3, 16) * 6
    x = torch.cat([centres[i] + torch.randn(40, 16) for i in range(3)])
    first, second = projection.nonlinear(x, method), projection.nonlinear(x, method)
    assert first.shape == (120, 2) and torch.equal(first, second)
    # three well separated clusters stay apart: every point's nearest neighbour is of its cluster
    labels = torch.arange(3).repeat_interleave(40)
    distances = torch.cdist(first, first) + torch.eye(120) * 1e9
    assert (labels[distances.argmin(dim=1)] == labels).float().mean() > 0.95


def test_the_command_writes_the_map(folder, model, tmp_path, capsys):
    zoo.save(model, tmp_path / "tiny.safetensors")
    out = tmp_path / "tiny.projection.safetensors"
    argv = ["--model", str(tmp_path / "tiny.safetensors"), "--data", str(folder), "--layers", "4"]
    assert projection.main([*argv, "--methods", "pca", "--json", "--out", str(out)]) == 0
    printed = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert printed["images"] == 18 and printed["points"] == ["pca/cls/4", "pca/mean/4"]
    assert projection.read_stored(out, model) is not None


@pytest.mark.parametrize("name", [zoo.SHIPPED, zoo.SHIPPED_FASHION])
def test_the_shipped_map_was_made_by_the_shipped_weights(name):
    model, _ = zoo.load(name, device="cpu")
    path = projection.projection_path(zoo.MODELS_DIR / f"{name}.safetensors")
    stored = projection.read_stored(path, model)
    assert stored is not None, (
        f"{path.name} is missing or was made by other weights: python -m tools.ship --analyses-only"
    )
    assert path.stat().st_size < 1_000_000
    depth = model.config.depth
    assert set(stored.points) == {
        (method, token, layer)
        for method in projection.METHODS
        for token in projection.TOKENS
        for layer in projection.default_layers(depth)
    }
    assert all(points.shape == (10_000, 2) for points in stored.points.values())
    assert len(stored.labels) == 10_000 and stored.classes == list(model.config.class_names)
