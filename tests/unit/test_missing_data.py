"""Tests whose data is missing: deselected with a sentence on a clone of its own, failed in CI
(at setup: pytest reports them as errors, and the run's exit status is 1).

tests/conftest.py runs here on a copy of itself in a folder of its own, beside no
../shared/data and with Fashion-MNIST looked for in an empty folder, so that both data sets are
missing whatever this machine holds; a pytest in a subprocess then collects three tests: one
that needs CIFAR-10, one that needs Fashion-MNIST and one that needs nothing.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]

NEEDS_DATA = """
import pytest


@pytest.mark.cifar10
def test_reads_cifar10():
    pass


@pytest.mark.fashion_mnist
def test_reads_fashion_mnist():
    pass


def test_reads_nothing():
    pass
"""

# loaded before tests/conftest.py (a folder's conftest before its subfolders'): it points
# vitviz.models.data's Fashion-MNIST folder where the test says, as a machine without the package has it
FASHION_FOLDER = """
import os
from pathlib import Path

from vitviz.models import data

data.DEBIAN_FOLDERS["fashion-mnist"] = Path(os.environ["FAKE_FASHION_MNIST"])
"""


@pytest.fixture
def clone(tmp_path: Path) -> Path:
    """A folder laid out like the repository's, with the real conftest and pytest settings."""
    root = tmp_path / "clone"
    (root / "tests").mkdir(parents=True)
    shutil.copy(REPO / "tests" / "conftest.py", root / "tests" / "conftest.py")
    shutil.copy(REPO / "pyproject.toml", root / "pyproject.toml")
    (root / "tests" / "test_needs_data.py").write_text(NEEDS_DATA, encoding="utf-8")
    (root / "conftest.py").write_text(FASHION_FOLDER, encoding="utf-8")
    return root


def pytest_in(root: Path, *, ci: str | None, cifar10: Path | None, fashion: Path) -> tuple[int, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("CI", "VITVIZ_DATA", "PYTEST_ADDOPTS")}
    env["PYTHONPATH"] = os.pathsep.join([str(REPO), env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    env["FAKE_FASHION_MNIST"] = str(fashion)
    if ci is not None:
        env["CI"] = ci
    if cifar10 is not None:
        env["VITVIZ_DATA"] = str(cifar10)
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-rfE", "-p", "no:randomly", "tests"],
        cwd=root,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    return done.returncode, done.stdout + done.stderr


def test_missing_data_is_deselected_with_a_sentence(clone, tmp_path):
    code, out = pytest_in(clone, ci=None, cifar10=None, fashion=tmp_path / "no-fashion-mnist")
    assert code == 0, out
    assert re.search(r"\b1 passed, 2 deselected\b", out), out
    assert "1 tests deselected: they need the CIFAR-10 (JPEG copy)" in out
    assert "1 tests deselected: they need Fashion-MNIST from Debian" in out


def test_in_ci_a_test_whose_data_is_missing_fails_and_one_whose_data_is_there_runs(clone, tmp_path):
    cifar10 = tmp_path / "cifar10"  # there: the folders the conftest looks for
    for name in ("cat", "truck"):
        (cifar10 / "test" / name).mkdir(parents=True)
    code, out = pytest_in(clone, ci="true", cifar10=cifar10, fashion=tmp_path / "no-fashion-mnist")
    assert code == 1, out
    assert re.search(r"\b2 passed, 1 error\b", out) and "deselected" not in out, out  # fails at setup
    failed = dict(re.findall(r"^ERROR \S+::(\w+) - (.*)$", out, re.MULTILINE))
    assert list(failed) == ["test_reads_fashion_mnist"], out
    assert "CI=true and the data of this fashion_mnist test is missing" in failed["test_reads_fashion_mnist"]
    assert "sudo apt-get install dataset-fashion-mnist" in out  # the sentence says how to get it


def test_ci_is_read_as_ci_services_set_it(monkeypatch):
    from tests import conftest

    for value, meant in [("true", True), ("True", True), ("1", True), ("yes", True), ("false", False), ("", False)]:
        monkeypatch.setenv("CI", value)
        assert conftest.on_ci() is meant, value
    monkeypatch.delenv("CI")
    assert conftest.on_ci() is False
