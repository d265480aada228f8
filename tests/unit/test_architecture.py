"""The layers of docs/architecture.md, held: a module imports only from its own layer or the
ones below, only the app imports Streamlit, only the figures import Plotly, and ``import vitviz``
loads neither."""

from __future__ import annotations

import ast
import io
import re
import subprocess
import sys
import tokenize
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

APP_MODULES = (
    "assets", "charts", "tour", "web", "text", "models", "caches", "state", "session",
    "current", "presenter", "furniture", "navigation", "sidebar", "analyses", "shelf", "turns", "ahead",
    "render", "where", "classroom", "teacher", "students", "patch_poll", "testset", "internals",
    "chart_script", "page_list", "described", "first_view", "first_view_file", "sockets", "margins", "tabular", "gallery",
)  # fmt: skip
STEP_MODULES = (
    "blocks",
    "subject",
    "patches",
    "answers",
    "prediction",
    "compare",
    "compare_experiments",
    "attention",
    "attention_worked",
    "picks",
    "remembered",
    "block",
    "common",
    "overview",
    "model_input",
    "vectors",
    "tokens",
    "names",
    "bars",
    "card",
    "trust",
    "testset",
    "mistakes",
    "learn",
)  # vitviz/steps/: the tour's steps, described as data
# module -> layer (docs/architecture.md draws the same table)
LAYERS = {
    # 0: plain data, no tensors
    "models.config": 0, "render.i18n": 0, "render.clicks": 0, "render.tables": 0, "models.card": 0, "server.access": 0, "server.values": 0, "server.deadline": 0,
    "server.classes": 0,  # a class that follows its teacher: the store (memory or Redis), no Streamlit
    # 1: tensors, one concept each
    "models.patches": 1, "models.resnet": 1, "models.trace": 1, "models.prediction": 1, "models.cnn": 1, "models.data": 1, "models.precision": 1, "training.augment": 1,
    # 2: the models and what is computed from them
    "models.model": 2, "analyses.analysis": 2, "analyses.compare": 2, "models.convert": 2, "analyses.claims": 2, "models.budget": 2,
    # 3: weights and datasets on disk
    "models.zoo": 3, "models.snapshots": 3, "analyses.evaluate": 3, "analyses.lab": 3,
    # 4: the command lines
    "training.train": 4, "models.explain": 4, "render.handout": 4, "cli": 4, "__main__": 4,
    "analyses.faithfulness": 3, "analyses.ablation": 3, "analyses.projection": 3, "analyses.occlusion": 3, "analyses.comparison": 3,  # the test set's analyses: computed, stored beside the weights, commands
    "commandline": 3,  # what those four command lines share
    # 3: the tour's steps as data (read the models and their analyses; no Streamlit)
    "steps": 3, **{f"steps.{name}": 3 for name in STEP_MODULES},
    # figures: numpy and Plotly only
    "render.plots": 0,
    # 5: the app (Streamlit): its startup and server, its figures shared by the sessions, and the glue
    **{f"app.{name}": 5 for name in APP_MODULES}, "app": 5,
    # the folders themselves: a docstring each
    "models": 0, "analyses": 0, "training": 0, "render": 0, "server": 0,
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


def _ours(dotted: str) -> str | None:
    """A vitviz module's name as _modules() keys it ("vitviz.app.state" -> "app.state"), else None."""
    return dotted.removeprefix("vitviz.") if dotted.startswith("vitviz.") else None


def _imported_modules(name: str, path: Path, modules: set[str]) -> set[str]:
    """The vitviz modules ``name`` imports, anywhere in it (inside functions too): ``from
    vitviz.app import state`` is ``app.state``, ``from vitviz.app.state import get`` is too."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom):
            if node.level:  # relative: from . import x, from ..app import y
                parts = ["vitviz", *package.split(".")] if package else ["vitviz"]
                base = ".".join(parts[: len(parts) - node.level + 1] + ([node.module] if node.module else []))
            else:
                base = node.module or ""
            named = {_ours(f"{base}.{alias.name}") for alias in node.names} & modules
            # from a package, its modules (not the package as well); from a module, the module
            targets = named or {_ours(base)}
        elif isinstance(node, ast.Import):
            targets = {_ours(alias.name) for alias in node.names}
        else:
            continue
        found |= targets & modules
    return found - {name}


def import_cycles(paths: dict[str, Path]) -> list[list[str]]:
    """Every set of vitviz modules that import each other, directly or round a loop (the strongly
    connected components of the import graph with more than one module, or one importing itself)."""
    graph = {name: sorted(_imported_modules(name, path, set(paths))) for name, path in paths.items()}
    order, low, stack, on_stack, cycles = {}, {}, [], set(), []

    def visit(node: str) -> None:  # Tarjan's algorithm
        order[node] = low[node] = len(order)
        stack.append(node)
        on_stack.add(node)
        for other in graph[node]:
            if other not in order:
                visit(other)
                low[node] = min(low[node], low[other])
            elif other in on_stack:
                low[node] = min(low[node], order[other])
        if low[node] == order[node]:
            component = []
            while not component or component[-1] != node:
                component.append(stack.pop())
                on_stack.discard(component[-1])
            if len(component) > 1:
                cycles.append(sorted(component))

    for node in graph:
        if node not in order:
            visit(node)
    return cycles


def test_no_import_cycle_among_vitviz_modules():
    """Not even through an import inside a function: a module that needs one that needs it back
    holds something that belongs elsewhere."""
    assert import_cycles(_modules()) == []


def test_the_cycle_finder_sees_a_cycle_through_a_function_s_import(tmp_path):
    (tmp_path / "app").mkdir()
    files = {
        "app": "",
        "app.a": "from vitviz.app import b\n",
        "app.b": "def f():\n    from vitviz.app.c import g\n",
        "app.c": "import vitviz.app.a\n",
        "app.d": "from vitviz.app import a\n",
        "x": "from vitviz import y, app\n",
        "trace": "import vitviz.y\n",
        "y": "import trace, x\ndef f():\n    from vitviz import x\n",  # the standard library's trace is not ours
    }
    paths = {}
    for name, text in files.items():
        path = tmp_path / (name.replace(".", "/") + ("/__init__.py" if name == "app" else ".py"))
        path.write_text(text)
        paths[name] = path
    assert sorted(import_cycles(paths)) == [["app.a", "app.b", "app.c"], ["x", "y"]]
    paths["app.c"].write_text("import vitviz.app\n")  # the package, not a: no loop
    paths["y"].write_text("from vitviz.x import z\n")  # a name from x: still x
    assert import_cycles(paths) == [["x", "y"]]


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
        # figures are built in plots only; app.internals sends their JSON written once to st.plotly_chart
        assert "plotly" not in theirs or name in ("render.plots", "app.internals"), name


# Streamlit's and Plotly's internals: names outside their public API (underscored attributes,
# modules below their documented entry points) and the rebinding of their functions
PRIVATE_USES = (
    "_plotly_utils", "._layout", "._data", "._frame_objs", "_validate=", "_script_hash", "set_script_intent",
    "get_script_run_ctx", "streamlit.runtime", "streamlit.logger", "streamlit.delta_generator", "DeltaGenerator",
    "st._main", "streamlit.elements", "plotly.tools.", "plotly.io.to_json =", "from streamlit import runtime",
    "from streamlit import config",
)  # fmt: skip


def test_only_app_internals_touches_streamlit_or_plotly_internals():
    """Every private use of Streamlit and Plotly sits in vitviz/app/internals.py, which checks the
    installed versions and falls back to the public API (tests/app/test_internals.py)."""
    found = []
    for path in [*(ROOT / "vitviz").rglob("*.py"), *_page_files(), ROOT / "app.py"]:
        if path.name == "internals.py":
            continue
        text = path.read_text(encoding="utf-8")
        found += [f"{path.relative_to(ROOT)}: {use}" for use in PRIVATE_USES if use in text]
    assert found == []


def test_every_figure_on_a_page_is_drawn_through_charts_draw():
    """charts.draw themes each figure for the session's mode: a direct plotly_chart call would
    show a figure unthemed (small grey text on a projector)."""
    found = []
    for path in [*(ROOT / "vitviz" / "app").rglob("*.py"), *_page_files(), ROOT / "app.py"]:
        if path.name == "internals.py":
            continue
        text = "".join(
            token.string
            for token in tokenize.generate_tokens(io.StringIO(path.read_text(encoding="utf-8")).readline)
            if token.type not in (tokenize.COMMENT, tokenize.STRING)
        )
        found += [str(path.relative_to(ROOT))] if ".plotly_chart(" in text else []
    assert found == []


def test_import_vitviz_loads_neither_streamlit_nor_plotly():
    code = "import sys, vitviz, vitviz.models.zoo, vitviz.analyses.analysis; print(sorted(m for m in ('streamlit', 'plotly') if m in sys.modules))"
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


def test_the_library_never_imports_the_benchmarks_the_tools_or_the_pages():
    for name, path in _modules().items():
        assert not {"benchmarks", "tools", "app_pages", "tests"} & _imports(path)[1], name


def test_the_team_s_tools_live_outside_the_installed_package():
    """tools/ (ship, lease, mutants) runs from a clone (tests/unit/test_wheel.py: the wheel has
    none of it), and imports only vitviz modules that exist."""
    assert {"ship", "lease"} <= {path.stem for path in (ROOT / "tools").glob("*.py")}
    assert not (ROOT / "vitviz" / "ship.py").exists() and not (ROOT / "vitviz" / "lease.py").exists()
    for path in sorted((ROOT / "tools").glob("*.py")):
        ours, _ = _imports(path)
        assert all(name in LAYERS for name in ours), (path.name, ours - set(LAYERS))


def test_the_benchmarks_use_the_library_s_public_layers():
    """Layer 7, benchmarks/: they may import any vitviz module, but only modules that exist."""
    for path in sorted((ROOT / "benchmarks").glob("*.py")):
        ours, _ = _imports(path)
        assert all(name in LAYERS for name in ours), (path.name, ours - set(LAYERS))


def test_every_persisted_widget_is_a_choice_drawn_where_its_scope_says():
    """A page draws a persisted widget with state.widget(draw, "key", ...), or a step's description
    declares it as a Control("key", ...) that the page's render.page draws: the key is in the
    table of choices, and the page is in the choice's scope (the whole app, or its pages)."""
    from fnmatch import fnmatch

    from vitviz.app import state

    drawn = []
    for path in [*_page_files(), *sorted((ROOT / "vitviz" / "app").glob("*.py"))]:
        where = path.relative_to(ROOT).as_posix()
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "widget":
                key = node.args[1]
                if isinstance(key, ast.Constant):
                    drawn.append((where, key.value))
            described = isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.args
            if described and node.func.attr == "page" and isinstance(node.args[0], ast.Attribute):
                step = (
                    ROOT / "vitviz" / "steps" / f"{ast.unparse(node.args[0].value)}.py"
                )  # render.page(X.describe, ...)
                for inner in ast.walk(ast.parse(step.read_text())):
                    named = isinstance(inner, ast.Call) and isinstance(inner.func, ast.Name) and inner.args
                    if named and inner.func.id == "Control" and isinstance(inner.args[0], ast.Constant):
                        drawn.append((where, inner.args[0].value))
    assert len(drawn) >= 20 and sum(where.startswith("app_pages/2_") for where, _ in drawn) >= 2
    for where, key in drawn:
        choice = state.BY_KEY[key]  # a KeyError: a persisted widget missing from the table
        assert choice.scope == state.APP or fnmatch(where, choice.scope), (where, key, choice.scope)


APP_MODULE_LINES = 300  # docs/architecture.md: an app or step module a newcomer reads at one sitting


def test_every_app_and_step_module_is_at_most_300_lines():
    long = {
        f"{path.parent.name}/{path.name}": lines
        for folder in ("app", "steps")
        for path in sorted((ROOT / "vitviz" / folder).glob("*.py"))
        if (lines := len(path.read_text().splitlines())) > APP_MODULE_LINES
    }
    assert long == {}


RENDERER_LINES = 60  # a renderer's function reads at a glance: what a block becomes, nothing else
RENDERERS = ("vitviz/app/render.py", "vitviz/render/handout.py")  # the page and slides, and paper


def test_every_renderer_function_is_at_most_60_lines():
    long = [
        f"{name}: {node.name} ({node.end_lineno - node.lineno + 1} lines)"
        for name in RENDERERS
        for node in ast.walk(ast.parse((ROOT / name).read_text()))
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))
        and node.end_lineno - node.lineno + 1 > RENDERER_LINES
    ]
    assert long == []


