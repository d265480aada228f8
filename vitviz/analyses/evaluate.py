"""Evaluate a model on a labelled image set: accuracy, per-class accuracy, confusion matrix.

    python -m vitviz evaluate --model cifar10-vit --data ../shared/data/cifar10-jpeg [--json] [--limit N]

Results, with every test image's class probabilities, are cached on disk keyed by
(weights hash, dataset fingerprint), so the app's second look at the same model and data is
instant. A shipped model also carries its test-split predictions beside its weights
(``<name>.predictions.safetensors``, float32, written by ``tools.ship``), so the app's first
look is instant too wherever the weights and the dataset are the very ones they were made on.
"""

from __future__ import annotations

import hashlib
import json
import logging
import sys
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import Any

import torch
from safetensors import SafetensorError, safe_open
from safetensors.torch import save_file
from torch import Tensor
from tqdm import tqdm

from vitviz import commandline
from vitviz.models import zoo
from vitviz.models.data import (
    ImageSet,
    cache_dir,
    dataset_label,
    load_split,
    preprocess_batch,
    save_atomic,
    spread_subset,
)
from vitviz.models.model import VisionTransformer, explained_pass

log = logging.getLogger(__name__)

Progress = Callable[[int, int], None]
PREDICTIONS_SUFFIX = ".predictions.safetensors"


@dataclass(frozen=True)
class EvalResult:
    """The outcome of one evaluation; probs keeps every image's class probabilities.

    A result is read by every session of the server (``vitviz.app.testset``), and the lab asks for
    its predictions and confidence per thumbnail: each is computed once, on first use, so the
    fields never change.

    Attributes:
        model: the model's name.
        data: where the images came from.
        classes: class names in label order.
        files: one name per image, in the order of labels and probs.
        labels: (n,) true classes.
        probs: (n, num_classes) softmax probabilities.
        images_per_s: throughput of the evaluation that produced these numbers.
        seconds: its wall time.
        cached: whether this result was read from the disk cache.
    """

    model: str
    data: str
    classes: list[str]
    files: list[str]
    labels: Tensor
    probs: Tensor
    images_per_s: float
    seconds: float
    cached: bool = False

    @property
    def n(self) -> int:
        return len(self.labels)

    @cached_property
    def predictions(self) -> Tensor:
        return self.probs.argmax(dim=1)

    @cached_property
    def confidence(self) -> Tensor:
        """The probability of the predicted class, (n,)."""
        return self.probs.max(dim=1).values

    @cached_property
    def wrong(self) -> Tensor:
        """Indices of the misclassified images, (m,)."""
        return torch.nonzero(self.predictions != self.labels).flatten()

    @property
    def accuracy(self) -> float:
        """Correct / n, exactly as a Python float (not a float32 mean: 0.7204, not 0.72039998)."""
        return int((self.predictions == self.labels).sum()) / self.n if self.n else 0.0

    @property
    def misclassified(self) -> int:
        return int(len(self.wrong))

    def confusion(self) -> Tensor:
        """(K, K) counts: rows are true classes, columns predicted classes."""
        k = len(self.classes)
        return torch.bincount(self.labels * k + self.predictions, minlength=k * k).reshape(k, k)

    def per_class_accuracy(self) -> list[float]:
        matrix = self.confusion().float()
        totals = matrix.sum(dim=1).clamp(min=1)
        return (matrix.diag() / totals).tolist()

    def summary(self) -> dict[str, Any]:
        """The JSON object the command prints last."""
        return {
            "model": self.model,
            "data": self.data,
            "n": self.n,
            "accuracy": round(self.accuracy, 6),
            "misclassified": self.misclassified,
            "images_per_s": round(self.images_per_s, 1),
            "per_class_accuracy": dict(
                zip(self.classes, [round(a, 4) for a in self.per_class_accuracy()], strict=True)
            ),
            "confusion": self.confusion().tolist(),
            "cached": self.cached,
        }


