import json
import shutil
from pathlib import Path

import pytest
import torch
from safetensors.torch import load_file

from tests.helpers import CLASSES, make_image_folder, tiny_recipe
from tools.ship import ShipError, main, portable, ship
from vitviz.analyses.evaluate import evaluate, predictions_path, read_predictions, weights_hash
from vitviz.models import zoo
from vitviz.models.card import ModelCard
from vitviz.models.cnn import ConvNet
from vitviz.models.config import CNNConfig
from vitviz.models.data import load_split
from vitviz.training.train import train


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    data = make_image_folder(tmp_path_factory.mktemp("data"), per_class=40)
    out = tmp_path_factory.mktemp("runs") / "tiny"
    recipe = tiny_recipe(data, epochs=2)
    train(recipe, out=out)
    return out, data


def test_the_card_holds_what_evaluate_measures(run, tmp_path):
    folder, data = run
    assert ship(folder, str(data), out_dir=tmp_path, name="tiny", floor=0.0).shipped
    written = json.loads((tmp_path / "tiny.json").read_text())
    model, spec = zoo.load(str(tmp_path / "tiny.safetensors"))
    measured = evaluate(model, load_split(data, "test"), use_cache=False)
    assert written["test_accuracy"] == pytest.approx(measured.accuracy)
    assert written["tested_on"]["images"] == measured.n == 120
    assert written["config"]["class_names"] == list(CLASSES)
    for field in ("recipe", "history", "epochs", "wall_time_s", "hardware", "trained_on", "tested_on"):
        assert field in written, field
    stored = read_predictions(predictions_path(tmp_path / "tiny.safetensors"), model, load_split(data, "test"))
    assert (
        stored is not None and stored.accuracy == written["test_accuracy"]
    )  # the lab's first look, beside the weights


def test_predictions_only_writes_the_shipped_models_predictions_again(run, tmp_path, capsys):
    folder, data = run
    ship(folder, str(data), out_dir=tmp_path, name="tiny", floor=0.0)
    path = predictions_path(tmp_path / "tiny.safetensors")
    path.unlink()
    assert main(["--predictions-only", "--name", "cifar10-vit", "--out", str(tmp_path), "--data", str(data)]) == 2
    assert "ship a run first" in capsys.readouterr().err
    (tmp_path / "tiny.safetensors").rename(tmp_path / "cifar10-vit.safetensors")
    (tmp_path / "tiny.json").rename(tmp_path / "cifar10-vit.json")
    assert main(["--predictions-only", "--name", "cifar10-vit", "--out", str(tmp_path), "--data", str(data)]) == 0
    assert "cifar10-vit.predictions.safetensors" in capsys.readouterr().out
    model, _ = zoo.load(str(tmp_path / "cifar10-vit.safetensors"))
    stored = read_predictions(predictions_path(tmp_path / "cifar10-vit.safetensors"), model, load_split(data, "test"))
    assert (
        stored is not None
        and stored.accuracy == json.loads((tmp_path / "cifar10-vit.json").read_text())["test_accuracy"]
    )


def test_weights_that_do_not_beat_the_shipped_ones_are_not_written(run, tmp_path):
    folder, data = run
    ship(folder, str(data), out_dir=tmp_path, name="tiny", floor=0.0)
    card = json.loads((tmp_path / "tiny.json").read_text())
    card["test_accuracy"] = (
        1.0  # pretend the shipped model is perfect: nothing beats it (a card holds a fraction, 0 to 1)
    )
    (tmp_path / "tiny.json").write_text(json.dumps(card))
    again = ship(folder, str(data), out_dir=tmp_path, name="tiny", floor=0.0)
    assert not again.shipped and "does not beat" in again.reason
    assert json.loads((tmp_path / "tiny.json").read_text())["test_accuracy"] == 1.0


def test_weights_below_the_floor_are_not_written(run, tmp_path, capsys):
    folder, data = run
    measured = ship(folder, str(data), out_dir=tmp_path / "probe", name="tiny", floor=0.0).card.test_accuracy
    kept = ship(folder, str(data), out_dir=tmp_path, name="tiny", floor=measured + 0.01)
    assert not kept.shipped and "below the" in kept.reason
    assert not (tmp_path / "tiny.safetensors").exists() and not (tmp_path / "tiny.json").exists()
    assert main([str(folder), "--data", str(data), "--out", str(tmp_path), "--floor", "1.01"]) == 0
    assert "kept the current model" in capsys.readouterr().out and not (tmp_path / "cifar10-vit.json").exists()


