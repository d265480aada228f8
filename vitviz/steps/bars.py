"""Top-k bars as every step draws them, in the reader's language."""

from __future__ import annotations

from collections.abc import Iterable

from vitviz.models.prediction import Verdict, legend_key
from vitviz.render import plots
from vitviz.render.i18n import class_label, t

FRAME_PX = 90  # a top-k chart's title, axis and margins: callers size theirs as 90 + a bar's height * k
MIN_BAR_PX = 28  # the least a bar's row is given, for its label at presenter sizes


def class_bars(
    lang: str,
    names: list[str],
    values: list[float],
    title: str,
    found: Verdict | None,
    height: int,
    beside: Iterable[Verdict | None] = (),
) -> plots.Figure:
    """Top-k probabilities, best first, as bars labelled in ``lang``: the answer in red and, when the
    image's class is known, the true class in green. The title says what the colours mean
    (``prediction.legend_key``), for this chart and the charts set ``beside`` it, so that charts
    side by side share one legend, wrap their titles alike and start their bars level.

    A wrong answer's true class says so beside its number ("true class"), as well as being green. A true
    class below the top k gets one bar more under them, with its rank: the legend promises a green
    bar, and a class reading a mistake off the projector sees what the image was without opening
    the notes."""
    names, values, notes, apart = list(names), list(values), [""] * len(names), None
    if found is not None and found.true_class not in names:
        apart = len(names)  # under a dotted line: it is not the next in rank
        height += max(MIN_BAR_PX, (height - FRAME_PX) // max(len(names), 1))  # as tall as the others
        names.append(found.true_class)
        values.append(found.probability)
        notes.append(t("verdict.rank_bar", lang, rank=found.rank, n=found.num_classes))
    elif found is not None and not found.correct:  # said as well as coloured: a sliver shows no colour
        notes[names.index(found.true_class)] = t("verdict.true_bar", lang)
    correct = names.index(found.true_class) if found is not None else None
    key = legend_key([found, *beside])
    title = f"{title} ({t(key, lang)})" if key else title
    labels = [class_label(n, lang) for n in names]
    return plots.bars(
        labels, values, title=title, height=height, highlight=0, correct=correct, notes=notes, apart=apart
    )