def weights_hash(model: torch.nn.Module) -> str:
    """sha256 over every parameter and buffer (names, shapes and bytes), in name order."""
    digest = hashlib.sha256()
    for name, tensor in sorted(model.state_dict().items()):
        digest.update(name.encode())
        digest.update(str(tuple(tensor.shape)).encode())
        digest.update(
            tensor.detach().cpu().contiguous().reshape(-1).view(torch.uint8).numpy().tobytes()
        )  # reshape: 0-dim buffers (BatchNorm counters)
    return digest.hexdigest()


def inference(model: torch.nn.Module) -> str:
    """What the model looks at to predict, beyond its weights: "image and mirror" for a CNN that
    averages the logits of both (``test_flip``), else "image". Stored predictions are keyed by it."""
    return "image and mirror" if getattr(model.config, "test_flip", False) else "image"


def explained_inference(model: torch.nn.Module) -> str:
    """What the pass the app explains looks at (``explained_pass``): "image" where that pass is not
    the model's answer (a ViT's one pass, as the tour traces it), else ``inference``. The files of analyses that follow that pass
    (the faithfulness table, the head-ablation grid, the occlusion curves, page 8's rows) are keyed
    by it, so a table measured on the mean with the mirror image is stale for a ViT."""
    return inference(model) if explained_pass(model) is model else "image"


def shipped_path(weights: Path, suffix: str) -> Path:
    """Where a file made from the weights file ``weights`` ships: beside it, named after it
    ("cifar10-vit.safetensors" + ".predictions.safetensors" -> "cifar10-vit.predictions.safetensors").
    Every such file (predictions, faithfulness, head ablation, projection) is named by this rule."""
    weights = Path(weights)
    return weights.with_name(weights.name.removesuffix(".safetensors") + suffix)


def save_table(
    table: dict[str, Any], path: Path, model: torch.nn.Module, data: ImageSet, settings: dict[str, Any]
) -> None:
    """Write a table measured with ``model`` on ``data`` (the faithfulness table, the head-ablation
    grid) as JSON, with what makes it stale: the weights hash, what the explained pass looks at
    (``explained_inference``), the images (dataset and fingerprint), then ``settings``."""
    stored = {
        **table,
        "weights_sha256": weights_hash(model),
        "inference": explained_inference(model),
        "dataset": dataset_label(data),
        "fingerprint": data.fingerprint,
        **settings,
    }
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    Path(path).write_text(json.dumps(stored, indent=1) + "\n")


def read_table(path: Path | None, model: torch.nn.Module) -> dict[str, Any] | None:
    """The table ``save_table`` wrote at ``path`` when these weights made it (same hash, same
    ``explained_inference``; a file without an inference is one view's); else None, and the caller computes (or
    says it is not there)."""
    if path is None or not Path(path).is_file():
        return None
    try:
        stored = json.loads(Path(path).read_text())
    except (OSError, ValueError) as err:
        log.warning("ignoring %s: %s", path, err)
        return None
    made_by = (weights_hash(model), explained_inference(model))
    if (stored.get("weights_sha256"), stored.get("inference", "image")) != made_by:
        return None
    return stored


def read_tensors(
    path: Path | None, what: str, made_by: Mapping[str, str], names: Iterable[str]
) -> tuple[dict[str, str], dict[str, Tensor]] | None:
    """The metadata and the tensors ``names`` of the safetensors file at ``path`` when its metadata
    holds every entry of ``made_by`` (the weights hashes and the like that made it); else None,
    and the caller computes. A file that cannot be read is said in the log (``what``: what it holds)."""
    if path is None or not Path(path).is_file():
        return None
    try:
        with safe_open(str(path), framework="pt") as file:
            metadata = file.metadata() or {}
            if any(metadata.get(key) != value for key, value in made_by.items()):
                return None
            return metadata, {name: file.get_tensor(name) for name in names}
    except (SafetensorError, OSError, KeyError) as err:
        log.warning("ignoring the %s in %s: %s", what, path, err)
        return None


def predictions_path(weights: Path) -> Path:
    """Where the shipped test-split predictions of the weights file ``weights`` sit: beside it."""
    return shipped_path(weights, PREDICTIONS_SUFFIX)


