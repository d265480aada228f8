"""vitviz.analyses.lab (the misclassification lab's pure functions), analysis.grad_rollout and
plots.confusion_matrix, on hand-made results and tiny random models with known answers."""

from __future__ import annotations

import csv
import io
import random
from pathlib import Path

import numpy as np
import pytest
import torch
from PIL import Image

from tests.helpers import CLASSES, make_image_folder, write_idx
from vitviz.analyses import analysis, lab
from vitviz.analyses.evaluate import EvalResult
from vitviz.models import data as vdata
from vitviz.models.config import CIFAR10_CLASSES, FASHION_MNIST_CLASSES, ViTConfig
from vitviz.models.model import VisionTransformer
from vitviz.render import clicks, plots

torch.set_num_threads(1)

TINY = ViTConfig(image_size=32, patch_size=8, num_classes=3, embed_dim=32, depth=2, num_heads=4)


def hand_result() -> EvalResult:
    """Six images of three classes with known predictions and confidences.

    index: 0     1        2     3     4     5
    true:  0     0        1     1     2     2
    pred:  1     0 (ok)   0     2     1     0
    conf:  .7    .8       .5    .9    .6    .7
    """
    probs = torch.tensor(
        [[0.2, 0.7, 0.1], [0.8, 0.1, 0.1], [0.5, 0.3, 0.2], [0.05, 0.05, 0.9], [0.1, 0.6, 0.3], [0.7, 0.2, 0.1]]
    )
    files = ["a/0.png", "a/1.png", "b/0.png", "b/1.png", "c/0.png", "c/1.png"]
    return EvalResult("hand", "here", ["a", "b", "c"], files, torch.tensor([0, 0, 1, 1, 2, 2]), probs, 1.0, 1.0)


def second_result() -> EvalResult:
    """A second model on the same six images: right on 0, 1, 3 and 4, wrong on 2 and 5.

    first (hand_result) wrong: 0, 2, 3, 4, 5; second wrong: 2, 5.
    """
    probs = torch.tensor(
        [[0.9, 0.05, 0.05], [0.6, 0.2, 0.2], [0.1, 0.1, 0.8], [0.1, 0.8, 0.1], [0.1, 0.1, 0.8], [0.3, 0.6, 0.1]]
    )
    first = hand_result()
    return EvalResult("cnn", "here", first.classes, first.files, first.labels.clone(), probs, 1.0, 1.0)


def test_agreement_and_pair_filters_of_two_models() -> None:
    first, second = hand_result(), second_result()
    assert lab.agreement(first, second).tolist() == [[1, 0], [3, 2]]  # rows: first right/wrong; columns: second
    assert lab.pair_mask(first, second, "first_only").nonzero().flatten().tolist() == [0, 3, 4]
    assert lab.pair_mask(first, second, "both").nonzero().flatten().tolist() == [2, 5]
    assert lab.pair_mask(first, second, "second_only").nonzero().flatten().tolist() == []
    assert lab.pair_mask(first, second, "first_wrong").nonzero().flatten().tolist() == [0, 2, 3, 4, 5]
    keep = lab.pair_mask(first, second, "first_only")
    assert lab.filter_mistakes(first, keep=keep).tolist() == [3, 0, 4]  # most confident first
    assert lab.filter_mistakes(first, true=2, keep=keep).tolist() == [4]
    swapped = lab.pair_mask(second, first, "second_only")  # the second right, the first wrong
    assert swapped.nonzero().flatten().tolist() == [0, 3, 4]
    other = EvalResult(
        "x", "there", first.classes, list(reversed(first.files)), first.labels.clone(), second.probs, 1.0, 1.0
    )
    with pytest.raises(ValueError, match="different images"):
        lab.agreement(first, other)
    with pytest.raises(ValueError, match="Unknown pair filter"):
        lab.pair_mask(first, second, "neither")


# ---- filter_mistakes ----------------------------------------------------------------------------


def test_filter_mistakes_defaults_to_every_mistake_most_confident_first() -> None:
    result = hand_result()
    indices = lab.filter_mistakes(result)
    assert indices.tolist() == [3, 0, 5, 4, 2]  # 0 and 5 tie at 0.7: dataset order
    assert sorted(indices.tolist()) == result.wrong.tolist()


