"""What several steps draw alike: the top-k bars of a prediction, the sentence that reads it
against the image's known class, and a patch map's hover."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from vitviz.models.prediction import Verdict
from vitviz.render import plots
from vitviz.steps import answers, bars
from vitviz.steps.blocks import Text
from vitviz.steps.subject import Subject


def class_bars(
    subject: Subject,
    ranked: Sequence[tuple[str, float]],
    title: str,
    found: Verdict | None,
    height: int,
    beside: Iterable[Verdict | None] = (),
) -> plots.Figure:
    """Top-k probabilities (``ranked``: (class, probability), best first) as ``bars.class_bars``
    draws them."""
    names, probabilities = [name for name, _ in ranked], [p for _, p in ranked]
    return bars.class_bars(subject.lang, names, probabilities, title, found, height, beside)


def verdict(subject: Subject, found: Verdict | None) -> Text | None:
    """Right or wrong, and where the true class ranks (``answers.verdict``; None when unknown)."""
    said = answers.verdict(subject, found)
    return said[0] if said else None


def known_classes(subject: Subject, found: Verdict | None) -> Text | None:
    """The classes a model with a short list gives every image (``answers.known_classes``)."""
    said = answers.known_classes(subject, found)
    return said[0] if said else None


def grid_hover(subject: Subject) -> str:
    """A patch map's hover in the reader's language (``Subject.grid_hover``)."""
    return subject.grid_hover()