def save_predictions(result: EvalResult, path: Path, model: torch.nn.Module, fingerprint: str) -> None:
    """Write ``result``'s class probabilities and labels, keyed by the hash of the weights of
    ``model`` that made them, what it looked at (``inference``) and the dataset fingerprint
    (safetensors metadata). float32: float16 can turn a near tie the other way, and the lab
    would then count one mistake more or less than the card."""
    metadata = {
        "weights_sha256": weights_hash(model),
        "inference": inference(model),
        "fingerprint": fingerprint,
        "classes": json.dumps(result.classes),
        "images_per_s": f"{result.images_per_s:.1f}",
        "seconds": f"{result.seconds:.3f}",
    }
    tensors = {
        "probs": result.probs.to(torch.float32).contiguous(),
        "labels": result.labels.to(torch.int16).contiguous(),
    }
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    save_file(tensors, str(path), metadata=metadata)


def read_predictions(
    path: Path | None, model: torch.nn.Module, data: ImageSet, name: str = "model"
) -> EvalResult | None:
    """The predictions stored at ``path`` when they are those of these weights on this dataset.

    Returns:
        An EvalResult (cached=True) when the file exists, its weights hash, inference and dataset
        fingerprint match ``model`` and ``data``, and its labels and classes are the dataset's;
        otherwise None, and the caller evaluates.
    """
    if path is None or not Path(path).is_file():
        return None
    try:
        with safe_open(str(path), framework="pt") as file:
            metadata = file.metadata() or {}
            if (
                metadata.get("fingerprint") != data.fingerprint
                or metadata.get("inference", "image") != inference(model)  # files from before it was kept: one view
                or metadata.get("weights_sha256") != weights_hash(model)
            ):
                return None
            probs, labels = file.get_tensor("probs").float(), file.get_tensor("labels").long()
    except (SafetensorError, OSError, KeyError) as err:
        log.warning("ignoring the predictions in %s: %s", path, err)
        return None
    if probs.shape != (len(data), len(data.classes)) or not torch.equal(labels, data.labels):
        return None
    if json.loads(metadata.get("classes", "[]")) != list(data.classes):
        return None
    return EvalResult(
        model=name,
        data=data.source,
        classes=list(data.classes),
        files=list(data.files),
        labels=labels,
        probs=probs,
        images_per_s=float(metadata.get("images_per_s", 0)),
        seconds=float(metadata.get("seconds", 0)),
        cached=True,
    )


def _cache_path(model: VisionTransformer, data: ImageSet) -> Path:
    seen = "" if inference(model) == "image" else "-mirror"
    key = f"{weights_hash(model)[:20]}{seen}-{data.fingerprint[:20]}"
    return cache_dir() / "eval" / f"{key}.pt"


class OtherClasses(ValueError):
    """A model scored on a dataset whose classes it does not predict (``check_classes``)."""


def check_classes(model: VisionTransformer, data: ImageSet) -> None:
    """Refuse to score a model on a dataset whose classes it does not predict."""
    config = model.config
    if config.num_classes != len(data.classes):
        raise OtherClasses(
            f"The model predicts {config.num_classes} classes but the dataset has {len(data.classes)}: "
            "choose a model trained on these classes."
        )
    if config.class_names and list(config.class_names) != list(data.classes):
        raise OtherClasses(
            "The model's class names differ from the dataset's folders "
            f"({', '.join(config.class_names[:3])}... vs {', '.join(data.classes[:3])}...)."
        )


