"""What a model's output says about one image: its most likely classes, and how it fares
against the image's true class when that is known (a labelled test image)."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import torch


def top_k(class_names: Sequence[str], logits: torch.Tensor, k: int = 5) -> list[tuple[str, float]]:
    """(class name, probability) of the k most likely classes of the first image."""
    probs = logits[0].float().softmax(dim=-1)
    values, indices = probs.topk(min(k, probs.numel()))
    return [
        (class_names[i] if class_names else f"class {i}", float(v))
        for v, i in zip(values.tolist(), indices.tolist(), strict=True)
    ]


@dataclass(frozen=True)
class Verdict:
    """The prediction of one image measured against its known class (a labelled test image)."""

    true_class: str
    predicted: str
    correct: bool
    rank: int  # 1-based rank of the true class among all num_classes
    probability: float  # softmax probability of the true class
    num_classes: int


def verdict(probs: torch.Tensor, class_names: Sequence[str], true_class: str | None) -> Verdict | None:
    """Compare one image's class probabilities (K,) with its true class; None when the class is
    unknown or not one of the model's."""
    if true_class is None or true_class not in class_names:
        return None
    target = list(class_names).index(true_class)
    predicted = int(probs.argmax())
    rank = 1 + int((probs > probs[target]).sum())
    return Verdict(true_class, class_names[predicted], predicted == target, rank, float(probs[target]), len(probs))


def legend_key(verdicts: Iterable[Verdict | None]) -> str | None:
    """The text (its locale key) that says what a top-k chart's colours mean, for charts of these
    verdicts: one verdict, or several charts set side by side that share one legend so that their
    titles wrap alike and their bars start level. Red is named when any answer is wrong (one
    chart: its answer; several: any of theirs); None when the true class is unknown."""
    known = [found for found in verdicts if found is not None]
    if not known:
        return None
    if all(found.correct for found in known):
        return "verdict.legend_right"
    return "verdict.legend_wrong" if len(known) == 1 else "verdict.legend_any_wrong"