def test_an_unfinished_run_ships_from_its_checkpoint(run, tmp_path):
    folder, data = run
    shipping = ship(folder, str(data), out_dir=tmp_path, name="tiny", checkpoint=True, floor=0.0)
    assert shipping.shipped and shipping.card.interim.startswith("checkpoint after epoch 2")
    written = json.loads((tmp_path / "tiny.json").read_text())
    for field in ("recipe", "history", "epochs", "wall_time_s", "hardware", "trained_on", "tested_on", "test_accuracy"):
        assert field in written, field
    train_split = load_split(data, "train")
    assert written["trained_on"] == {
        "dataset": Path(data).name,
        "source": portable(train_split.source),  # no machine-local path in a shipped card
        "images": len(train_split),
        "fingerprint": train_split.fingerprint,
    }


def test_a_finished_schedule_that_does_not_beat_its_shipped_checkpoint_is_written_on_its_card(run, tmp_path):
    folder, data = run
    assert ship(folder, str(data), out_dir=tmp_path, name="tiny", checkpoint=True, floor=0.0).shipped
    card_path = tmp_path / "tiny.json"
    shipped = json.loads(card_path.read_text())
    shipped["test_accuracy"] = 1.0  # the checkpoint beats whatever the schedule's end measures
    card_path.write_text(json.dumps(shipped))
    weights = (tmp_path / "tiny.safetensors").read_bytes()

    again = ship(folder, str(data), out_dir=tmp_path, name="tiny", checkpoint=True, floor=0.0)
    assert not again.shipped and "schedule_end" not in json.loads(card_path.read_text())  # still a checkpoint

    other = tmp_path / "other" / "tiny-other"  # another run's end says nothing about this checkpoint
    shutil.copytree(folder, other.parent / "tiny")
    (other.parent / "tiny").rename(other)
    for suffix in (".safetensors", ".json"):
        (other / f"tiny{suffix}").rename(other / f"tiny-other{suffix}")
    card = json.loads((other / "tiny-other.json").read_text())
    card["name"], card["recipe"]["name"] = "tiny-other", "tiny-other"
    (other / "tiny-other.json").write_text(json.dumps(card))
    assert not ship(other, str(data), out_dir=tmp_path, name="tiny", floor=0.0).shipped
    assert "schedule_end" not in json.loads(card_path.read_text())

    ended = ship(folder, str(data), out_dir=tmp_path, name="tiny", floor=0.0)
    assert not ended.shipped and "schedule ended" in ended.reason
    written = ModelCard.read(card_path)
    assert written.schedule_end == {"epoch": 2, "test_accuracy": ended.card.test_accuracy}
    assert written.interim and written.test_accuracy == 1.0  # still the checkpoint's card
    assert (tmp_path / "tiny.safetensors").read_bytes() == weights  # and its weights


def test_missing_run_says_so(tmp_path, capsys):
    with pytest.raises(ShipError, match="no finished weights"):
        ship(tmp_path / "nothing", None, out_dir=tmp_path)
    assert main([str(tmp_path / "nothing"), "--out", str(tmp_path)]) == 2
    assert "pass --checkpoint" in capsys.readouterr().err


def _strings(value):
    if isinstance(value, dict):
        for item in value.values():
            yield from _strings(item)
    elif isinstance(value, list):
        for item in value:
            yield from _strings(item)
    elif isinstance(value, str):
        yield value


def test_a_shipped_card_holds_no_machine_local_path(run, tmp_path):
    folder, data = run  # both in the temporary folder: absolute paths in the run's card
    assert any(s.startswith("/") for s in _strings(json.loads((folder / "tiny.json").read_text())))
    ship(folder, str(data), out_dir=tmp_path, name="tiny", floor=0.0)
    written = json.loads((tmp_path / "tiny.json").read_text())
    assert [s for s in _strings(written) if s.startswith(("/", "~")) or str(Path.home()) in s] == []
    assert written["recipe"]["data"] == Path(data).name  # outside the cache and the repository: its name alone


def test_a_run_trained_on_a_copy_of_the_data_names_the_data_here(run, tmp_path):
    folder, data = run  # as if trained on a lent GPU that read a copy of the JPEGs from its /tmp
    here = tmp_path / "here"
    shutil.copytree(data, here)
    ship(folder, str(here), out_dir=tmp_path / "same", name="tiny", floor=0.0)
    written = json.loads((tmp_path / "same" / "tiny.json").read_text())
    assert written["recipe"]["data"] == "here" and written["trained_on"]["images"] == 120
    assert written["trained_on"]["fingerprint"] == load_split(here, "train").fingerprint

    other = make_image_folder(tmp_path / "other", per_class=40, seed=1)  # other bytes: not the same data
    ship(folder, str(other), out_dir=tmp_path / "differs", name="tiny", floor=0.0)
    written = json.loads((tmp_path / "differs" / "tiny.json").read_text())
    assert written["recipe"]["data"] == Path(data).name