@pytest.mark.parametrize(
    "kwargs, expected",
    [
        (dict(true=2), [5, 4]),
        (dict(predicted=0), [5, 2]),
        (dict(true=1, predicted=2), [3]),  # one cell of the confusion matrix
        (dict(true=0, predicted=2), []),
        (dict(low=0.55, high=0.75), [0, 5, 4]),
        (dict(low=0.7, high=0.7), [0, 5]),  # both ends included
        (dict(low=0.75), [3]),  # "confidently wrong": the range's left end raised
        (dict(include_correct=True), [3, 1, 0, 5, 4, 2]),
        (dict(true=0, predicted=0, include_correct=True), [1]),  # a diagonal cell
        (dict(true=0, predicted=0), []),
    ],
)
def test_filter_mistakes_filters(kwargs: dict, expected: list[int]) -> None:
    assert lab.filter_mistakes(hand_result(), **kwargs).tolist() == expected


@pytest.mark.parametrize("kwargs", [dict(true=3), dict(predicted=-1), dict(low=0.6, high=0.5), dict(high=1.5)])
def test_filter_mistakes_refuses_impossible_filters(kwargs: dict) -> None:
    with pytest.raises(ValueError):
        lab.filter_mistakes(hand_result(), **kwargs)


# ---- confusion-matrix clicks, pages, thumbnails --------------------------------------------------


def test_cell_from_selection() -> None:
    assert clicks.cell_from_selection(None, 3) is None
    assert clicks.cell_from_selection({"selection": {"points": []}}, 3) is None
    assert clicks.cell_from_selection({"selection": {"points": [{"customdata": [1, 2]}]}}, 3) == (1, 2)
    two = {"points": [{"customdata": [0, 1]}, {"customdata": [2.0, 0.0]}]}
    assert clicks.cell_from_selection(two, 3) == (2, 0)  # the last click counts
    assert clicks.cell_from_selection({"points": [{"x": "a", "y": "b"}]}, 3) is None  # the heat map itself
    # What Streamlit 1.67 really sends for a click on the cell (1, 2) of plots.confusion_matrix:
    clicked = {
        "selection": {
            "points": [
                {
                    "curve_number": 1,
                    "point_number": 5,
                    "point_index": 5,
                    "x": "c",
                    "y": "b",
                    "customdata": {"0": 1, "1": 2, "2": 5},
                }
            ],
            "point_indices": [5],
        }
    }
    assert clicks.cell_from_selection(clicked, 3) == (1, 2)
    assert clicks.cell_from_selection({"points": [{"customdata": [3, 0]}]}, 3) is None  # outside the matrix


@pytest.mark.parametrize(
    "count, page, expected",
    [
        (0, 1, (0, 0, 1)),
        (50, 1, (0, 24, 3)),
        (50, 3, (48, 50, 3)),
        (50, 9, (48, 50, 3)),
        (50, 0, (0, 24, 3)),
        (48, 2, (24, 48, 2)),
    ],
)
def test_page_bounds(count: int, page: int, expected: tuple[int, int, int]) -> None:
    assert lab.page_bounds(count, page, per_page=24) == expected


def test_page_bounds_needs_a_page_size() -> None:
    with pytest.raises(ValueError):
        lab.page_bounds(10, 1, per_page=0)


def test_thumbnails_repeat_every_pixel() -> None:
    images = torch.arange(2 * 3 * 2 * 2, dtype=torch.uint8).reshape(2, 3, 2, 2)  # (M, C, H, W)
    thumbs = lab.thumbnails(images, size=8)
    assert thumbs.shape == (2, 8, 8, 3) and thumbs.dtype == np.uint8
    for row in range(2):
        for col in range(2):
            block = thumbs[:, row * 4 : row * 4 + 4, col * 4 : col * 4 + 4]  # (M, 4, 4, 3)
            assert (block == images[:, :, row, col].numpy()[:, None, None, :]).all()


