"""What several steps draw alike: the top-k bars of a prediction, the sentence that reads it
against the image's known class, and a patch map's hover."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from vitviz import plots
from vitviz.prediction import Verdict, legend_key
from vitviz.steps.blocks import Text
from vitviz.steps.subject import Subject

MOST_LISTED = 20  # a model with more classes does not list them under a prediction


def class_bars(
    subject: Subject,
    ranked: Sequence[tuple[str, float]],
    title: str,
    found: Verdict | None,
    height: int,
    beside: Iterable[Verdict | None] = (),
) -> plots.Figure:
    """Top-k probabilities (``ranked``: (class, probability), best first) as bars labelled in the
    reader's language: the answer red and, when the image's class is known, the true class
    green. The title says what the colours mean (``prediction.legend_key``), for this chart and
    the charts of the verdicts ``beside`` it, so that charts side by side share one legend."""
    names = [name for name, _ in ranked]
    correct = names.index(found.true_class) if found is not None and found.true_class in names else None
    key = legend_key([found, *beside])
    title = f"{title} ({subject.tr(key)})" if key else title
    labels = [subject.label(name) for name in names]
    return plots.bars(labels, [p for _, p in ranked], title=title, height=height, highlight=0, correct=correct)


def verdict(subject: Subject, found: Verdict | None) -> Text | None:
    """Right or wrong, and where the true class ranks (None when the class is unknown)."""
    if found is None:
        return None
    values = {
        "truth": subject.label(found.true_class),
        "pred": subject.label(found.predicted),
        "p": f"{found.probability:.1%}",
        "rank": found.rank,
        "n": found.num_classes,
        "dataset": subject.dataset,
    }
    if found.correct:
        return Text(subject.tr("verdict.right", **values), role="success")
    return Text(subject.tr("verdict.wrong", **values), role="warning")


def known_classes(subject: Subject, found: Verdict | None) -> Text | None:
    """Under a prediction of an image with no known class: a model with a short list of classes
    (CIFAR-10's 10) gives every image one of them, whatever the image shows."""
    names = subject.config.class_names
    if found is not None or not names or len(names) > MOST_LISTED:
        return None
    listed = ", ".join(subject.label(name) for name in names)
    return Text(subject.tr("prediction.known_classes", n=len(names), names=listed), role="caption")


def grid_hover(subject: Subject) -> str:
    """A patch map's hover in the reader's language ("patch 5 (row 2, col 1): 0.1234")."""
    where = subject.tr("hover.row_col", row="%{customdata[0]}", col="%{customdata[1]}")
    return f"{subject.tr('hover.patch')} %{{customdata[2]}} ({where}): %{{z:.4f}}<extra></extra>"
