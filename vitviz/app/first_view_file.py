"""The file the first view draws (``vitviz.app.first_view``, ``assets/first_view.json``), made from
the app's own runs: ``python -m vitviz.app.first_view_file`` runs app.py's overview for a fresh
session in every language (AppTest) and keeps what ``vitviz.app.render.page`` draws there
(``record``): its title, sentences, figures' JSON as ``vitviz.app.charts.draw`` writes it for the
screen, table and Next button. ``tools.ship --analyses-only`` writes it again for the default ViT;
tests/app/test_first_view.py makes it again and compares."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from vitviz.app import chart_script
from vitviz.app.first_view import ASSETS, FILE, HOME, ROLES, has_gpu, sha256

_recorded: list[dict[str, Any]] | None = None  # while ``make`` runs: the overview as its runs drew it


def record(script: str, step: Any) -> None:
    """``vitviz.app.render.page``'s hook, in the run that draws the page: while ``make`` runs, the
    overview's Step as this run draws it (its figures' JSON as ``vitviz.app.charts.draw`` writes
    it for the screen, its table as tall as ``vitviz.app.furniture.table_height`` makes it)."""
    if _recorded is None or script != HOME:
        return
    from vitviz.app import furniture, navigation, presenter
    from vitviz.app.text import tr
    from vitviz.app.tour import LAB, TOUR, shipped

    if presenter.presenting():
        raise RuntimeError("the first view is the page, not presenter mode's slides")
    _recorded.append(
        {
            "title": step.title,
            "intro": step.intro,
            "shape": None if step.shape is None else f"**{tr('shape.label')}:** `{step.shape}`",
            "blocks": [_block(block) for block in step.blocks],
            "nav": {
                "tour": tr("nav.tour"),
                "lab": tr("nav.lab"),
                "titles": {key: tr(key) for file, key, _ in TOUR + LAB if shipped(file)},
            },
            "next": {"counter": navigation.counter(0, len(TOUR) - 1), "label": f"{tr('nav.next')} →"},
            "icon": furniture.favicon(),
        }
    )


def _block(block: Any) -> dict[str, Any]:
    from vitviz.app import charts, furniture, internals
    from vitviz.steps.blocks import Figures, Heading, Table, Text

    if isinstance(block, Figures):
        figures = []
        for figure in block.figures:
            if figure.select is not None:
                raise TypeError(f"the first view's figures take no clicks ({figure.key} does)")
            figures.append(
                {
                    "key": figure.key,
                    "spec": internals.write(charts.themed(figure.figure, False)),
                    "script": chart_script.script_for(trace.type for trace in figure.figure.data),
                    "takeaway": figure.takeaway,
                }
            )
        return {"kind": "figures", "widths": list(block.widths), "figures": figures}
    if isinstance(block, Text) and block.role in ROLES:
        return {"kind": "text", "role": block.role, "text": block.text}
    if isinstance(block, Heading):
        return {"kind": "heading", "text": block.text}
    if isinstance(block, Table) and not block.whole:
        rows = [dict(row) for row in block.rows]
        return {"kind": "table", "rows": rows, "height": furniture.table_height(len(rows)), "caption": block.caption}
    raise TypeError(f"the first view draws figures, text, headings and tables, not {type(block).__name__}")


def make() -> dict[str, Any]:
    """The file's content: the overview of a fresh session, with the default model and sample, in
    every language, as the app draws it (an AppTest run of app.py per language)."""
    global _recorded
    from streamlit.testing.v1 import AppTest

    from vitviz.app.caches import SAMPLES, sample_names
    from vitviz.models import zoo
    from vitviz.render.i18n import DEFAULT_LANGUAGE, LANGUAGES

    if os.environ.get("VITVIZ_PRECISION", "float32") != "float32" or has_gpu():
        raise RuntimeError("the first view is made as a server without a GPU draws it: in float32, on the CPU")
    app = Path(__file__).resolve().parents[2] / "app.py"
    languages = {}
    icons = set()
    for language in LANGUAGES:
        _recorded = []
        try:
            at = AppTest.from_file(str(app), default_timeout=120)
            if language != DEFAULT_LANGUAGE:
                at.query_params["lang"] = language
            at.run()
            if at.exception or not _recorded:
                raise RuntimeError(f"the overview in {language!r} was not drawn: {[e.value for e in at.exception]}")
            view = _recorded[-1]
        finally:
            _recorded = None
        icons.add(view.pop("icon"))
        languages[language] = view
    (icon,) = icons
    inputs = [zoo.REGISTRY[zoo.default_name()].path, SAMPLES / sample_names()[0]]
    return {
        "model": zoo.default_name(),
        "inputs": {str(path.relative_to(ASSETS)): sha256(path) for path in inputs},
        "default_language": DEFAULT_LANGUAGE,
        "icon": icon,
        "languages": languages,
    }


def write(path: Path = FILE) -> None:
    """Make the file (``make``) and write it, its rows' columns in the order they are drawn."""
    path.write_text(json.dumps(make(), ensure_ascii=False, indent=1) + "\n", encoding="utf-8")


if __name__ == "__main__":  # run as a script, this file is not the module render.page reports to
    from vitviz.app import first_view_file

    first_view_file.write()
    print(f"wrote {FILE}")
