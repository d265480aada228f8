"""The misclassification lab: which test images does the model get wrong, and how?

Pure functions over an ``EvalResult`` (``vitviz.analyses.evaluate``) and the ``ImageSet`` it was computed
on: filtering the mistakes, reading a click on the confusion matrix, paging a gallery, making
thumbnails and the CSV export. The Streamlit caches that hold the dataset and the result live
in ``vitviz.app.testset`` (``cached_test_set``, ``cached_evaluation``); nothing here talks to Streamlit.
"""

from __future__ import annotations

import csv
import io
import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

import numpy as np
import torch
import torch.nn.functional as F
from torch import Tensor

from vitviz.analyses import analysis
from vitviz.analyses.evaluate import EvalResult
from vitviz.models import data as vdata
from vitviz.models.model import VisionTransformer, on_weights

PER_PAGE = 24  # thumbnails per gallery page
PER_ROW = 8  # thumbnails per gallery row
THUMBNAIL = 96  # pixels on the longer side of a gallery thumbnail
TORCHVISION_FOLDER = "cifar-10-batches-py"  # where torchvision keeps CIFAR-10 under its root

DataKind = Literal["folder", "torchvision", "named"]


# ---------------------------------------------------------------------------------------------
# Where the test images are
# ---------------------------------------------------------------------------------------------


def default_test_root(data: Path | str | None = None) -> Path:
    """The server's test images, chosen by whoever runs it and never by a visitor: ``data`` (the
    folder the server was started with, ``--data``), else a CIFAR-10 test ImageFolder found on this
    machine (``vitviz.models.data.find_cifar_test_folder``: VITVIZ_DATA, then ``../shared/data/cifar10-jpeg``),
    else VITVIZ_DATA or the cache folder where torchvision would download CIFAR-10."""
    if data:
        return Path(data).expanduser()
    folder = vdata.find_cifar_test_folder()
    return folder if folder is not None else vdata.default_data_dir()


def locate_test_data(root: Path | str) -> tuple[DataKind, Path] | None:
    """Where ``vitviz.models.data.load_split(root, "test")`` would read from, without downloading.

    Returns:
        ("folder", the test-split ImageFolder: root/test or root itself), or
        ("torchvision", root) when torchvision's CIFAR-10 files are there
        (root/cifar-10-batches-py/test_batch), or None when neither is; paths are resolved,
        so two spellings of one folder give one answer.
    """
    root = Path(root).expanduser()
    if not root.is_dir():
        return None
    folder = vdata.find_image_folder(root, "test")
    if folder is not None:
        return "folder", folder.resolve()
    if (root / TORCHVISION_FOLDER / "test_batch").is_file():
        return "torchvision", root.resolve()
    return None


@dataclass(frozen=True)
class TestSplit:
    """The test images that go with a model: what the sidebar's picker browses and the lab evaluates.

    Attributes:
        kind: "folder" (an ImageFolder), "torchvision" (torchvision's CIFAR-10 files) or
            "named" (MNIST or Fashion-MNIST, wherever ``vitviz.models.data.named_folder`` finds it).
        location: the folder, resolved; for "named" the dataset's name. ``vitviz.models.data.load_split
            (location, "test")`` reads it in every case.
    """

    kind: DataKind
    location: str

    @property
    def label(self) -> str:
        """The dataset's name as cards and reports write it ("CIFAR-10", "Fashion-MNIST"), or the folder's."""
        if self.kind == "named":
            return vdata.named_label(self.location)
        if self.kind == "torchvision" or vdata.is_cifar10(vdata.folder_classes(Path(self.location))):
            return "CIFAR-10"
        folder = Path(self.location)
        return folder.parent.name if folder.name in ("train", "test") else folder.name


def test_split_for(classes: Sequence[str], root: Path | str) -> TestSplit | None:
    """The test split for a model with these classes: MNIST's or Fashion-MNIST's for their
    models (found on this machine, never downloaded here), else the server's data (``root``,
    see ``default_test_root``); None when there is none."""
    name = vdata.named_dataset(classes)
    if name is not None:
        return TestSplit("named", name) if vdata.named_folder(name) is not None else None
    located = locate_test_data(root)
    return TestSplit(located[0], str(located[1])) if located else None


