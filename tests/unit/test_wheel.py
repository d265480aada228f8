"""vitviz as a package anyone installs: the wheel carries the shipped models, the sample photos and
the app, and works outside the clone (issue 41)."""

from __future__ import annotations

import json
import subprocess
import sys
import sysconfig
import venv
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("wheel")
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "--no-build-isolation", "-w", str(out), str(ROOT)],
        check=True,
        capture_output=True,
        cwd=out,
    )
    (found,) = out.glob("vitviz-*.whl")
    return found


def test_the_wheel_carries_the_models_the_samples_and_the_app(wheel: Path) -> None:
    names = set(zipfile.ZipFile(wheel).namelist())
    for inside in (
        "vitviz/assets/models/cifar10-vit.safetensors",
        "vitviz/assets/models/cifar10-vit.json",
        "vitviz/assets/models/cifar10-vit.predictions.safetensors",
        "vitviz/assets/samples/cat-chelsea.jpg",
        "vitviz/assets/first_view.json",  # the overview drawn before torch has loaded
        "vitviz/assets/margins.json",  # the figures' margins, measured in Chromium
        "vitviz/locales/ko.json",
        "vitviz/app/static/presenter.js",
    ):
        assert inside in names, inside
    data = [n for n in names if ".data/data/share/vitviz/" in n]
    assert any(n.endswith("share/vitviz/app.py") for n in data)
    assert any(n.endswith("share/vitviz/app_pages/5_attention.py") for n in data)
    assert not any(
        "/tests/" in n or n.startswith(("benchmarks/", "tools/")) for n in names
    )  # the library, not the clone
    assert "vitviz/ship.py" not in names and "vitviz/lease.py" not in names  # the team's tools


@pytest.mark.slow
def test_the_wheel_installed_outside_the_clone_explains_a_packaged_sample(wheel: Path, tmp_path: Path) -> None:
    """A fresh environment (its dependencies borrowed from this one: torch is gigabytes) with only
    the wheel's vitviz, run from a folder that is not the clone."""
    env_dir = tmp_path / "env"
    venv.create(env_dir, with_pip=True)
    python = env_dir / "bin" / "python"
    site = Path(
        subprocess.run(
            [python, "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"], capture_output=True, text=True
        ).stdout.strip()
    )
    (site / "borrowed.pth").write_text(sysconfig.get_path("purelib") + "\n")  # this environment's packages
    subprocess.run([python, "-m", "pip", "install", "-q", "--no-deps", str(wheel)], check=True, capture_output=True)
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    code = (
        "import json, vitviz, vitviz.models.zoo as zoo; loaded = zoo.load('cifar10-vit'); "
        "print(json.dumps({'file': vitviz.__file__, 'accuracy': loaded.spec.card.test_accuracy, "
        "'samples': sorted(p.name for p in (zoo.ASSETS / 'samples').glob('*.jpg'))}))"
    )
    found = json.loads(
        subprocess.run([python, "-c", code], cwd=outside, capture_output=True, text=True, check=True).stdout
    )
    assert str(site) in found["file"] and str(ROOT) not in found["file"]
    assert found["accuracy"] > 0.8 and "cat-chelsea.jpg" in found["samples"]
    where = subprocess.run(
        [python, "-c", "from vitviz.cli import app_folder; print(app_folder())"],
        cwd=outside,
        capture_output=True,
        text=True,
    )
    assert Path(where.stdout.strip()) == env_dir / "share" / "vitviz"  # what `vitviz app` runs
    assert (env_dir / "share" / "vitviz" / ".streamlit" / "config.toml").is_file()
    sample = site / "vitviz" / "assets" / "samples" / "cat-chelsea.jpg"
    explained = subprocess.run(
        [env_dir / "bin" / "vitviz", "explain", str(sample)], cwd=outside, capture_output=True, text=True
    )
    assert explained.returncode == 0, explained.stderr
    assert "cat" in explained.stdout and "-> (1,10)" in explained.stdout