def test_thumbnails_keep_the_aspect_ratio_and_make_grey_rgb() -> None:
    assert lab.thumbnails(torch.zeros(1, 3, 16, 32, dtype=torch.uint8), size=96).shape == (1, 48, 96, 3)
    grey = lab.thumbnails(torch.full((1, 1, 32, 32), 7, dtype=torch.uint8), size=96)
    assert grey.shape == (1, 96, 96, 3) and (grey == 7).all()
    assert lab.thumbnails(torch.zeros(0, 3, 32, 32, dtype=torch.uint8)).shape == (0, 96, 96, 3)


# ---- data location, class positions, CSV --------------------------------------------------------


def test_locate_test_data(tmp_path: Path) -> None:
    make_image_folder(tmp_path / "cifar", per_class=2, size=8, splits=("test",))
    test = (tmp_path / "cifar" / "test").resolve()
    assert lab.locate_test_data(tmp_path / "cifar") == ("folder", test)
    assert lab.locate_test_data(str(test)) == ("folder", test)
    (tmp_path / "empty").mkdir()
    assert lab.locate_test_data(tmp_path / "empty") is None
    assert lab.locate_test_data(tmp_path / "missing") is None
    batches = tmp_path / "tv" / lab.TORCHVISION_FOLDER
    batches.mkdir(parents=True)
    (batches / "test_batch").write_bytes(b"")
    assert lab.locate_test_data(tmp_path / "tv") == ("torchvision", (tmp_path / "tv").resolve())