def test_the_cards_in_assets_hold_no_machine_local_path():
    for card in sorted(zoo.MODELS_DIR.glob("*.json")):
        text = json.loads(card.read_text())
        assert [s for s in _strings(text) if s.startswith(("/", "~")) or "/root/" in s or "/home/" in s] == [], card


def test_a_cnn_ships_averaged_with_its_mirror_image_and_says_so(run, tmp_path):
    _, data = run
    torch.manual_seed(0)
    config = CNNConfig(image_size=16, num_classes=3, stem_width=4, widths=(8, 8), class_names=tuple(CLASSES))
    source = tmp_path / "made" / "tinycnn.safetensors"
    zoo.save(ConvNet(config).eval(), source, card=ModelCard(name="tinycnn", config=config.to_dict(), epochs=1))
    one_view = ship(source, str(data), out_dir=tmp_path / "one", name="tinycnn", floor=0.0)
    shipped = ship(source, str(data), out_dir=tmp_path, name="tinycnn", floor=0.0, test_flip=True)
    assert shipped.shipped and shipped.card.config["test_flip"] and not one_view.card.config["test_flip"]
    written = json.loads((tmp_path / "tinycnn.json").read_text())
    assert written["config"]["test_flip"] and written["test_accuracy"] == shipped.card.test_accuracy
    model, _ = zoo.load(str(tmp_path / "tinycnn.safetensors"))
    assert model.config.test_flip  # the app's model averages, as the card's accuracy did
    test = load_split(data, "test")
    measured = evaluate(model, test, use_cache=False)
    assert measured.accuracy == shipped.card.test_accuracy
    # and on one view, the protocol every card compares by (issue 55): what the same model measures
    model.config = model.config.replace(test_flip=False)
    single = evaluate(model, test, use_cache=False)
    model.config = model.config.replace(test_flip=True)
    assert written["evaluated"]["one_view_accuracy"] == single.accuracy == shipped.card.one_view_accuracy
    assert written["evaluated"]["one_view_misclassified"] == single.misclassified
    assert one_view.card.one_view_accuracy == one_view.card.test_accuracy  # one view: no second number
    assert "one_view_accuracy" not in one_view.card.evaluated
    stored = read_predictions(predictions_path(tmp_path / "tinycnn.safetensors"), model, test)
    assert stored is not None and torch.equal(stored.predictions, measured.predictions)


def test_a_vit_ships_averaged_with_its_mirror_image_and_its_card_keeps_one_view(run, tmp_path, capsys):
    folder, data = run
    one_view = ship(folder, str(data), out_dir=tmp_path / "one", name="tiny", floor=0.0)
    assert main([str(folder), "--data", str(data), "--out", str(tmp_path), "--test-flip", "--floor", "0"]) == 0
    assert "shipped" in capsys.readouterr().out
    written = ModelCard.read(tmp_path / f"{zoo.SHIPPED}.json")
    assert written.config["test_flip"] and written.views == "image and mirror"
    model, _ = zoo.load(str(tmp_path / f"{zoo.SHIPPED}.safetensors"))
    assert model.config.test_flip  # the app's model answers as the card's accuracy was measured
    test = load_split(data, "test")
    assert evaluate(model, test, use_cache=False).accuracy == written.test_accuracy
    assert written.one_view_accuracy == one_view.card.test_accuracy  # the same weights on one view
    assert written.evaluated["one_view_misclassified"] == one_view.card.evaluated["misclassified"]
    assert written.evaluated["weights_sha256"] == one_view.card.evaluated["weights_sha256"]


