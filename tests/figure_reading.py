"""Reading what a figure shows from its object: where the block diagram's skips start and end,
and whether a page counts from 0 where a person counts from 1 (README, "One numbering").

Both take plotly figures as dictionaries (``fig.to_dict()``, or the JSON spec AppTest holds).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable

import numpy as np

from tests.apptest import charts, figure_array, tables

# ---- the block diagram's residual connections --------------------------------------------------

_POINT = re.compile(r"(-?\d+(?:\.\d+)?(?:e-?\d+)?),\s*(-?\d+(?:\.\d+)?(?:e-?\d+)?)")


def residual_skips(layout: dict) -> list[tuple[str | None, str | None]]:
    """(the box whose output a skip starts from, the box whose addition it ends in), by the boxes'
    labels, for every skip path of ``plots.block_diagram``, top to bottom.

    A skip starts from a box's output when its path starts on the flow's centre line in the gap
    right below that box (before the next box); it ends in the box its arrowhead points at.
    Anything else (a skip leaving a box's side, or starting inside a box) reads as None.
    """
    rects = sorted(
        ((s["y1"], s["y0"], s["x0"], s["x1"]) for s in layout.get("shapes", []) if s.get("type") == "rect"),
        reverse=True,
    )  # (top, bottom, left, right), top to bottom
    labels = {
        round(a["y"], 6): a["text"]
        for a in layout.get("annotations", [])
        if not a.get("showarrow", True) and a.get("x") == 0
    }
    boxes = [(top, bottom, left, right, labels.get(round((top + bottom) / 2, 6))) for top, bottom, left, right in rects]
    arrows = [a for a in layout.get("annotations", []) if a.get("showarrow") and a.get("axref") == "x"]
    skips = []
    for shape in layout.get("shapes", []):
        if shape.get("type") != "path":
            continue
        points = [(float(x), float(y)) for x, y in _POINT.findall(shape["path"])]
        (x0, y0), (x1, y1) = points[0], points[-1]
        start = None
        for (_, bottom, left, right, label), below in zip(boxes, [*boxes[1:], None], strict=True):
            next_top = below[0] if below else -np.inf
            if left < x0 < right and next_top < y0 < bottom:
                start = label
        end = None
        for arrow in arrows:
            if np.isclose(arrow["ax"], x1) and np.isclose(arrow["ay"], y1):
                for top, bottom, left, _, label in boxes:
                    if bottom <= arrow["y"] <= top and np.isclose(arrow["x"], left):
                        end = label
        skips.append(((start, end), y0))
    return [skip for skip, _ in sorted(skips, key=lambda item: -item[1])]


# ---- one numbering: nothing a person counts starts at 0 on screen --------------------------------

# What a person counts (README, "One numbering"): these start at 1 on screen. A token keeps its
# index in the sequence ([CLS] is token 0) and is not among them; nor are coordinates and amounts
# (x = 0 at a picture's left edge, 0 of 64 patches hidden, after 0 layers).
COUNTED = {
    "en": {"patch", "row", "col", "column", "layer", "head", "channel", "position", "index", "stage", "p1", "p2", "c"},
    "ko": {"패치", "행", "열", "층", "헤드", "채널", "위치", "단계"},
}
_EN_WORDS = "|".join(sorted(COUNTED["en"], key=len, reverse=True))
ZERO_COUNT = [
    re.compile(
        rf"\b(?:{_EN_WORDS})s?\s*(?:=|:|#)?\s*0(?![\d.,]*\d|\s*(?:%|px|=))", re.IGNORECASE
    ),  # "patch 0", "p1 = 0"
    re.compile(r"(?:패치|채널|헤드|위치|단계)\s*0(?![\d.,]*\d|\s*=)"),  # "패치 0"
    re.compile(r"(?<![\d.,])0\s*(?:번째|번\s*(?:패치|헤드|채널|행|열)|층|행|열)"),  # "0번째", "0층", "0행"
]
# Code keeps its own indices: `code spans`, indexing (blocks[0], x_p[0]), dotted names (groups.0.conv1).
CODE = re.compile(r"`[^`]*`|\w+\[[^\]]*\]|\w+(?:\.\w+)+|%\{[^}]*\}")
# An axis title that says what its 0 is ("After layer (0 = the embeddings)") may show a 0.
SAYS_WHAT_ZERO_IS = re.compile(r"\b0\s*[=:]")
# Modifiers before the counted noun of an English axis title ("ViT layer", "After layer").
_MODIFIERS = {"vit", "cnn", "after", "before", "each", "the"}


def zero_counts_in_text(text: str) -> list[str]:
    """Phrases of ``text`` that count something from 0 ("patch 0", "p1 = 0", "0층"), code aside."""
    plain = CODE.sub(" ", str(text))
    return [match.group(0) for pattern in ZERO_COUNT for match in pattern.finditer(plain)]


def _counted_noun(title: str, lang: str) -> bool:
    """Whether an axis title names something a person counts: its head noun, the first word in
    English (after a modifier such as "ViT"), the last before any bracket in Korean."""
    words = CODE.sub(lambda m: m.group(0).split("[")[0], title).split("(")[0].split()
    if not words:
        return False
    if lang == "ko":
        return words[-1] in COUNTED["ko"]
    head = words[1] if words[0].lower() in _MODIFIERS and len(words) > 1 else words[0]
    return head.lower().rstrip(":,") in COUNTED["en"]


def _numbers(value: object) -> np.ndarray | None:
    """A figure array as numbers, or None when it holds text."""
    if value is None:
        return None
    try:
        array = np.asarray(figure_array(value))
    except (ValueError, TypeError):
        return None
    if array.dtype.kind in "iuf":
        return array.astype(np.float64)
    try:
        return array.astype(np.float64)
    except (ValueError, TypeError):
        return None


def _coordinates(trace: dict, letter: str) -> np.ndarray | None:
    """The trace's x or y positions, the implicit 0, 1, 2 ... included."""
    if trace.get(letter) is not None:
        return _numbers(trace[letter])
    kind = trace.get("type", "scatter")
    if kind == "heatmap" and trace.get("z") is not None:
        z = np.asarray(figure_array(trace["z"]))
        if z.ndim >= 2:
            return np.arange(z.shape[1] if letter == "x" else z.shape[0], dtype=np.float64)
    if kind in ("bar", "scatter"):
        other = trace.get("y" if letter == "x" else "x")
        if other is not None:
            return np.arange(np.asarray(figure_array(other)).shape[0], dtype=np.float64)
    return None


def _placeholder_values(trace: dict, name: str) -> np.ndarray | None:
    """The numbers a hover placeholder such as ``customdata[3]`` or ``x`` shows."""
    field, _, column = name.partition("[")
    if field in ("x", "y"):
        return _coordinates(trace, field)
    if field in ("customdata", "text"):
        values = _numbers(trace.get(field))
        if values is None:
            return None
        return values[..., int(column.rstrip("]"))] if column else values
    return None


_PLACEHOLDER = re.compile(r"%\{([a-z]+(?:\[\d+\])?)(?::[^}]*)?\}")
_WORD_BEFORE = re.compile(r"([A-Za-z0-9_가-힣]+)[\s=:#(]*$")
_WORD_AFTER_KO = re.compile(r"^\s*(번째|번|층|행|열)")


def _texts(node: object, keys: tuple[str, ...]) -> Iterable[str]:
    if isinstance(node, dict):
        for key, value in node.items():
            if key in keys and isinstance(value, str):
                yield value
            elif key in keys and isinstance(value, list):
                yield from (v for v in value if isinstance(v, str))
            else:
                yield from _texts(value, keys)
    elif isinstance(node, list):
        for value in node:
            yield from _texts(value, keys)


def zero_counts_in_figure(spec: dict, lang: str = "en") -> list[str]:
    """Every place a figure counts from 0 where a person counts from 1: words ("patch 0"), a 0
    tick on an axis of patches, rows, columns, layers, heads, channels or positions, and hover
    texts whose counted word shows a value that starts at 0 ("p1=%{y}" over rows 0, 1, 2 ...)."""
    found: list[str] = []
    layout, traces = spec.get("layout", {}), spec.get("data", [])
    # words: titles, axis titles, annotations, tick texts, legend names, text on and in the traces
    for text in _texts(layout, ("text", "ticktext")):
        found += [f"{phrase!r} in {text[:60]!r}" for phrase in zero_counts_in_text(text)]
    for trace in traces:
        for key in ("name", "text", "x", "y", "hovertext"):
            for text in _texts({key: trace.get(key)}, (key,)):
                found += [f"{phrase!r} in {text[:60]!r}" for phrase in zero_counts_in_text(text)]
    # hover: a counted word beside a placeholder whose values start at 0
    for trace in traces:
        template = trace.get("hovertemplate") or ""
        found += [f"{phrase!r} in hover {template!r}" for phrase in zero_counts_in_text(template)]
        for match in _PLACEHOLDER.finditer(template):
            before = _WORD_BEFORE.search(template[: match.start()])
            word = before.group(1) if before else ""
            counted = word.lower() in COUNTED["en"] or word in COUNTED["ko"]
            counted = counted or bool(_WORD_AFTER_KO.match(template[match.end() :]))
            values = _placeholder_values(trace, match.group(1)) if counted else None
            if values is not None and values.size and np.nanmin(values) == 0:
                found.append(f"hover {template!r} shows {word or match.group(0)} 0")
    # axes: a 0 tick on an axis that counts
    for name, axis in layout.items():
        if not re.fullmatch(r"[xy]axis\d*", name) or not isinstance(axis, dict):
            continue
        title = (axis.get("title") or {}).get("text") or ""
        if not axis.get("visible", True) or axis.get("showticklabels") is False or not title:
            continue
        if not _counted_noun(title, lang) or SAYS_WHAT_ZERO_IS.search(title) or axis.get("type") == "category":
            continue
        if axis.get("tickvals") is not None:
            values = _numbers(axis["tickvals"])
            labels = axis.get("ticktext")
            if labels is not None:
                zero = [label for label in labels if re.search(r"(^|[\s:=])0$", str(label))]
            else:
                zero = ["0"] if values is not None and 0 in values else []
            found += [f"axis {title!r} has a tick {label!r}" for label in zero]
            continue
        letter, number = name[0], name[5:]
        ref = letter + number
        spans = []
        for trace in traces:
            if trace.get(f"{letter}axis", letter) != ref:
                continue
            values = _coordinates(trace, letter)
            if values is not None and values.size:
                pad = 0.5 if trace.get("type") in ("heatmap", "bar") else 0.0
                spans.append((np.nanmin(values) - pad, np.nanmax(values) + pad))
        if axis.get("range") is not None:
            low, high = sorted(float(v) for v in axis["range"])
        elif spans:
            low, high = min(s[0] for s in spans), max(s[1] for s in spans)
        else:
            continue
        tick0, dtick = axis.get("tick0", 0), axis.get("dtick")
        on_grid = axis.get("tickmode") != "linear" or not isinstance(dtick, int | float) or (0 - tick0) % dtick == 0
        if low <= 0 <= high and on_grid:
            found.append(f"axis {title!r} has a tick at 0")
    return found


def zero_counts_on_page(at, lang: str) -> list[str]:
    """``zero_counts_in_figure`` over every figure of an AppTest page, and the words of its
    captions, text, messages, metrics, tables (headers and cells) and widget labels and options."""
    found = []
    for chart in charts(at):
        key = chart.proto.id.rsplit("-", 1)[-1]
        found += [f"{key}: {problem}" for problem in zero_counts_in_figure(json.loads(chart.proto.spec), lang)]
    texts: list[str] = []
    for kind in ("title", "header", "subheader", "caption", "markdown", "info", "success", "warning", "error"):
        texts += [str(element.value) for element in getattr(at, kind)]
    for metric in at.metric:
        texts += [str(metric.label), str(metric.value)]
    for kind in ("selectbox", "select_slider", "radio", "multiselect", "number_input", "slider", "checkbox", "toggle"):
        for widget in getattr(at, kind):
            texts.append(str(widget.label))
            texts += [str(option) for option in getattr(widget, "options", None) or []]
    for table in tables(at):
        texts += [str(column) for column in table.columns]
        texts += [cell for cell in table.to_numpy().ravel() if isinstance(cell, str)]
    for text in texts:
        found += [f"{phrase!r} in {text[:80]!r}" for phrase in zero_counts_in_text(text)]
    return found
