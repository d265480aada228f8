import json

import pytest
import torch
from PIL import Image

from tests.helpers import CLASSES, make_image_folder
from vitviz.analyses.evaluate import (
    EvalResult,
    evaluate,
    inference,
    main,
    predictions_path,
    read_predictions,
    save_predictions,
    weights_hash,
)
from vitviz.models import zoo
from vitviz.models.cnn import ConvNet
from vitviz.models.config import CNNConfig
from vitviz.models.data import load_split, spread_subset, to_tensor
from vitviz.models.model import VisionTransformer


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    return make_image_folder(tmp_path_factory.mktemp("data"), per_class=12, splits=("test",))


@pytest.fixture
def model(tiny_config):
    torch.manual_seed(0)
    return VisionTransformer(tiny_config.replace(num_classes=3, class_names=CLASSES)).eval()


def test_counts_match_a_direct_forward_of_each_image_as_the_tour_sees_it(folder, model):
    data = load_split(folder, "test")
    result = evaluate(model, data, name="tiny")
    pictures = [Image.fromarray(image.permute(1, 2, 0).numpy()) for image in data.images]
    with torch.no_grad():
        predictions = torch.cat([model(to_tensor(p, model.config.preprocess)).argmax(-1) for p in pictures])
    wrong = torch.nonzero(predictions != data.labels).flatten()
    assert result.n == 36
    assert torch.equal(result.wrong, wrong)
    assert result.misclassified == len(wrong)
    assert result.accuracy == pytest.approx(1 - len(wrong) / 36)
    confusion = result.confusion()
    assert confusion.sum() == 36 and confusion.sum(1).tolist() == [12, 12, 12]
    assert confusion.trace() == 36 - len(wrong)
    assert result.summary()["misclassified"] == len(wrong)


def test_accuracy_is_the_exact_fraction():
    # 7204 of 10,000 right: a float32 mean gives 0.72039998; the card and the command must agree exactly
    labels = torch.zeros(10_000, dtype=torch.long)
    probs = torch.zeros(10_000, 2)
    probs[:7204, 0] = 1.0
    probs[7204:, 1] = 1.0
    result = EvalResult("m", "d", ["a", "b"], [str(i) for i in range(10_000)], labels, probs, 1.0, 1.0)
    assert result.accuracy == 0.7204
    assert result.summary()["accuracy"] == 0.7204


def test_a_result_computes_its_predictions_once_and_its_fields_stay_as_read():
    # the lab reads a shared result's predictions and confidence once per thumbnail (docs/benchmarks.md)
    probs = torch.tensor([[0.9, 0.1], [0.3, 0.7], [0.6, 0.4]])
    result = EvalResult("m", "d", ["a", "b"], ["x", "y", "z"], torch.tensor([0, 0, 1]), probs, 1.0, 1.0)
    assert result.predictions.tolist() == [0, 1, 0] and result.wrong.tolist() == [1, 2]
    assert torch.allclose(result.confidence, torch.tensor([0.9, 0.7, 0.6]))
    assert result.predictions is result.predictions and result.confidence is result.confidence
    with pytest.raises(AttributeError):
        result.probs = probs.flip(1)  # the cached answers could no longer be those of the probabilities


def test_second_evaluation_reads_the_cache(folder, model, monkeypatch):
    data = load_split(folder, "test")
    first = evaluate(model, data)
    monkeypatch.setattr(model, "forward", lambda *_: pytest.fail("the model ran again"))
    second = evaluate(model, data)
    assert second.cached and not first.cached
    assert torch.equal(first.probs, second.probs)


def test_without_run_only_what_is_stored_is_read(folder, model, tiny_config, tmp_path, monkeypatch):
    data = load_split(folder, "test")
    monkeypatch.setattr(model, "forward", lambda *_: pytest.fail("the model ran"))
    with pytest.raises(LookupError):
        evaluate(model, data, use_cache=False, run=False)  # nothing stored
    monkeypatch.undo()
    measured = evaluate(model, data)  # now in the disk cache
    monkeypatch.setattr(model, "forward", lambda *_: pytest.fail("the model ran"))
    assert torch.equal(evaluate(model, data, run=False).probs, measured.probs)
    path = predictions_path(tmp_path / "tiny.safetensors")
    save_predictions(measured, path, model, data.fingerprint)
    assert evaluate(model, data, use_cache=False, shipped=path, run=False).cached