def test_weights_too_big_in_float32_ship_in_float16_measured_as_stored(run, tmp_path, monkeypatch):
    _, data = run
    torch.manual_seed(0)
    config = CNNConfig(image_size=16, num_classes=3, stem_width=4, widths=(8, 8), class_names=tuple(CLASSES))
    trained = ConvNet(config).eval()
    source = tmp_path / "made" / "tinycnn.safetensors"
    zoo.save(trained, source, card=ModelCard(name="tinycnn", config=config.to_dict(), epochs=1))
    full = sum(t.numel() * t.element_size() for t in trained.state_dict().values())
    monkeypatch.setattr("tools.ship.MAX_BYTES", full - 1)  # float32 is one byte too many
    shipped = ship(source, str(data), out_dir=tmp_path, name="tinycnn", floor=0.0)
    assert shipped.shipped and shipped.card.weights_dtype == "float16"
    stored = load_file(str(tmp_path / "tinycnn.safetensors"))
    assert {t.dtype for t in stored.values() if t.is_floating_point()} == {torch.float16}
    assert stored["stem.weight"].float().ne(trained.state_dict()["stem.weight"]).any()  # rounded, not the same
    model, spec = zoo.load(str(tmp_path / "tinycnn.safetensors"))
    assert next(model.parameters()).dtype == torch.float32 and spec.card.weights_dtype == "float16"
    assert weights_hash(model) == shipped.card.evaluated["weights_sha256"]  # the card measured these weights
    test = load_split(data, "test")
    assert evaluate(model, test, use_cache=False).accuracy == shipped.card.test_accuracy
    assert read_predictions(predictions_path(tmp_path / "tinycnn.safetensors"), model, test) is not None
    monkeypatch.setattr("tools.ship.MAX_BYTES", full // 3)  # too big even in float16: nothing is evaluated
    with pytest.raises(ShipError, match="even in float16"):
        ship(source, str(data), out_dir=tmp_path / "big", name="tinycnn", floor=0.0)
    assert not (tmp_path / "big").exists()
    assert ModelCard(name="x").weights_dtype == "float32"


def test_a_one_view_run_is_weighed_against_a_shipped_mirror_average_on_one_view(run, tmp_path):
    folder, data = run
    assert ship(folder, str(data), out_dir=tmp_path, name="tiny", floor=0.0).card.test_accuracy == 1.0
    # as if the shipped model were other weights averaging their mirror: 100% that way, 90% on one view
    shipped = ModelCard.read(tmp_path / "tiny.json")
    shipped.config["test_flip"] = True
    shipped.evaluated["weights_sha256"] = "0" * 64
    shipped.evaluated["one_view_accuracy"] = 0.9
    shipped.write(tmp_path / "tiny.json")
    again = ship(folder, str(data), out_dir=tmp_path, name="tiny", floor=0.0)  # 100% on one view beats 90%
    assert again.shipped and again.card.views == "image"
    assert ModelCard.read(tmp_path / "tiny.json").test_accuracy == 1.0 and again.reason is None
    again = ship(folder, str(data), out_dir=tmp_path, name="tiny", floor=0.0)  # now both are one view
    assert not again.shipped and again.reason == "1.0000 does not beat the shipped 1.0000"
    shipped.evaluated["one_view_accuracy"] = 1.0
    shipped.write(tmp_path / "tiny.json")
    again = ship(folder, str(data), out_dir=tmp_path, name="tiny", floor=0.0)
    assert not again.shipped and again.reason == "1.0000 does not beat the shipped 1.0000 (one view each)"


def test_the_same_weights_turn_their_mirror_on_only_where_it_measured_better(run, tmp_path):
    folder, data = run
    one_view = ship(folder, str(data), out_dir=tmp_path, name="tiny", floor=0.0).card
    mirrored = ship(folder, str(data), out_dir=tmp_path / "other", name="tiny", floor=0.0, test_flip=True).card
    assert mirrored.one_view_accuracy == one_view.test_accuracy  # the same weights: one view ties itself
    # the mirror decides by its own accuracy against the one view's, not one view against one view
    shipped = ModelCard.read(tmp_path / "tiny.json")
    for shipped_accuracy in (mirrored.test_accuracy - 0.05, mirrored.test_accuracy):
        shipped.test_accuracy = shipped_accuracy
        shipped.write(tmp_path / "tiny.json")
        again = ship(folder, str(data), out_dir=tmp_path, name="tiny", floor=0.0, test_flip=True)
        better = mirrored.test_accuracy > shipped_accuracy
        assert again.shipped == better
        assert ModelCard.read(tmp_path / "tiny.json").views == ("image and mirror" if better else "image")
        if not better:
            assert again.reason.endswith("(the same weights: image and mirror against image)"), again.reason


def test_a_card_names_each_teacher_of_an_ensemble_without_a_machine_local_path(tmp_path):
    cache = Path.home() / ".cache" / "vitviz"
    joined = f"{cache / 'runs/a/a.safetensors'}+{cache / 'runs/b/b.safetensors'}"
    assert portable({"teacher": joined}) == {"teacher": "runs/a/a.safetensors+runs/b/b.safetensors"}
    assert portable("/somewhere/else/c.safetensors") == "c.safetensors"
    named = f"fashion-mnist-cnn+{cache / 'runs/b/b.safetensors'}"  # a zoo name first: the path still made portable
    assert portable(named) == "fashion-mnist-cnn+runs/b/b.safetensors"
    assert portable("x + MHSA(LN(x))") == "x + MHSA(LN(x))"  # a "+" in other text: the text as it is