class TestImages:
    """One image of a test split by (class, index within the class), as the sidebar picks it.

    An ImageFolder is read one file at a time (the original bytes, as the lab's "open in the
    tour" opens them); other splits through ``load`` (an ``ImageSet`` in memory, e.g. a cache),
    each image as PNG bytes. Both count a class's images in the same order, the one
    ``class_position`` gives.
    """

    def __init__(self, split: TestSplit, load: Callable[[str], vdata.ImageSet]) -> None:
        self.split = split
        self._load = load

    @property
    def _folder(self) -> Path | None:
        return Path(self.split.location) if self.split.kind == "folder" else None

    def classes(self) -> list[str]:
        folder = self._folder
        return vdata.folder_classes(folder) if folder else list(self._load(self.split.location).classes)

    def count(self, class_name: str) -> int:
        folder = self._folder
        if folder:
            return vdata.count_images(folder / Path(class_name).name)
        return len(vdata.class_members(self._load(self.split.location), class_name))

    def image_bytes(self, class_name: str, index: int) -> bytes | None:
        """The image's bytes, or None when the class or the index does not exist."""
        folder = self._folder
        if folder:
            return vdata.folder_image_bytes(folder, class_name, index)
        data = self._load(self.split.location)
        members = vdata.class_members(data, class_name)
        return vdata.encode_png(data.images[members[index]]) if 0 <= index < len(members) else None

    def random(self, rng: random.Random | None = None) -> tuple[str, int]:
        """(class, index within the class) of any image, each equally likely."""
        folder = self._folder
        if folder:
            return vdata.random_folder_image(folder, rng)
        data = self._load(self.split.location)
        pick = (rng or random).randrange(len(data))
        return class_position(data, pick)


# ---------------------------------------------------------------------------------------------
# Filtering the mistakes
# ---------------------------------------------------------------------------------------------


def _check_class(value: int | None, num_classes: int, what: str) -> None:
    if value is not None and not 0 <= value < num_classes:
        raise ValueError(f"The {what} class {value} does not exist: choose a class from 0 to {num_classes - 1}.")


def filter_mistakes(
    result: EvalResult,
    true: int | None = None,
    predicted: int | None = None,
    low: float = 0.0,
    high: float = 1.0,
    include_correct: bool = False,
    keep: Tensor | None = None,
) -> Tensor:
    """The images that match the lab's filters, the most confident first.

    Args:
        result: from ``vitviz.analyses.evaluate.evaluate``.
        true: keep images of this true class only (None: any).
        predicted: keep images predicted as this class only (None: any).
        low, high: keep images whose confidence (the probability of the predicted class)
            lies in [low, high]; "confidently wrong" is a raised ``low`` (0.9, say).
        include_correct: also keep correctly classified images (for a diagonal cell of the
            confusion matrix, where true == predicted and every image is correct).
        keep: (n,) bool, the images a second model's filter (``pair_mask``) allows; with it,
            the mask decides right and wrong and ``include_correct`` is not needed.

    Returns:
        (m,) long: indices into the result (and its dataset), sorted by confidence, highest
        first; equal confidences keep the dataset order.
    """
    num_classes = result.probs.shape[-1]
    _check_class(true, num_classes, "true")
    _check_class(predicted, num_classes, "predicted")
    if not 0.0 <= low <= high <= 1.0:
        raise ValueError(f"The confidence range must satisfy 0 <= low <= high <= 1, not [{low}, {high}].")
    labels, predictions, confidence = result.labels, result.predictions, result.confidence  # each (n,)
    if keep is not None:
        keep = keep.clone()
    else:
        keep = torch.ones_like(labels, dtype=torch.bool) if include_correct else predictions != labels
    if true is not None:
        keep &= labels == true
    if predicted is not None:
        keep &= predictions == predicted
    keep &= (confidence >= low) & (confidence <= high)
    indices = torch.nonzero(keep).flatten()  # (m,) ascending
    order = torch.sort(confidence[indices], descending=True, stable=True).indices
    return indices[order]


PAIRS = ("first_wrong", "first_only", "both", "second_only")  # which images, when a second model is compared


def agreement(first: EvalResult, second: EvalResult) -> Tensor:
    """How two models' answers on the same images agree: (2, 2) counts, rows the first model
    right / wrong, columns the second model right / wrong.

    Raises:
        ValueError: the two results are not of the same images and labels.
    """
    _check_pair(first, second)
    first_right, second_right = first.predictions == first.labels, second.predictions == second.labels
    return torch.tensor(
        [
            [int((first_right & second_right).sum()), int((first_right & ~second_right).sum())],
            [int((~first_right & second_right).sum()), int((~first_right & ~second_right).sum())],
        ]
    )


def pair_mask(first: EvalResult, second: EvalResult, which: str) -> Tensor:
    """(n,) bool: the images that ``which`` of ``PAIRS`` selects.

    "first_wrong": the first model's mistakes (whatever the second says); "first_only": the
    first wrong and the second right; "both": both wrong; "second_only": the first right and
    the second wrong.
    """
    _check_pair(first, second)
    first_wrong, second_wrong = first.predictions != first.labels, second.predictions != second.labels
    masks = {
        "first_wrong": first_wrong,
        "first_only": first_wrong & ~second_wrong,
        "both": first_wrong & second_wrong,
        "second_only": ~first_wrong & second_wrong,
    }
    if which not in masks:
        raise ValueError(f"Unknown pair filter {which!r}: choose one of {', '.join(PAIRS)}.")
    return masks[which]


def _check_pair(first: EvalResult, second: EvalResult) -> None:
    if first.files != second.files or not torch.equal(first.labels, second.labels):
        raise ValueError("The two models were evaluated on different images: compare them on the same test set.")


# ---------------------------------------------------------------------------------------------
# The gallery
# ---------------------------------------------------------------------------------------------


