"""docs/claims.md keeps up with the code: it names every public function of ``vitviz.analyses.claims``,
every function its table names exists, every i18n key its table names is in the locales, and
every test its table names is a test of tests/.

The claims module is found by its import (``claims.__file__``), so that moving it into a folder
changes one line here.
"""

from __future__ import annotations

import ast
import fnmatch
import importlib
import inspect
import re
from functools import cache
from pathlib import Path

import vitviz
import vitviz.analyses.claims as claims
from vitviz.render.i18n import LANGUAGES, TEXT

ROOT = Path(__file__).resolve().parents[2]
DOC = ROOT / "docs" / "claims.md"
TABLE = "## Computed sentences, page by page"
PAGE, SENTENCE, NUMBERS, FUNCTION, TEST = range(5)  # the table's columns
SPAN = re.compile(r"`([^`]+)`")


def public_functions() -> list[str]:
    """The functions that ``vitviz/analyses/claims.py`` defines and does not mark private with a "_"."""
    return sorted(
        name
        for name, function in inspect.getmembers(claims, inspect.isfunction)
        if function.__module__ == claims.__name__ and not name.startswith("_")
    )


def table_rows() -> list[list[str]]:
    """The cells of every row of the table "Computed sentences, page by page" (not its header)."""
    lines = DOC.read_text(encoding="utf-8").split(TABLE, 1)[1].strip().splitlines()
    rows = []
    for line in lines[2:]:  # under the header and its rule
        if not line.startswith("|"):
            break
        rows.append([cell.strip() for cell in line.strip().strip("|").split("|")])
        assert len(rows[-1]) == 5, line
    return rows


@cache
def collected_tests() -> dict[str, set[str]]:
    """Every test function of tests/ (methods too), by its file's path from the repository root."""
    found = {}
    for path in sorted((ROOT / "tests").rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        found[path.relative_to(ROOT).as_posix()] = {
            node.name
            for node in ast.walk(tree)
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name.startswith("test_")
        }
    return found


def module_named(name: str):
    """The vitviz module ``name`` (a dotted path below vitviz), found by its file's name wherever the
    library keeps it; ``claims`` is the module imported above."""
    if name == "claims":
        return claims
    try:
        return importlib.import_module(f"vitviz.{name}")
    except ModuleNotFoundError:
        last = name.split(".")[-1]
        package = Path(vitviz.__file__).parent
        (path,) = [p for p in package.rglob(f"{last}.py") if "__pycache__" not in p.parts]
        return importlib.import_module(".".join(("vitviz", *path.relative_to(package).with_suffix("").parts)))


def resolves(dotted: str) -> bool:
    """Whether ``dotted`` ("claims.routes", "vitviz.steps.answers.known_classes",
    "analysis.occlusion_reading") names a module of vitviz or something in one."""
    parts = dotted.removeprefix("vitviz.").split(".")
    for split in range(len(parts), 0, -1):
        try:
            found = module_named(".".join(parts[:split]))
        except (ModuleNotFoundError, ValueError):
            continue
        for attribute in parts[split:]:
            if not hasattr(found, attribute):
                return False
            found = getattr(found, attribute)
        return True
    return False


def named_keys(cell: str) -> list[str]:
    """The i18n keys (or patterns with *) that a Sentence cell names: `a.b.{c,d}` is a.b.c and
    a.b.d; a bare `d` right after `a.b.c` (joined by "/", "+", "," or "and") is a.b.d."""
    keys, last, end = [], None, 0
    for span in SPAN.finditer(cell):
        name, joined = span[1], re.fullmatch(r"\s*(/|\+|,|and)\s*", cell[end : span.start()])
        end = span.end()
        if not re.fullmatch(r"[\w.*{},]+", name) or ("." not in name and not (joined and last)):
            continue
        if "." not in name:
            name = f"{last.rsplit('.', 1)[0]}.{name}"
        braces = re.search(r"\{([^}]*)\}", name)
        expanded = [name.replace(braces[0], option) for option in braces[1].split(",")] if braces else [name]
        keys += expanded
        last = expanded[-1]
    return keys


# ---- the tests ------------------------------------------------------------------------------------


def test_the_doc_names_every_public_function_of_claims():
    spans = " ".join(SPAN.findall(DOC.read_text(encoding="utf-8")))
    missing = [name for name in public_functions() if not re.search(rf"\bclaims\.{name}\b", spans)]
    assert missing == [], f"add a row to {DOC.name} for {missing}"
    assert len(public_functions()) > 50  # the module was found and read


def test_every_function_the_table_names_exists():
    rows = table_rows()
    assert len(rows) > 60
    named = [span.split("(")[0] for row in rows for span in SPAN.findall(row[FUNCTION])]
    dotted = [name for name in named if re.fullmatch(r"[A-Za-z_][\w.]*\.\w+", name)]
    assert len(dotted) > 60
    assert [name for name in dotted if not resolves(name)] == []


def test_every_key_the_table_names_is_in_the_locales():
    written = [key for key, sentences in TEXT.items() if all(sentences.get(lang) for lang in LANGUAGES)]
    named = [key for row in table_rows() for key in named_keys(row[SENTENCE])]
    assert len(named) > 150
    assert [key for key in named if not fnmatch.filter(written, key)] == []


def test_every_test_the_table_names_exists():
    everywhere = set().union(*collected_tests().values())
    named, missing = 0, []
    for row in table_rows():
        file = None  # a "::test" after a path is a test of that path's file, until another path
        for span in SPAN.findall(row[TEST]):
            found = re.fullmatch(r"(tests/[\w/]+\.py)?(?:::)?(test_\w+)?", span)
            if found is None or not any(found.groups()):
                continue
            named += 1
            if found[1]:
                file = found[1]
                if file not in collected_tests():
                    missing.append(file)
                    continue
            if found[2] and found[2] not in (
                collected_tests().get(file, set()) if span.startswith(("tests/", "::")) else everywhere
            ):
                missing.append(span)
    assert named > 100
    assert missing == []