@torch.no_grad()
def evaluate(
    model: VisionTransformer,
    data: ImageSet,
    name: str = "model",
    batch_size: int = 256,
    progress: Progress | None = None,
    use_cache: bool = True,
    shipped: Path | None = None,
    run: bool = True,
) -> EvalResult:
    """Run the model over a dataset (or read the stored result of having done so).

    Args:
        model: the model, in eval mode, on any device.
        data: images and labels in memory.
        name: the model's name for reports.
        batch_size: images per forward pass.
        progress: called with (done, total) after every batch.
        use_cache: read and write the disk cache.
        shipped: a predictions file (``predictions_path``), read first and used when it was made
            by these weights on this dataset.
        run: False to only read what is stored (the shipped predictions, the disk cache).

    Raises:
        LookupError: with ``run=False``, where nothing is stored.
    """
    check_classes(model, data)
    stored = read_predictions(shipped, model, data, name)
    if stored is not None:
        if progress is not None:
            progress(len(data), len(data))
        return stored
    path = _cache_path(model, data)
    if use_cache and path.exists():
        stored = torch.load(path, weights_only=True)
        if progress is not None:
            progress(len(data), len(data))
        return EvalResult(
            model=name,
            data=data.source,
            classes=list(data.classes),
            files=list(data.files),
            labels=stored["labels"],
            probs=stored["probs"],
            images_per_s=float(stored["images_per_s"]),
            seconds=float(stored["seconds"]),
            cached=True,
        )
    if not run:
        raise LookupError(f"no stored predictions of {name} on {data.source}")
    model.eval()
    device = next(model.parameters()).device
    probs = torch.empty((len(data), model.config.num_classes))
    started = time.perf_counter()
    for start in range(0, len(data), batch_size):
        stop = min(start + batch_size, len(data))
        pixels = preprocess_batch(data.images[start:stop], model.config.preprocess, model.config.in_chans).to(device)
        probs[start:stop] = model(pixels).float().softmax(dim=-1).cpu()
        if progress is not None:
            progress(stop, len(data))
    seconds = time.perf_counter() - started
    result = EvalResult(
        model=name,
        data=data.source,
        classes=list(data.classes),
        files=list(data.files),
        labels=data.labels.clone(),
        probs=probs,
        images_per_s=len(data) / max(seconds, 1e-9),
        seconds=seconds,
    )
    if use_cache:
        save_atomic(
            {"labels": result.labels, "probs": result.probs, "images_per_s": result.images_per_s, "seconds": seconds},
            path,
        )
    return result


def format_report(result: EvalResult) -> str:
    """A plain-text report: accuracy, per-class accuracy and the confusion matrix."""
    lines = [
        f"model {result.model} on {result.data}: {result.n} images",
        f"top-1 accuracy {result.accuracy:.2%}, misclassified {result.misclassified}, "
        f"{result.images_per_s:.0f} images/s{' (cached)' if result.cached else ''}",
        "",
        "per-class accuracy:",
    ]
    width = max(len(c) for c in result.classes)
    for cls, acc in zip(result.classes, result.per_class_accuracy(), strict=True):
        lines.append(f"  {cls:<{width}}  {acc:6.1%}")
    lines += ["", "confusion matrix (rows: true, columns: predicted):"]
    short = [c[:5] for c in result.classes]
    lines.append(" " * (width + 2) + " ".join(f"{s:>5}" for s in short))
    for cls, row in zip(result.classes, result.confusion().tolist(), strict=True):
        lines.append(f"  {cls:<{width}}" + " ".join(f"{v:>5}" for v in row))
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = commandline.parser("vitviz.analyses.evaluate", __doc__)
    parser.add_argument(
        "--model", default=zoo.default_name(), help="registry name, timm:<name>, hf:<repo id> or a path"
    )
    parser.add_argument(
        "--data", default=None, help="ImageFolder root or CIFAR-10 root (default: VITVIZ_DATA, else a cache folder)"
    )
    parser.add_argument("--split", default="test")
    parser.add_argument("--limit", type=int, default=None, help="evaluate on N images spread evenly through the set")
    parser.add_argument("--batch-size", type=int, default=256)
    parser.add_argument("--device", default=None)
    parser.add_argument("--no-cache", action="store_true")
    parser.add_argument("--json", action="store_true", help="print one JSON object as the last line")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.WARNING)
    try:
        model, spec = zoo.load(args.model, device=args.device)
        data = spread_subset(load_split(args.data, args.split), args.limit)
        bar = tqdm(total=len(data), unit="img", desc="evaluating", disable=args.json and not sys.stderr.isatty())

        def advance(done: int, total: int) -> None:
            bar.update(done - bar.n)

        result = evaluate(
            model, data, name=spec.name, batch_size=args.batch_size, progress=advance, use_cache=not args.no_cache
        )
        bar.close()
    except (zoo.ModelLoadError, FileNotFoundError, ValueError) as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    print(format_report(result))
    if args.json:
        print(json.dumps(result.summary()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
