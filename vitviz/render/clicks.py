"""What a user clicked on a figure, from the state of ``st.plotly_chart(..., on_select=...)``.

The clickable figures carry, on every marker, ``customdata`` whose first numbers say what the
marker stands for: a patch's index (``plots.patch_grid``, ``plots.attention_picker``) or a
confusion-matrix cell's (true class, predicted class) (``plots.confusion_matrix``). The browser
sends a row of a 2D customdata array as a list or as an object keyed "0", "1", ... (plotly's
typed arrays); both are read here, once for every figure.
"""

from __future__ import annotations

from collections.abc import Sequence


def _numbers(customdata: object, count: int) -> list[object] | None:
    """The first ``count`` entries of a point's customdata, given as a list or as {"0": ...}, or
    the one number of a 1-D customdata (the map of the test set's image index)."""
    if isinstance(customdata, int | float) and not isinstance(customdata, bool) and count == 1:
        return [customdata]
    if isinstance(customdata, dict):
        values = [customdata.get(str(i), customdata.get(i)) for i in range(count)]
        return values if all(v is not None for v in values) else None
    if isinstance(customdata, (list, tuple)) and len(customdata) >= count:
        return list(customdata[:count])
    return None


def whole(value: object) -> bool:
    """A whole number, checked without converting it (``float(10**400)`` raises)."""
    if isinstance(value, bool):
        return False
    return isinstance(value, int) or (isinstance(value, float) and value.is_integer())  # not inf, not nan


def clicked(selection: dict | None, limits: Sequence[int], curve: int | None = None) -> tuple[int, ...] | None:
    """The numbers of the last clicked point: its customdata's first ``len(limits)`` entries,
    each a whole number in [0, limit).

    Args:
        selection: the chart's state, ``{"selection": {"points": [...]}}``, or just its
            ``{"points": [...]}``; None or an empty selection gives None.
        limits: one upper bound per number read (a grid's N, or a matrix's K twice).
        curve: for one number only: a point without customdata on this trace counts, with
            its point index as the number.

    Returns:
        The numbers, or None when nothing usable was clicked.
    """
    if not isinstance(selection, dict):  # a browser sends a dict; a forged message may send anything
        return None
    inner = selection.get("selection", selection)
    points = inner.get("points") if isinstance(inner, dict) else None
    for point in reversed(points if isinstance(points, list) else []):
        if not isinstance(point, dict):
            continue
        values = _numbers(point.get("customdata"), len(limits))
        if values is None and curve is not None and len(limits) == 1 and point.get("curve_number") == curve:
            values = [point.get("point_index", point.get("point_number"))]
        if values is None:
            continue
        if all(whole(v) and 0 <= v < limit for v, limit in zip(values, limits, strict=True)):
            return tuple(int(v) for v in values)
    return None


def patch_from_selection(selection: dict | None, num_patches: int, curve: int | None = None) -> int | None:
    """The patch clicked on a patch grid: its index in [0, N), row-major, without [CLS] (the
    token index is ``num_prefix_tokens`` more); or None."""
    found = clicked(selection, (num_patches,), curve)
    return None if found is None else found[0]


def cell_from_selection(selection: dict | None, num_classes: int) -> tuple[int, int] | None:
    """The confusion-matrix cell clicked: (true class, predicted class), or None."""
    found = clicked(selection, (num_classes, num_classes))
    return None if found is None else (found[0], found[1])