def page_bounds(count: int, page: int, per_page: int = PER_PAGE) -> tuple[int, int, int]:
    """Which slice of a list of ``count`` items gallery page ``page`` (1-based) shows.

    Returns:
        (start, stop, num_pages): the items [start, stop) of the page after clipping it to
        [1, num_pages]; an empty list has one empty page.
    """
    if per_page < 1:
        raise ValueError(f"per_page must be at least 1, not {per_page}.")
    num_pages = max(1, -(-count // per_page))
    page = min(max(page, 1), num_pages)
    start = (page - 1) * per_page
    return start, min(start + per_page, count), num_pages


def thumbnails(images: Tensor, size: int = THUMBNAIL) -> np.ndarray:
    """Small pictures for the gallery, scaled with nearest-neighbour so pixels stay sharp.

    Args:
        images: (M, C, H, W) uint8, e.g. ``ImageSet.images[indices]``; C is 1 or 3.
        size: the longer side of a thumbnail in pixels.

    Returns:
        (M, h, w, 3) uint8 with max(h, w) = size and the images' aspect ratio.
    """
    if images.dim() != 4:
        raise ValueError(f"images must be (M, C, H, W), got {tuple(images.shape)}.")
    height, width = images.shape[-2:]
    scale = size / max(height, width)
    out_size = (max(1, round(height * scale)), max(1, round(width * scale)))
    if images.shape[1] == 1:
        images = images.expand(-1, 3, -1, -1)
    if len(images) == 0:
        return np.zeros((0, *out_size, 3), dtype=np.uint8)
    scaled = F.interpolate(images.float(), size=out_size, mode="nearest-exact")  # (M, 3, h, w)
    return scaled.round().clamp(0, 255).to(torch.uint8).permute(0, 2, 3, 1).numpy()  # (M, h, w, 3)


def class_position(data: vdata.ImageSet, index: int) -> tuple[str, int]:
    """The (class, index within the class) of image ``index`` of a set, the address the sidebar's
    picker (``TestImages``) opens: the class's images are counted in the set's order, which for
    an ImageFolder is the sorted order ``vitviz.models.data.folder_image_bytes`` counts in."""
    label = int(data.labels[index])
    return data.classes[label], int((data.labels[:index] == label).sum())


def inspect_mistake(
    model: VisionTransformer, images: Tensor, predicted_class: int, true_class: int
) -> dict[str, np.ndarray]:
    """What the lab shows of one image up close: where the model looked for each class, and the
    logit lens of the two classes.

    Args:
        model: the evaluated model.
        images: (1, C, H, W) uint8, the image as the test set holds it (``ImageSet.images``).
        predicted_class, true_class: class indices.

    Returns:
        "map_predicted", "map_true": (grid_h, grid_w) gradient-weighted rollout
        (``analysis.grad_rollout``); "logit_lens": (depth + 1, K) class probabilities read from
        each block's [CLS]; "rank_true", "rank_predicted": (depth + 1,) the two classes' ranks
        there, 0 = top.
    """
    pixels = on_weights(
        vdata.preprocess_batch(images, model.config.preprocess, model.config.in_chans), model
    )  # as evaluate saw it
    with torch.no_grad():
        trace = model.explain(pixels)
    lens = analysis.logit_lens(model, trace).float().cpu()  # (depth + 1, 1, K) probabilities
    return {
        "map_predicted": analysis.grad_rollout(model, pixels, predicted_class).numpy(),
        "map_true": analysis.grad_rollout(model, pixels, true_class).numpy(),
        "logit_lens": lens[:, 0].numpy(),
        "rank_true": analysis.class_rank_by_layer(lens, true_class)[:, 0].numpy(),
        "rank_predicted": analysis.class_rank_by_layer(lens, predicted_class)[:, 0].numpy(),
    }


def mistakes_csv(result: EvalResult, indices: Tensor | Sequence[int]) -> str:
    """The filtered list as CSV text: index, file, true, predicted, confidence, one row per image."""
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(["index", "file", "true", "predicted", "confidence"])
    predictions, confidence = result.predictions, result.confidence
    for i in torch.as_tensor(indices, dtype=torch.long).tolist():
        true, predicted = result.classes[int(result.labels[i])], result.classes[int(predictions[i])]
        writer.writerow([i, result.files[i], true, predicted, f"{float(confidence[i]):.6f}"])
    return buffer.getvalue()


# ---------------------------------------------------------------------------------------------
# One image: when did the true class lose?
# ---------------------------------------------------------------------------------------------


def last_top_block(rank: Tensor) -> int | None:
    """The last point of a logit-lens rank curve at which the class was the top answer.

    Args:
        rank: (depth + 1,) from ``analysis.class_rank_by_layer`` (0 = top answer).

    Returns:
        The index l (0 = the embeddings, l = after block l) of the last 0 in ``rank``, or None
        when the class was never on top. For a mistake, the class lost in block l + 1.
    """
    tops = torch.nonzero(torch.as_tensor(rank) == 0).flatten()
    return int(tops[-1]) if len(tops) else None