def test_default_test_root(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(vdata, "find_cifar_test_folder", lambda: None)
    monkeypatch.setenv("VITVIZ_DATA", str(tmp_path))
    assert lab.default_test_root() == tmp_path
    monkeypatch.setattr(vdata, "find_cifar_test_folder", lambda: tmp_path / "found")
    assert lab.default_test_root() == tmp_path / "found"
    assert lab.default_test_root(tmp_path / "flag") == tmp_path / "flag"  # the server's --data wins


def test_the_server_s_data_flag_is_read_by_the_app_not_the_library() -> None:
    from vitviz.server import access

    assert access.data_flag(["--other", "x", "--data=/srv/cifar"]) == "/srv/cifar"
    assert access.data_flag(["--data", "d"]) == "d"
    assert access.data_flag(["--dataset", "x"]) is None and access.data_flag([]) is None
    assert "sys.argv" not in (Path(lab.__file__)).read_text()  # the library never reads the command line


def test_class_position_opens_the_same_image_in_the_picker(tmp_path: Path) -> None:
    make_image_folder(tmp_path, per_class=3, size=8, splits=("test",))
    data = vdata.load_image_folder(tmp_path / "test", use_cache=False)
    folder = lab.TestImages(lab.TestSplit("folder", str(tmp_path / "test")), lambda _: data)
    in_memory = lab.TestImages(lab.TestSplit("torchvision", "anywhere"), lambda _: data)  # PNG from the ImageSet
    assert folder.classes() == in_memory.classes() == data.classes
    for index, name in enumerate(data.files):
        class_name, within = lab.class_position(data, index)
        assert folder.image_bytes(class_name, within) == (tmp_path / "test" / name).read_bytes()
        decoded = np.asarray(Image.open(io.BytesIO(in_memory.image_bytes(class_name, within))))
        assert np.array_equal(decoded, data.images[index].permute(1, 2, 0).numpy())
    assert lab.class_position(data, 4) == (CLASSES[1], 1)
    assert folder.count(CLASSES[1]) == in_memory.count(CLASSES[1]) == 3
    assert folder.image_bytes(CLASSES[1], 3) is None and in_memory.image_bytes("no such class", 0) is None
    picks = {in_memory.random(random.Random(seed)) for seed in range(60)}
    assert len(picks) > 6 and all(in_memory.image_bytes(*pick) for pick in picks)


def test_a_model_finds_its_own_test_split(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    make_image_folder(tmp_path / "folder", per_class=2, size=8, splits=("test",))
    split = lab.test_split_for(CLASSES, tmp_path / "folder")
    assert split == lab.TestSplit("folder", str((tmp_path / "folder" / "test").resolve()))
    assert split.label == "folder"
    assert lab.test_split_for(CIFAR10_CLASSES, tmp_path / "nothing") is None
    monkeypatch.setattr(vdata, "DEBIAN_FOLDERS", {})
    monkeypatch.setenv("VITVIZ_CACHE", str(tmp_path / "cache"))
    assert lab.test_split_for(FASHION_MNIST_CLASSES, tmp_path / "folder") is None  # not here: never the folder's
    raw = tmp_path / "cache" / "data" / "FashionMNIST" / "raw"  # where torchvision's download would put it
    raw.mkdir(parents=True)
    images = np.zeros((4, 28, 28), dtype=np.uint8)
    for image_stem, label_stem in vdata.IDX_FILES.values():
        write_idx(raw / f"{image_stem}.gz", images, gz=True)
        write_idx(raw / f"{label_stem}.gz", np.array([0, 9, 9, 2], dtype=np.uint8), gz=True)
    split = lab.test_split_for(FASHION_MNIST_CLASSES, tmp_path / "folder")
    assert split == lab.TestSplit("named", "fashion-mnist") and split.label == "Fashion-MNIST"
    pictures = lab.TestImages(split, lambda where: vdata.load_split(where, "test", download=False))
    assert pictures.count("Ankle boot") == 2 and pictures.classes()[0] == "T-shirt/top"
    assert Image.open(io.BytesIO(pictures.image_bytes("Ankle boot", 1))).size == (28, 28)


def test_mistakes_csv() -> None:
    result = hand_result()
    rows = list(csv.reader(io.StringIO(lab.mistakes_csv(result, torch.tensor([3, 0])))))
    assert rows == [
        ["index", "file", "true", "predicted", "confidence"],
        ["3", "b/1.png", "b", "c", "0.900000"],
        ["0", "a/0.png", "a", "b", "0.700000"],
    ]
    assert lab.mistakes_csv(result, []) == "index,file,true,predicted,confidence\n"


def test_last_top_block() -> None:
    assert lab.last_top_block(torch.tensor([0, 0, 1, 2])) == 1  # lost in block 2
    assert lab.last_top_block(torch.tensor([1, 0, 2, 0])) == 3
    assert lab.last_top_block(torch.tensor([3, 2, 1])) is None


# ---- grad_rollout -------------------------------------------------------------------------------


@pytest.fixture
def tiny_model() -> VisionTransformer:
    torch.manual_seed(0)
    return VisionTransformer(TINY).eval()


def test_grad_rollout_is_a_map_of_shares(tiny_model: VisionTransformer) -> None:
    pixels = torch.randn(1, 3, 32, 32, generator=torch.Generator().manual_seed(1))
    result = analysis.grad_rollout(tiny_model, pixels, 1)
    assert result.shape == (4, 4) and result.device.type == "cpu"
    assert torch.isfinite(result).all() and (result >= 0).all()
    assert 0 < float(result.sum()) <= 1 + 1e-5  # [CLS]'s share of its own input is left out
    assert torch.allclose(analysis.grad_rollout(tiny_model, pixels[0], 1), result)  # (C, H, W) works too


def test_grad_rollout_differs_between_classes(tiny_model: VisionTransformer) -> None:
    pixels = torch.randn(1, 3, 32, 32, generator=torch.Generator().manual_seed(2))
    first, second = (analysis.grad_rollout(tiny_model, pixels, c) for c in (0, 2))
    assert not torch.allclose(first, second, atol=1e-6)
    assert torch.equal(analysis.grad_rollout(tiny_model, pixels, -1), second)


def test_grad_rollout_matches_a_hand_computation(tiny_model: VisionTransformer) -> None:
    pixels = torch.randn(1, 3, 32, 32, generator=torch.Generator().manual_seed(3))
    trace = tiny_model.explain(pixels)
    grads = torch.autograd.grad(trace.logits[0, 2], trace.attentions)
    tokens = trace.attentions[0].shape[-1]
    rollout = torch.eye(tokens)
    for grad, attention in zip(grads, trace.attentions, strict=True):
        weights = torch.relu(grad * attention)[0].mean(dim=0) + torch.eye(tokens)  # (T, T)
        rollout = (weights / weights.sum(dim=-1, keepdim=True)) @ rollout
    expected = rollout[0, 1:].reshape(4, 4).detach()
    assert torch.allclose(analysis.grad_rollout(tiny_model, pixels, 2), expected, atol=1e-6)


def test_grad_rollout_of_a_constant_logit_is_zero(tiny_model: VisionTransformer) -> None:
    with torch.no_grad():
        tiny_model.head.weight.zero_()  # logits no longer depend on the image: no gradient anywhere
    result = analysis.grad_rollout(tiny_model, torch.randn(1, 3, 32, 32), 0)
    assert torch.equal(result, torch.zeros(4, 4))  # the rollout is the identity: [CLS] keeps itself


def test_grad_rollout_leaves_the_model_alone(tiny_model: VisionTransformer) -> None:
    before = {name: value.clone() for name, value in tiny_model.state_dict().items()}
    analysis.grad_rollout(tiny_model, torch.randn(1, 3, 32, 32), 1)
    assert all(torch.equal(before[name], value) for name, value in tiny_model.state_dict().items())
    assert all(p.grad is None and p.requires_grad for p in tiny_model.parameters())
    assert not tiny_model.training
    tiny_model.requires_grad_(False)  # a frozen model still gets a map, and stays frozen
    assert analysis.grad_rollout(tiny_model, torch.randn(1, 3, 32, 32), 1).sum() > 0
    assert not any(p.requires_grad or p.grad is not None for p in tiny_model.parameters())


def test_grad_rollout_without_cls_averages_the_patch_rows() -> None:
    torch.manual_seed(0)
    model = VisionTransformer(TINY.replace(class_token=False, global_pool="avg")).eval()
    with torch.no_grad():  # gradients large enough that the weighted attention rivals the residual's identity
        model.head.weight.mul_(1e4)
    pixels = torch.randn(1, 3, 32, 32, generator=torch.Generator().manual_seed(4))
    result = analysis.grad_rollout(model, pixels, 0)
    assert result.shape == (4, 4)
    assert float(result.sum()) == pytest.approx(1.0, abs=1e-5)  # mean of rows that each sum to 1
    trace = model.explain(pixels)
    grads = torch.autograd.grad(trace.logits[0, 0], trace.attentions)
    rollout = torch.eye(16)  # no [CLS]: 16 patch tokens
    for grad, attention in zip(grads, trace.attentions, strict=True):
        weights = torch.relu(grad * attention)[0].mean(dim=0) + torch.eye(16)  # (T, T)
        rollout = (weights / weights.sum(dim=-1, keepdim=True)) @ rollout
    expected = rollout.mean(dim=0).reshape(4, 4).detach()  # the mean over the query rows
    assert float((expected - 1 / 16).abs().max()) > 0.01  # far from flat, so a flat map cannot pass
    torch.testing.assert_close(result, expected, rtol=1e-4, atol=1e-6)


def test_grad_rollout_refuses_what_it_cannot_explain(tiny_model: VisionTransformer) -> None:
    with pytest.raises(ValueError):
        analysis.grad_rollout(tiny_model, torch.randn(2, 3, 32, 32), 0)
    with pytest.raises(ValueError):
        analysis.grad_rollout(tiny_model, torch.randn(1, 3, 32, 32), 3)
    with pytest.raises(ValueError):
        analysis.grad_rollout(VisionTransformer(TINY.replace(num_classes=0)), torch.randn(1, 3, 32, 32), 0)


# ---- plots.confusion_matrix ---------------------------------------------------------------------


def test_confusion_matrix_figure() -> None:
    counts = np.array([[50, 3, 0], [7, 40, 1], [2, 0, 45]])
    fig = plots.confusion_matrix(counts, ["a", "b", "c"], title="t", x_title="pred", y_title="true", selected=(1, 0))
    heat, markers = fig.data
    assert np.array_equal(np.asarray(heat.z), counts) and list(heat.x) == ["a", "b", "c"] == list(heat.y)
    assert heat.zmax == 7  # the largest mistake, so mistakes stay visible beside the diagonal
    assert np.array_equal(np.asarray(heat.text), counts)
    assert np.asarray(markers.customdata).tolist() == [[r, c, counts[r, c]] for r in range(3) for c in range(3)]
    assert fig.layout.yaxis.autorange == "reversed"  # true class 0 on top
    (rect,) = fig.layout.shapes
    assert (rect.x0, rect.x1, rect.y0, rect.y1) == (-0.5, 0.5, 0.5, 1.5)  # column 0, row 1
    assert plots.confusion_matrix(counts, ["a", "b", "c"]).layout.shapes == ()