ISSUE = re.compile(r"\bissues? ?[#-]? ?[0-9]+", re.IGNORECASE)  # "issue 43", "Issue #43", "issues 18"


def comments_and_docstrings(text: str) -> list[tuple[int, str]]:
    """(line, text) of every comment and docstring in Python source."""
    found = [
        (t.start[0], t.string)
        for t in tokenize.generate_tokens(io.StringIO(text).readline)
        if t.type == tokenize.COMMENT
    ]
    for node in ast.walk(ast.parse(text)):
        documented = isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef))
        if documented and (doc := ast.get_docstring(node, clean=False)) is not None:
            found.append((node.body[0].lineno, doc))
    return found


def test_comments_state_facts_not_the_history_of_issues():
    """Comments and docstrings say what the code does and why; which issue asked for it is the
    history of the project (git log, docs/), and reads as noise to a newcomer."""
    paths = [*sorted((ROOT / "vitviz").rglob("*.py")), *_page_files(), *sorted((ROOT / "tools").glob("*.py"))]
    cited = [
        f"{path.relative_to(ROOT)}:{line}: {match[0]}"
        for path in paths
        for line, text in comments_and_docstrings(path.read_text())
        for match in ISSUE.finditer(text)
    ]
    assert cited == []


def test_the_history_finder_reads_comments_and_docstrings_not_code():
    source = '''"""The map (issue 43)."""
x = "issue 7"  # asked for in Issue #18
def f():
    """Nothing here."""
'''
    assert [(line, m[0]) for line, text in comments_and_docstrings(source) for m in ISSUE.finditer(text)] == [
        (2, "Issue #18"),
        (1, "issue 43"),
    ]


