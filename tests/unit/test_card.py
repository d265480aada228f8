"""The model card: one typed object read and written in one place (vitviz.card)."""

from __future__ import annotations

import json

from vitviz import zoo
from vitviz.card import ModelCard


def test_a_card_reads_back_what_it_wrote_and_keeps_fields_it_does_not_name(tmp_path):
    written = {
        "name": "two-stages",
        "config": {"patch_size": 4},
        "epochs": 5,
        "history": [{"epoch": e, "train_loss": 1.0 / e} for e in range(1, 6)],
        "stages": [
            {"name": "a", "epochs": 3, "recipe": {"lr": 1e-3}},
            {"name": "b", "epochs": 2, "recipe": {"lr": 1e-4}},
        ],
        "evaluated": {"per_class_accuracy": {"cat": 0.5}},
        "precision": "float32",  # not a field of its own: kept in extra
    }
    (tmp_path / "card.json").write_text(json.dumps(written))
    card = ModelCard.read(tmp_path / "card.json")
    assert card.epochs == 5 and card.extra == {"precision": "float32"} and card.teacher is None
    assert card.stage_starts() == [1, 4] and [run["name"] for run in card.runs] == ["a", "b"]
    assert card.per_class_accuracy == {"cat": 0.5}
    card.write(tmp_path / "again.json")
    assert json.loads((tmp_path / "again.json").read_text()) == {**written, "wall_time_s": 0.0}


def test_a_card_of_one_run_is_its_own_stage():
    card = ModelCard(name="one", epochs=7, recipe={"lr": 0.1})
    assert card.runs == [{"name": "one", "epochs": 7, "recipe": {"lr": 0.1}}] and card.stage_starts() == []
    assert ModelCard().runs == []


def test_every_shipped_card_reads_as_a_model_card():
    for path in sorted(zoo.MODELS_DIR.glob("*.json")):
        card = ModelCard.read(path)
        assert card.name == path.stem and card.config and card.history, path.name
        assert 0.0 < card.test_accuracy <= 1.0 and card.evaluated["weights_sha256"], path.name
        assert set(card.extra) <= {"precision", "processes", "torch"}, f"{path.name}: {sorted(card.extra)}"
