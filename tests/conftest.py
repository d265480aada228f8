"""Shared fixtures: tiny configs, an isolated cache folder, and the offline hub."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
import torch

os.environ.setdefault("HF_HUB_OFFLINE", "1")  # tests never touch the network
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

from vitviz.config import ViTConfig

REPO = Path(__file__).resolve().parents[1]
SHARED_DATA = REPO.parent / "shared" / "data" / "cifar10-jpeg"


@pytest.fixture(autouse=True)
def _isolated_cache(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> None:
    """Every test gets its own VITVIZ_CACHE unless it sets one itself."""
    monkeypatch.setenv("VITVIZ_CACHE", str(tmp_path_factory.mktemp("cache")))


@pytest.fixture
def tiny_config() -> ViTConfig:
    return ViTConfig(image_size=32, patch_size=4, num_classes=10, embed_dim=32, depth=2, num_heads=4)


@pytest.fixture
def seeded() -> None:
    torch.manual_seed(0)
