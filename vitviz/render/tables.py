"""Tables and exports: the rows of st.dataframe tables, small Markdown tables and the CSV files users download.
Figures are in vitviz.render.plots; nothing here draws or calls st.*."""

from __future__ import annotations

import csv
import io
from collections.abc import Sequence

import numpy as np


def maps_csv(maps: dict[str, np.ndarray]) -> str:
    """Named (grid_h, grid_w) maps as one long CSV: map,row,col,value (rows and cols from 0)."""
    lines = ["map,row,col,value"]
    for name, values in maps.items():
        values = np.asarray(values, dtype=np.float64)
        for (row, col), value in np.ndenumerate(values):
            lines.append(f"{name},{row},{col},{value:.6g}")
    return "\n".join(lines) + "\n"


def columns_csv(columns: dict[str, Sequence[object] | np.ndarray]) -> str:
    """Named columns of equal length as CSV text, header first (names with commas are quoted)."""
    lengths = {len(values) for values in columns.values()}
    if len(lengths) > 1:
        raise ValueError(f"columns_csv needs columns of one length, got lengths {sorted(lengths)}.")
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(list(columns))
    for row in zip(*columns.values(), strict=True):
        writer.writerow([f"{v:.6g}" if isinstance(v, (float, np.floating)) else v for v in row])
    return buffer.getvalue()


def parameter_rows(counts: dict[str, int], total: int) -> list[tuple[str, int, float]]:
    """(module, parameters, share of the total) rows, in the model's order."""
    return [(name, count, count / total if total else 0.0) for name, count in counts.items()]


RECIPE_HIDDEN = (
    "name",
    "data",
    "model",
    "threads",
    "workers",
    "compile",
    "eval_every",
    "checkpoint_every",
    "init_from",
)  # where and how it ran, not what it learned from


def setting_text(value: object) -> str:
    """A config or recipe value as a table shows it: floats to 6 significant digits (1/9 reads 0.111111)."""
    return f"{value:.6g}" if isinstance(value, float) else str(value)


def recipe_rows(
    recipes: Sequence[dict], run_epochs: Sequence[int] | None = None, cut_short: str = "{run} of {planned}"
) -> list[tuple[str, list[str]]]:
    """The training recipe as table rows, one value per stage: [(setting, [value per stage])].

    Settings that say where or how a run ran rather than what it learned from are left out, and
    so are settings that are unset in every stage.

    Args:
        recipes: each stage's recipe (its "epochs" is what the stage planned).
        run_epochs: the epochs each stage really ran; a stage stopped early reads
            ``cut_short`` ("10 of 28"), one that ran its plan just the number.
    """
    keys = [k for k in dict.fromkeys(k for recipe in recipes for k in recipe) if k not in RECIPE_HIDDEN]
    rows = [(k, ["-" if recipe.get(k) is None else setting_text(recipe[k]) for recipe in recipes]) for k in keys]
    if run_epochs is not None:
        ran = [
            str(run) if recipe.get("epochs") in (None, run) else cut_short.format(run=run, planned=recipe["epochs"])
            for recipe, run in zip(recipes, run_epochs, strict=True)
        ]
        rows = [(k, ran if k == "epochs" else values) for k, values in rows]
    return [(k, values) for k, values in rows if any(v != "-" for v in values)]


def history_csv(history: Sequence[dict]) -> str:
    """The training history as CSV text (one row per epoch)."""
    keys = sorted({key for row in history for key in row}, key=lambda k: (k != "epoch", k))
    lines = [",".join(keys)]
    lines += [",".join(str(row.get(key, "")) for key in keys) for row in history]
    return "\n".join(lines) + "\n"


def trust_rows(reading, methods: Sequence[str]) -> list[tuple[str, float, float, float, str]]:
    """(method, deletion area, insertion area, insertion minus deletion, verdict) per ranking, in
    ``methods``' order, from ``vitviz.analyses.faithfulness.read``; the random orders' mean first."""
    rows = [("random", reading.deletion["random"], reading.insertion["random"], reading.margins["random"], "chance")]
    for method in methods:
        rows.append(
            (
                method,
                reading.deletion[method],
                reading.insertion[method],
                reading.margins[method],
                reading.verdicts[method],
            )
        )
    return rows
