"""Top-k bars as every step draws them, in the reader's language."""

from __future__ import annotations

from collections.abc import Iterable

from vitviz.models.prediction import Verdict, legend_key
from vitviz.render import plots
from vitviz.render.i18n import class_label, t


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
    side by side share one legend, wrap their titles alike and start their bars level."""
    correct = names.index(found.true_class) if found is not None and found.true_class in names else None
    key = legend_key([found, *beside])
    title = f"{title} ({t(key, lang)})" if key else title
    labels = [class_label(n, lang) for n in names]
    return plots.bars(labels, values, title=title, height=height, highlight=0, correct=correct)