def test_stored_predictions_are_used_only_for_their_weights_and_data(folder, model, tiny_config, tmp_path, monkeypatch):
    data = load_split(folder, "test")
    measured = evaluate(model, data, use_cache=False)
    path = predictions_path(tmp_path / "tiny.safetensors")
    assert path.name == "tiny.predictions.safetensors"
    save_predictions(measured, path, model, data.fingerprint)
    assert path.stat().st_size < 4 * 36 * 3 + 2 * 36 + 1024  # float32 probabilities, int16 labels, a header

    monkeypatch.setattr(model, "forward", lambda *_: pytest.fail("the model ran despite its stored predictions"))
    stored = evaluate(model, data, use_cache=False, shipped=path)
    assert stored.cached and stored.files == measured.files and torch.equal(stored.labels, data.labels)
    assert torch.equal(stored.probs, measured.probs)
    assert torch.equal(stored.predictions, measured.predictions) and stored.accuracy == measured.accuracy
    monkeypatch.undo()

    torch.manual_seed(1)
    other = VisionTransformer(tiny_config.replace(num_classes=3, class_names=CLASSES)).eval()
    assert read_predictions(path, other, data) is None  # other weights
    assert read_predictions(path, model, spread_subset(data, 30)) is None  # other images
    assert read_predictions(tmp_path / "missing.predictions.safetensors", model, data) is None
    path.write_bytes(b"not a safetensors file")
    assert read_predictions(path, model, data) is None  # a damaged file is ignored, not raised


def test_one_view_predictions_are_not_those_of_the_same_weights_averaged_with_the_mirror(folder, tmp_path):
    data = load_split(folder, "test")
    torch.manual_seed(0)
    config = CNNConfig(image_size=16, num_classes=3, stem_width=4, widths=(8, 8), class_names=tuple(CLASSES))
    one_view = ConvNet(config).eval()
    mirrored = ConvNet(config.replace(test_flip=True)).eval()
    mirrored.load_state_dict(one_view.state_dict())
    assert weights_hash(mirrored) == weights_hash(one_view) and inference(mirrored) != inference(one_view)
    path = predictions_path(tmp_path / "cnn.safetensors")
    save_predictions(evaluate(one_view, data), path, one_view, data.fingerprint)  # also fills the disk cache
    assert read_predictions(path, one_view, data) is not None
    assert read_predictions(path, mirrored, data) is None  # the stored file: another model's answers
    averaged = evaluate(mirrored, data, shipped=path)
    assert not averaged.cached  # and not the disk cache of the one-view model either
    assert not torch.allclose(averaged.probs, evaluate(one_view, data).probs, atol=1e-4)
    assert evaluate(mirrored, data).cached  # its own answers are cached under their own key


def test_cache_key_changes_with_the_weights(model):
    before = weights_hash(model)
    with torch.no_grad():
        model.head.bias[0] += 1
    assert weights_hash(model) != before


def test_refuses_a_model_for_other_classes(folder, tiny_config):
    data = load_split(folder, "test")
    with pytest.raises(ValueError, match="10 classes but the dataset has 3"):
        evaluate(VisionTransformer(tiny_config), data)


def test_spread_subset_keeps_every_class(folder):
    data = spread_subset(load_split(folder, "test"), 6)
    assert len(data) == 6 and sorted(set(data.labels.tolist())) == [0, 1, 2]


def test_command_prints_json_last(folder, model, tmp_path, capsys):
    zoo.save(model, tmp_path / "tiny.safetensors")
    code = main(["--model", str(tmp_path / "tiny.safetensors"), "--data", str(folder), "--json", "--limit", "30"])
    assert code == 0
    last = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert {"accuracy", "n", "misclassified", "images_per_s", "model", "data"} <= set(last)
    assert last["n"] == 30


def test_command_says_what_is_wrong(tmp_path, capsys):
    assert main(["--model", "nope", "--data", str(tmp_path)]) == 2
    assert "no model called" in capsys.readouterr().err
