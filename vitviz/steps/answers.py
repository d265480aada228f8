"""What steps say about an answer: its top-k bars, right or wrong against the image's known
class, the classes a model knows, and the hover of a patch map (steps 7 and 8)."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from vitviz.models.prediction import Verdict
from vitviz.render import plots
from vitviz.steps import bars
from vitviz.steps.blocks import Text
from vitviz.steps.subject import Subject

MOST_LISTED_CLASSES = 20  # a model with more classes gets no list of them under its answer


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
