"""The model card: one typed object read and written in one place (vitviz.models.card)."""

from __future__ import annotations

import json

from vitviz.models import zoo
from vitviz.models.card import ModelCard


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


def test_each_teacher_is_named_with_the_stages_it_taught():
    cnn_a = {"name": "cnn", "weights_sha256": "aaa", "test_accuracy": 0.90}
    cnn_b = {"name": "cnn", "weights_sha256": "bbb", "test_accuracy": 0.91}
    card = ModelCard(
        epochs=10,
        stages=[
            {"name": "s1", "epochs": 4, "recipe": {}},  # no teacher
            {"name": "kd", "epochs": 2, "recipe": {"teacher": "cnn"}, "teacher": cnn_a},
            {"name": "kd2", "epochs": 2, "recipe": {"teacher": "cnn"}},  # written before stages kept teachers
            {"name": "kd3", "epochs": 2, "recipe": {"teacher": "cnn"}},  # the last: the card's own teacher
        ],
        teacher=cnn_b,
    )
    assert card.teachers() == [(cnn_a, [2]), ({"name": "cnn"}, [3]), (cnn_b, [4])]
    card.stages[2]["teacher"] = cnn_b  # the same weights taught stages 3 and 4
    assert card.teachers() == [(cnn_a, [2]), (cnn_b, [3, 4])]
    one = ModelCard(name="one", epochs=3, recipe={"teacher": "cnn"}, teacher=cnn_a)
    assert one.runs[0]["teacher"] == cnn_a and one.teachers() == [(cnn_a, [1])]
    assert ModelCard(name="alone", epochs=3, recipe={}).teachers() == []


def test_each_machine_is_named_with_the_stages_it_trained():
    cpu, gpu = "CPU (AMD EPYC, 2 threads)", "NVIDIA H200"
    card = ModelCard(
        epochs=10,
        stages=[
            {"name": "s1", "epochs": 4, "recipe": {}},  # written before stages kept their machine
            {"name": "s2", "epochs": 2, "recipe": {}, "hardware": cpu},
            {"name": "s3", "epochs": 2, "recipe": {}, "hardware": gpu},
            {"name": "s4", "epochs": 2, "recipe": {}},  # the last: the card's own machine
        ],
        hardware=cpu,
    )
    assert card.hardware_by_stage() == [(cpu, [2, 4]), (gpu, [3])]
    assert ModelCard(name="one", epochs=3, recipe={}, hardware=gpu).hardware_by_stage() == [(gpu, [1])]
    assert ModelCard(name="one", epochs=3, recipe={}).hardware_by_stage() == []
    # the rows the model card shows: per machine where they differ, the whole model where one ran all
    assert card.hardware_rows() == [([2, 4], cpu), ([3], gpu)]
    assert ModelCard(name="one", epochs=3, recipe={}, hardware=gpu).hardware_rows() == [(None, gpu)]
    assert ModelCard(name="one", epochs=3, recipe={}).hardware_rows() == [(None, "-")]
    older = ModelCard(  # the first stage written before stages kept their machine: only stage 2 is known
        epochs=6,
        stages=[{"name": "s1", "epochs": 4, "recipe": {}}, {"name": "s2", "epochs": 2, "recipe": {}}],
        hardware=cpu,
    )
    assert older.hardware_rows() == [([2], cpu)]


def test_every_shipped_card_reads_as_a_model_card():
    cards = [  # a model's card is NAME.json beside NAME.safetensors; NAME.learn.json beside
        # NAME.learn.safetensors is a run's snapshots (models.snapshots), not a card
        path
        for path in sorted(zoo.MODELS_DIR.glob("*.json"))
        if path.with_suffix(".safetensors").exists() and "." not in path.stem
    ]
    assert len(cards) >= 3  # beside them: the analyses that ship with the weights (.faithfulness.json, ...)
    for path in cards:
        card = ModelCard.read(path)
        assert card.name == path.stem and card.config and card.history, path.name
        assert 0.0 < card.test_accuracy <= 1.0 and card.evaluated["weights_sha256"], path.name
        assert set(card.extra) <= {"precision", "processes", "torch"}, f"{path.name}: {sorted(card.extra)}"
