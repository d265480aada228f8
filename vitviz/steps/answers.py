"""What steps say about an answer: its top-k bars, right or wrong against the image's known
class, the classes a model knows, the lab's answer of a model that averages its mirror image in,
and the hover of a patch map (steps 7 and 8, the trust page)."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Literal

import torch

from vitviz.analyses.evaluate import inference
from vitviz.models.model import on_weights
from vitviz.models.prediction import Verdict
from vitviz.render import plots
from vitviz.steps import bars
from vitviz.steps.blocks import Text
from vitviz.steps.subject import Subject

MOST_LISTED_CLASSES = 20  # a model with more classes gets no list of them under its answer
MIRROR_KEYS = {  # what a page that explains one pass says of the lab's answer: the same, or another
    "prediction": ("prediction.mirror_same", "prediction.mirror_differs"),
    "trust": ("trust.mirror_same", "trust.mirror_differs"),
}


def grid_hover(subject: Subject) -> str:
    """A patch map's hover in the reader's language (``Subject.grid_hover``)."""
    return subject.grid_hover()


def class_bars(
    subject: Subject,
    names: Sequence[str],
    probabilities: Sequence[float],
    title: str,
    found: Verdict | None,
    height: int,
    beside: Iterable[Verdict | None] = (),
) -> plots.Figure:
    """Top-k probabilities, best first, labelled in the reader's language: the answer red and, when
    the image's class is known, the true class green. The title says what the colours mean
    (``prediction.legend_key``), for this chart and the charts set ``beside`` it, so that charts
    side by side share one legend, wrap their titles alike and start their bars level."""
    return bars.class_bars(subject.lang, list(names), list(probabilities), title, found, height, beside)


def verdict(subject: Subject, found: Verdict | None) -> list[Text]:
    """Right or wrong, and where the true class ranks, as one coloured sentence (nothing when the
    image's class is unknown)."""
    if found is None:
        return []
    filled = {
        "truth": subject.label(found.true_class),
        "pred": subject.label(found.predicted),
        "p": f"{found.probability:.1%}",
        "rank": found.rank,
        "n": found.num_classes,
        "dataset": subject.dataset,
    }
    kind = "right" if found.correct else "wrong"
    return [Text(subject.tr(f"verdict.{kind}", **filled), role="success" if found.correct else "warning")]


def known_classes(subject: Subject, found: Verdict | None) -> list[Text]:
    """Under the answer for an image of no known class: a model with a short list of classes
    (CIFAR-10's 10) gives every image one of them, whatever the image shows."""
    names = subject.config.class_names
    if found is not None or not names or len(names) > MOST_LISTED_CLASSES:
        return []
    listed = ", ".join(subject.label(name) for name in names)
    return [Text(subject.tr("prediction.known_classes", n=len(names), names=listed), role="caption")]


def class_name(subject: Subject, index: int) -> str:
    """Class ``index`` in the reader's language ("class 3" for a model without names)."""
    names = subject.config.class_names
    return subject.label(names[index]) if names else subject.tr("prediction.class_n", n=index)


def mirror(subject: Subject, page: Literal["prediction", "trust"]) -> list[Text]:
    """For a model that answers with the mean of its logits for the image and its mirror image
    (``config.test_flip``: the lab's answer, and the card's), that answer beside the one pass the
    page explains (``explained_pass``), and whether the two differ: a caption where they agree, a
    box where they do not (``MIRROR_KEYS[page]``)."""
    model, trace = subject.model, subject.trace
    if inference(model) == "image":
        return []
    with torch.inference_mode():  # (1, K): in eval mode, the mean of both views' logits
        logits = model(on_weights(trace.pixels[:1], model)).float().cpu()
    lab, one = int(logits[0].argmax()), int(trace.logits[0].argmax())
    probability = float(logits[0].softmax(dim=-1)[lab])
    filled = {"pred": class_name(subject, lab), "p": f"{probability:.1%}", "one": class_name(subject, one)}
    same, differs = MIRROR_KEYS[page]
    if lab == one:
        return [Text(subject.tr(same, **filled), role="caption")]
    return [Text(subject.tr(differs, **filled), role="info", slide=True)]  # the bars alone would mislead
