"""Shared fixtures: tiny configs, an isolated cache folder, the offline hub, and where the
CIFAR-10 (JPEG copy) is.

Tests marked ``cifar10`` need real CIFAR-10 images (the shipped models' cards are measured on
the JPEG copy). They find it through VITVIZ_DATA or at ../shared/data/cifar10-jpeg; where
neither exists (a clone on its own) they are deselected, with one line saying what is missing
and how to get it, rather than failing as if a feature were broken. In continuous integration
(``CI=true``, as GitHub Actions and most CI services set it) the data is part of the setup: a
test whose data is missing fails there, with the same line, instead of vanishing from the
report. Tests marked ``fashion_mnist`` need Debian's Fashion-MNIST, found where vitviz.models.data
looks for it. Tests marked ``slow`` run the whole test split or the benchmark;
``-m "not slow"`` leaves them out.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
import torch

os.environ.setdefault("HF_HUB_OFFLINE", "1")  # tests never touch the network
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
# The app measures bf16 against float32 per model and keeps the faster (vitviz.models.precision): the
# tests that compare a page's numbers with float32 computations fix float32; test_precision and
# test_app_core's precision test cover the measured choice.
os.environ.setdefault("VITVIZ_PRECISION", "float32")
# The server computes pages 7's and 8's heaviest work ahead in a thread of its own
# (vitviz.app.ahead): tests that count the models' calls or time a page would see that thread's
# work. test_app_core's read-ahead test and the bench turn it on.
os.environ.setdefault("VITVIZ_READ_AHEAD", "0")

from vitviz.models.config import ViTConfig
from vitviz.models.data import DEBIAN_FOLDERS

REPO = Path(__file__).resolve().parents[1]


def _cifar10_folder() -> Path | None:
    """VITVIZ_DATA when it holds CIFAR-10's test split in class folders, else the development
    machines' ../shared/data/cifar10-jpeg; None when neither is there."""
    candidates = [Path(os.environ["VITVIZ_DATA"]).expanduser()] if os.environ.get("VITVIZ_DATA") else []
    candidates.append(REPO.parent / "shared" / "data" / "cifar10-jpeg")
    for folder in candidates:
        if (folder / "test" / "cat").is_dir() and (folder / "test" / "truck").is_dir():
            return folder.resolve()
    return None


CIFAR10 = _cifar10_folder()
SHARED_DATA = CIFAR10 or REPO.parent / "shared" / "data" / "cifar10-jpeg"  # where the cifar10 tests read it


FASHION_MNIST = DEBIAN_FOLDERS["fashion-mnist"]  # Debian's dataset-fashion-mnist, where vitviz.models.data reads it

# marker -> (whether its data is here, what to say when it is not)
MISSING_DATA = {
    "cifar10": (
        CIFAR10 is not None,
        "they need the CIFAR-10 (JPEG copy), found neither through VITVIZ_DATA nor at ../shared/data/cifar10-jpeg. "
        "Point VITVIZ_DATA at a folder with train/ and test/ class folders of CIFAR-10 images to run them.",
    ),
    "fashion_mnist": (
        (FASHION_MNIST / "t10k-images-idx3-ubyte.gz").is_file(),
        "they need Fashion-MNIST from Debian: sudo apt-get install dataset-fashion-mnist.",
    ),
}


def on_ci() -> bool:
    """Whether the tests run in continuous integration (``CI=true``, or ``1`` / ``yes``)."""
    return os.environ.get("CI", "").strip().lower() in ("true", "1", "yes")


MISSING = pytest.StashKey[str]()  # on a test whose data is missing in CI: what is missing


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    reporter = config.pluginmanager.get_plugin("terminalreporter")
    for marker, (present, why) in MISSING_DATA.items():
        needing = [item for item in items if item.get_closest_marker(marker)]
        if present or not needing:
            continue
        if on_ci():  # kept, to fail at setup (pytest_runtest_setup) with what is missing
            for item in needing:
                item.stash[MISSING] = f"CI=true and the data of this {marker} test is missing: {why}"
            continue
        config.hook.pytest_deselected(items=needing)
        items[:] = [item for item in items if not item.get_closest_marker(marker)]
        if reporter is not None:
            reporter.write_line(f"{len(needing)} tests deselected: {why}")


@pytest.hookimpl(tryfirst=True)  # before the fixtures, which may read the missing data
def pytest_runtest_setup(item: pytest.Item) -> None:
    if MISSING in item.stash:
        pytest.fail(item.stash[MISSING], pytrace=False)


@pytest.fixture(autouse=True)
def _isolated_cache(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> None:
    """Every test gets its own VITVIZ_CACHE unless it sets one itself."""
    monkeypatch.setenv("VITVIZ_CACHE", str(tmp_path_factory.mktemp("cache")))


@pytest.fixture(autouse=True)
def _served_models_folder(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> None:
    """The app loads files only from the model folders its server names (vitviz.server.access): the
    tests' own checkpoints live under pytest's temporary folder, which plays that part. Tests of
    the policy set VITVIZ_MODELS themselves."""
    monkeypatch.setenv("VITVIZ_MODELS", str(tmp_path_factory.getbasetemp()))


@pytest.fixture(autouse=True)
def _server_lookups_afresh() -> None:
    """The app works out where its test split is once per server setting (vitviz.app.testset.split_for);
    tests move the data (monkeypatched finders, VITVIZ_CACHE) within one process, so each starts afresh."""
    import sys

    testset = sys.modules.get("vitviz.app.testset")
    if testset is not None:
        testset.split_for.cache_clear()


@pytest.fixture
def tiny_config() -> ViTConfig:
    return ViTConfig(image_size=32, patch_size=4, num_classes=10, embed_dim=32, depth=2, num_heads=4)


@pytest.fixture
def seeded() -> None:
    torch.manual_seed(0)
