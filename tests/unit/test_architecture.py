"""The layers of docs/architecture.md, held: a module imports only from its own layer or the
ones below, only the app imports Streamlit, only the figures import Plotly, and ``import vitviz``
loads neither."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

APP_MODULES = (
    "assets", "charts", "tour", "web", "text", "models", "caches", "state", "session",
    "current", "presenter", "furniture", "navigation", "sidebar", "analyses", "shelf", "turns", "ahead",
    "render",
)  # fmt: skip
STEP_MODULES = (
    "blocks",
    "subject",
    "patches",
    "names",
    "bars",
    "card",
    "trust",
    "testset",
)  # vitviz/steps/: the tour's steps, described as data
# module -> layer (docs/architecture.md draws the same table)
LAYERS = {
    # 0: plain data, no tensors
    "config": 0, "i18n": 0, "clicks": 0, "tables": 0, "card": 0, "access": 0, "values": 0, "deadline": 0,
    # 1: tensors, one concept each
    "patches": 1, "resnet": 1, "trace": 1, "prediction": 1, "cnn": 1, "data": 1, "precision": 1, "augment": 1,
    # 2: the models and what is computed from them
    "model": 2, "analysis": 2, "compare": 2, "convert": 2, "claims": 2, "budget": 2,
    # 3: weights and datasets on disk
    "zoo": 3, "evaluate": 3, "lab": 3,
    # 4: the command lines
    "train": 4, "ship": 4, "explain": 4, "handout": 4, "lease": 4, "cli": 4,
    "faithfulness": 3, "ablation": 3, "projection": 3,  # issue 43's analyses: computed, stored beside the weights, commands
    "commandline": 3,  # what those three command lines share
    # 3: the tour's steps as data (read the models and their analyses; no Streamlit)
    "steps": 3, **{f"steps.{name}": 3 for name in STEP_MODULES},
    # figures: numpy and Plotly only
    "plots": 0,
    # 5: the app (Streamlit): its startup and server, its figures shared by the sessions, and the glue
    **{f"app.{name}": 5 for name in APP_MODULES}, "app": 5,
}  # fmt: skip
STREAMLIT_ALLOWED = {name for name, layer in LAYERS.items() if layer == 5} - {"app.tour", "app.web"}


def _modules() -> dict[str, Path]:
    found = {}
    for path in sorted((ROOT / "vitviz").rglob("*.py")):
        name = ".".join(path.relative_to(ROOT / "vitviz").with_suffix("").parts)
        found[name.removesuffix(".__init__")] = path
    found.pop("__init__", None)
    return found


def _imports(path: Path) -> tuple[set[str], set[str]]:
    """(vitviz modules, other top-level packages) a module imports, anywhere in it."""
    ours, theirs = set(), set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.module:
            if node.module == "vitviz":
                ours |= {alias.name for alias in node.names}
            elif node.module.startswith("vitviz."):
                ours.add(node.module.removeprefix("vitviz."))
            else:
                theirs.add(node.module.split(".")[0])
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.startswith("vitviz."):
                    ours.add(alias.name.removeprefix("vitviz."))
                else:
                    theirs.add(alias.name.split(".")[0])
    return ours, theirs


def test_every_module_has_a_layer():
    assert sorted(set(_modules()) - set(LAYERS)) == []


def test_no_module_imports_from_a_layer_above_its_own():
    wrong = []
    for name, path in _modules().items():
        for other in _imports(path)[0]:
            if LAYERS[other] > LAYERS[name]:
                wrong.append(f"{name} (layer {LAYERS[name]}) imports {other} (layer {LAYERS[other]})")
    assert wrong == []


def test_streamlit_and_plotly_stay_in_their_modules():
    for name, path in _modules().items():
        theirs = _imports(path)[1]
        assert "streamlit" not in theirs or name in STREAMLIT_ALLOWED, name
        # figures are built in plots only; app.charts hands the shared ones' JSON to st.plotly_chart
        assert "plotly" not in theirs or name in ("plots", "app.charts"), name


def test_import_vitviz_loads_neither_streamlit_nor_plotly():
    code = "import sys, vitviz, vitviz.zoo, vitviz.analysis; print(sorted(m for m in ('streamlit', 'plotly') if m in sys.modules))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=ROOT).stdout
    assert out.strip() == "[]"


def _page_files() -> list[Path]:
    return [ROOT / "app.py", *sorted((ROOT / "app_pages").glob("*.py"))]


def test_pages_use_the_library_and_the_glue_and_never_session_state():
    """Layer 6, the pages (app.py, app_pages/): they import vitviz and its glue, never the
    benchmarks, and read and set choices through vitviz.app.state, never st.session_state."""
    for path in _page_files():
        tree = ast.parse(path.read_text())
        ours, theirs = _imports(path)
        assert "benchmarks" not in theirs, path.name
        assert all(name in LAYERS for name in ours), (path.name, ours - set(LAYERS))
        touched = [
            node.lineno for node in ast.walk(tree) if isinstance(node, ast.Attribute) and node.attr == "session_state"
        ]
        assert touched == [], f"{path.name} touches st.session_state on lines {touched}"


def test_the_library_never_imports_the_benchmarks_or_the_pages():
    for name, path in _modules().items():
        assert not {"benchmarks", "app_pages", "tests"} & _imports(path)[1], name


def test_the_benchmarks_use_the_library_s_public_layers():
    """Layer 7, benchmarks/: they may import any vitviz module, but only modules that exist."""
    for path in sorted((ROOT / "benchmarks").glob("*.py")):
        ours, _ = _imports(path)
        assert all(name in LAYERS for name in ours), (path.name, ours - set(LAYERS))


def test_every_persisted_widget_is_a_choice_drawn_where_its_scope_says():
    """A page draws a persisted widget with state.widget(draw, "key", ...): the key is in the
    table of choices, and the page is in the choice's scope (the whole app, or its pages)."""
    from fnmatch import fnmatch

    from vitviz.app import state

    drawn = []
    for path in [*_page_files(), *sorted((ROOT / "vitviz" / "app").glob("*.py"))]:
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "widget":
                key = node.args[1]
                if isinstance(key, ast.Constant):
                    drawn.append((path.relative_to(ROOT).as_posix(), key.value))
    assert len(drawn) >= 20
    for where, key in drawn:
        choice = state.BY_KEY[key]  # a KeyError: a persisted widget missing from the table
        assert choice.scope == state.APP or fnmatch(where, choice.scope), (where, key, choice.scope)
