"""The shipped offline default, measured on the CIFAR-10 (JPEG copy) test split in ../shared.

These tests need the real weights in assets/models/ and the dataset beside the repo; both are
there on the development machines and in CI, so a missing one is a failure, not a skip.
"""

from __future__ import annotations

import json

import pytest

from tests.conftest import SHARED_DATA
from vitviz import zoo
from vitviz.data import load_split, spread_subset
from vitviz.evaluate import evaluate, main, predictions_path, read_predictions, weights_hash
from vitviz.ship import FLOOR, MAX_BYTES

CARD = zoo.MODELS_DIR / f"{zoo.SHIPPED}.json"
WEIGHTS = zoo.MODELS_DIR / f"{zoo.SHIPPED}.safetensors"


@pytest.fixture(scope="module")
def card() -> dict:
    assert WEIGHTS.exists() and CARD.exists(), f"the shipped model is missing: {WEIGHTS}"
    assert SHARED_DATA.is_dir(), f"CIFAR-10 (JPEG copy) is missing: {SHARED_DATA}"
    return json.loads(CARD.read_text())


def test_the_shipped_model_is_the_offline_default(card):
    assert zoo.default_name() == zoo.SHIPPED
    assert WEIGHTS.stat().st_size <= MAX_BYTES
    model, spec = zoo.load(zoo.SHIPPED)
    assert spec.trained and spec.source == "shipped"
    assert list(model.config.class_names) == load_split(SHARED_DATA, "test").classes
    assert card["evaluated"]["weights_sha256"] == weights_hash(model)  # the card describes these weights


def test_at_least_75_percent_on_500_test_images(card):
    model, _ = zoo.load(zoo.SHIPPED)
    subset = spread_subset(load_split(SHARED_DATA, "test"), 500)
    result = evaluate(model, subset, use_cache=False)
    assert result.n == 500
    assert result.accuracy >= 0.75, f"{result.accuracy:.3f} on 500 CIFAR-10 (JPEG copy) test images"


def test_the_card_accuracy_is_what_evaluate_prints_on_the_whole_test_split(card, capsys):
    assert main(["--model", zoo.SHIPPED, "--data", str(SHARED_DATA), "--json"]) == 0
    printed = json.loads(capsys.readouterr().out.strip().splitlines()[-1])  # --json prints it last
    assert printed["n"] == card["tested_on"]["images"] == 10_000
    assert printed["accuracy"] == card["test_accuracy"]
    assert printed["misclassified"] == card["evaluated"]["misclassified"]
    assert card["test_accuracy"] >= FLOOR  # 80%, the floor for the offline default


def test_the_shipped_predictions_are_the_cards(card):
    """The lab's first look at the shipped model reads these instead of running 10,000 images."""
    path = predictions_path(WEIGHTS)
    assert path.exists() and path.stat().st_size < 1_000_000
    model, _ = zoo.load(zoo.SHIPPED)
    stored = read_predictions(path, model, load_split(SHARED_DATA, "test"))
    assert stored is not None, "the predictions were made by other weights or on other images"
    assert stored.accuracy == card["test_accuracy"]
    assert stored.misclassified == card["evaluated"]["misclassified"]
