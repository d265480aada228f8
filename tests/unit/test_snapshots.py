"""The snapshots of a run: written and read back (vitviz.models.snapshots), packed from a run
trained with --snapshots (tools.snapshots), and the shipped ones."""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch

from tests.helpers import CLASSES, make_image_folder, tiny_recipe
from tools.snapshots import SnapshotError, chosen_epochs, main, pack
from vitviz.models import snapshots, zoo
from vitviz.models.config import ViTConfig
from vitviz.models.model import VisionTransformer
from vitviz.steps import learn
from vitviz.training.train import Snapshots, train

TINY = ViTConfig(image_size=8, patch_size=4, in_chans=1, embed_dim=8, depth=1, num_heads=2, num_classes=3)


def _write(folder, epochs=(0, 2)):
    torch.manual_seed(0)
    models = {epoch: VisionTransformer(TINY) for epoch in epochs}
    history = [
        {"epoch": 0, "test_accuracy": 0.3},
        {"epoch": 1, "test_accuracy": 0.5},
        {"epoch": 2, "test_accuracy": 0.6},
    ]
    samples = np.arange(3 * 8 * 8, dtype=np.uint8).reshape(3, 1, 8, 8)
    states = {epoch: model.state_dict() for epoch, model in models.items()}
    snapshots.write("tiny", TINY, states, history, {"epochs": 2}, samples, ["a", "b", "c"], [4, 0, 9], folder=folder)
    return models, samples


def test_a_snapshot_is_the_model_of_its_epoch_in_float16(tmp_path):
    models, samples = _write(tmp_path)
    found = snapshots.read("tiny", tmp_path)
    assert found.epochs == (0, 2) and found.row(2)["test_accuracy"] == 0.6 and found.row(7) == {}
    assert found.sample_classes == ("a", "b", "c") and found.sample_indices == (4, 0, 9)
    assert np.array_equal(found.samples, samples)
    for epoch in (0, 2):
        loaded = found.model_at(epoch).state_dict()
        for key, value in models[epoch].state_dict().items():
            assert torch.equal(loaded[key], value.half().float()), key
    assert not torch.equal(found.model_at(0).pos_embed, found.model_at(2).pos_embed)
    assert sorted(found.positions) == [0, 2] and torch.equal(found.positions[2], found.states[2]["pos_embed"])
    with pytest.raises(KeyError, match="epoch 1"):
        found.model_at(1)
    assert snapshots.read("other", tmp_path) is None


def test_the_epochs_to_ship_are_checked_against_the_run_s():
    assert chosen_epochs("0,1,end", [0, 1, 2, 7]) == [0, 1, 7]
    with pytest.raises(SnapshotError, match=r"\[5\]"):
        chosen_epochs("0,5", [0, 1, 2])


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    data = make_image_folder(tmp_path_factory.mktemp("data"), per_class=12)
    out = tmp_path_factory.mktemp("runs") / "tiny"
    train(tiny_recipe(data, epochs=3), out=out, snapshots=Snapshots.parse("0,1,2,end"))
    return out, data


def test_pack_ships_the_chosen_snapshots_the_curves_and_a_test_image_per_class(run, tmp_path):
    folder, data = run
    pack(folder, "0,1,end", str(data), "tiny", tmp_path)
    found = snapshots.read("tiny", tmp_path)
    assert found.epochs == (0, 1, 3)
    assert sorted(found.positions) == [0, 1, 2, 3]  # every epoch's position embeddings, the unshipped 2 too
    assert torch.equal(found.positions[3], found.states[3]["pos_embed"])
    assert [row["epoch"] for row in found.history] == [0, 1, 2, 3]
    assert all("test_accuracy" in row for row in found.history)
    assert found.run["planned_epochs"] == 3 and found.run["epochs"] == 3 and found.run["seed"] == 0
    assert found.sample_classes == tuple(CLASSES) and found.samples.shape == (3, 3, 32, 32)
    text = (tmp_path / "tiny.learn.json").read_text()
    assert str(tmp_path.parent) not in text and str(data) not in text  # no folder of this machine
    assert found.model_at(3).head.weight.dtype == torch.float32


def test_pack_refuses_more_than_its_megabytes_and_writes_nothing(run, tmp_path):
    folder, data = run
    assert main([str(folder), "--epochs", "0,1", "--data", str(data), "--model", "tiny", "--out", str(tmp_path)]) == 0
    with pytest.raises(SnapshotError, match="MB"):
        pack(folder, "0,1,2,end", str(data), "again", tmp_path, max_mb=0.001)
    assert not list(tmp_path.glob("again*"))


def test_the_shipped_snapshots_are_float16_under_25_mb_and_name_no_machine_s_folder():
    weights, record = snapshots.paths(snapshots.SHIPPED)
    assert weights.stat().st_size + record.stat().st_size <= 25_000_000
    found = snapshots.read()
    assert found.epochs[0] == 0 and len(found.epochs) >= 5
    assert all(
        v.dtype == torch.float16 for state in found.states.values() for v in state.values() if v.is_floating_point()
    )
    text = record.read_text()
    assert "/root" not in text and "/home" not in text and "/tmp" not in text and "/usr" not in text
    data = json.loads(text)
    assert data["run"]["recipe"]["seed"] == 0 and data["run"]["epochs"] == max(r["epoch"] for r in found.history)
    assert found.config.class_names == found.model_at(0).config.class_names


def test_the_shipped_snapshots_shape_is_their_run_s_and_the_page_compares_it_with_the_shipped_grey_vit():
    """What the page says of them (learn.source): the shape their run's recipe trained, and whether
    the shipped grey ViT has it (since 2026-12-07 it is wider and deeper)."""
    run = snapshots.read()
    model = run.run["recipe"]["model"]
    assert (model["embed_dim"], model["depth"], model["num_heads"]) == (
        run.config.embed_dim,
        run.config.depth,
        run.config.num_heads,
    )
    shipped = zoo.REGISTRY[snapshots.SHIPPED].config
    assert learn.architecture(shipped) != learn.architecture(run.config)