DOTTED = re.compile(
    r"(?<![\"'\w.])vitviz(?:\.\w+)+"
)  # vitviz.app.state, vitviz.models.zoo.load; not "vitviz.notes" (a key)


def _defines(source: str, name: str) -> bool:
    """Whether module source defines or imports ``name`` at its top level (or is a package that holds it)."""
    pattern = rf"^(?:(?:async )?def |class ){name}\b|^{name}\b[^=\n(]*=|^(?:from \S+ )?import [^\n]*\b{name}\b"
    return re.search(pattern, source, re.MULTILINE) is not None


def test_comments_and_docstrings_name_modules_that_exist():
    """A comment that sends a reader to a module or a name that is not there wastes their hour."""
    modules = _modules()
    wrong = []
    for path in [*sorted((ROOT / "vitviz").rglob("*.py")), *_page_files()]:
        for line, text in comments_and_docstrings(path.read_text()):
            for match in DOTTED.finditer(text):
                parts = match[0].removeprefix("vitviz.").split(".")
                known = [n for n in range(1, len(parts) + 1) if ".".join(parts[:n]) in modules]
                module = ".".join(parts[: known[-1]]) if known else None
                if module is None or (
                    known[-1] < len(parts) and not _defines(modules[module].read_text(), parts[known[-1]])
                ):
                    wrong.append(f"{path.relative_to(ROOT)}:{line}: {match[0]}")
    assert wrong == []
