"""The layers of docs/architecture.md, held: a module imports only from its own layer or the
ones below, only the app imports Streamlit, only the figures import Plotly, and ``import vitviz``
loads neither."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

# module -> layer (docs/architecture.md draws the same table)
LAYERS = {
    # 0: plain data, no tensors
    "config": 0, "i18n": 0, "tour": 0, "clicks": 0, "tables": 0, "card": 0, "access": 0,
    # 1: tensors, one concept each
    "patches": 1, "resnet": 1, "trace": 1, "prediction": 1, "cnn": 1, "data": 1, "precision": 1, "augment": 1,
    # 2: the models and what is computed from them
    "model": 2, "analysis": 2, "compare": 2, "convert": 2, "claims": 2,
    # 3: weights and datasets on disk
    "zoo": 3, "evaluate": 3, "lab": 3,
    # 4: the command lines
    "train": 4, "ship": 4, "explain": 4, "bench": 4, "handout": 4, "lease": 4,
    # figures: numpy and Plotly only
    "plots": 0,
    # 5: the app (Streamlit)
    "app": 5, "app.ui": 5, "app.assets": 5, "app.charts": 5,
}  # fmt: skip
# vitviz.app: the glue (its startup, its server, its figures shared by the sessions)
STREAMLIT_ALLOWED = {"app", "app.ui", "app.assets", "app.charts"}


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
