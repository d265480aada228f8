"""``python -m tools.lease --tiny``: the lease's own code path on the CPU, three calls on three
"machines", each handing the next only the files the device tool brings back."""

import json

import pytest
import torch
from safetensors import safe_open

from tests.helpers import make_image_folder
from tools import lease
from vitviz.models.card import ModelCard


def test_a_lease_packs_its_checkpoints_into_parts_and_the_next_call_resumes_from_them(tmp_path, monkeypatch):
    data = make_image_folder(tmp_path / "data", per_class=90)
    monkeypatch.setenv("VITVIZ_CACHE", str(tmp_path / "cache"))
    common = ["--tiny", "--no-fit", "--data", str(data)]

    # call 1: budget 0, so the CNN stops after its first epoch; its checkpoint fits in the pack
    lease.main([*common, "--out", str(tmp_path / "out1"), "--work", str(tmp_path / "machine1"), "--budget", "0"])
    first = json.loads((tmp_path / "out1" / "lease.json").read_text())
    assert (first["phase"], first["epochs"], first["finished"]) == ("cnn", 1, False)
    parts = sorted((tmp_path / "out1").glob("lease.tar.part-*"))
    assert [p.name for p in parts] == first["parts"] and all(p.stat().st_size <= lease.PART_BYTES for p in parts)

    # call 2, a fresh machine: the CNN goes on to its end, becomes the float16 teacher, and the ViT
    # stops after one epoch
    second = lease.lease(
        str(data), tmp_path / "out2", tmp_path / "machine2", budget=0, resume=tmp_path / "out1", tiny=True, fit=False
    )
    assert (second["phase"], second["epochs"], second["finished"]) == ("vit", 1, False)
    carried = tmp_path / "carried"
    lease.unpack(tmp_path / "out2", carried)
    teacher = carried / lease.TEACHER / "cifar10-cnn-lease.safetensors"
    with safe_open(str(teacher), "pt") as weights:
        assert weights.get_tensor("groups.0.conv1.weight").dtype == torch.float16
    taught_by = ModelCard.read(teacher.with_suffix(".json"))
    assert taught_by.epochs == 2 and not taught_by.interim and taught_by.test_accuracy is not None
    assert (carried / "cifar10-vit-lee-lease" / "checkpoint.pt").exists()
    assert not list((carried / "cifar10-cnn-lease").glob("*.pt")) and (carried / "cifar10-cnn-lease").is_dir()

    # call 3, another machine: the ViT resumes from the carried checkpoint and finishes
    third = lease.lease(
        str(data), tmp_path / "out3", tmp_path / "machine3", budget=600, resume=tmp_path / "out2", tiny=True, fit=False
    )
    assert (third["phase"], third["epochs"], third["finished"]) == ("vit", 3, True)
    card = ModelCard.read(tmp_path / "machine3" / "cifar10-vit-lee-lease" / "cifar10-vit-lee-lease.json")
    assert [row["epoch"] for row in card.history] == [1, 2, 3]
    assert card.config["depth"] == 2 and card.config["num_heads"] == 12 and card.recipe["loader"] == "device"
    assert card.teacher["name"] == str(tmp_path / "machine3" / lease.TEACHER / "cifar10-cnn-lease.safetensors")
    lease.main(["--unpack", str(tmp_path / "out3"), "--work", str(tmp_path / "here")])  # to ship from
    assert (tmp_path / "here" / "cifar10-vit-lee-lease" / "cifar10-vit-lee-lease.safetensors").exists()


def test_a_pack_with_a_damaged_or_missing_part_is_refused(tmp_path):
    work = tmp_path / "work"
    (work / "vit").mkdir(parents=True)
    (work / "vit" / "checkpoint.pt").write_bytes(bytes(range(256)) * 1000)
    lease.pack(work, tmp_path / "out", {"phase": "vit", "epochs": 1})
    assert lease.unpack(tmp_path / "out", tmp_path / "again")["phase"] == "vit"
    assert (tmp_path / "again" / "vit" / "checkpoint.pt").read_bytes() == bytes(range(256)) * 1000
    part = tmp_path / "out" / "lease.tar.part-00"
    part.write_bytes(part.read_bytes()[:-1] + b"x")
    with pytest.raises(ValueError, match="sha256"):
        lease.unpack(tmp_path / "out", tmp_path / "damaged")
    part.unlink()
    with pytest.raises(ValueError, match="lacks lease.tar.part-00"):
        lease.unpack(tmp_path / "out", tmp_path / "missing")


def test_the_vits_schedule_is_fitted_to_the_time_left_and_ends_rather_than_being_cut_off():
    cfg = lease.recipes("data", False, {}, {})[1]
    assert (cfg.epochs, cfg.warmup_epochs) == (300, 15)
    # 2 s an epoch: 500 s left hold 225 epochs in 90% of them, and the warmup shrinks alike
    assert lease.fit_schedule(cfg, 500, 2.0) == {"epochs": 225, "warmup_epochs": 11, "planned_epochs": 300}
    assert lease.fit_schedule(cfg, 5000, 2.0)["epochs"] == 300  # never more than the preset's
    assert lease.fit_schedule(cfg, 1, 2.0) == {"epochs": 1, "warmup_epochs": 1, "planned_epochs": 300}


def test_a_fitted_schedule_travels_in_the_pack_and_the_next_machine_keeps_it(tmp_path, monkeypatch):
    data = make_image_folder(tmp_path / "data", per_class=90)
    monkeypatch.setenv("VITVIZ_CACHE", str(tmp_path / "cache"))
    lease.lease(str(data), tmp_path / "out0", tmp_path / "machine0", budget=0, tiny=True)  # the CNN's first epoch
    # the CNN ends; a probe measures the ViT's speed; with no time left the fitted schedule is one
    # epoch (against the tiny preset's 3), and it ends there rather than stopping part-way
    first = lease.lease(
        str(data), tmp_path / "out1", tmp_path / "machine1", budget=0, resume=tmp_path / "out0", tiny=True
    )
    fit = json.loads((tmp_path / "machine1" / lease.FIT).read_text())
    assert (fit["epochs"], fit["warmup_epochs"], fit["planned_epochs"]) == (1, 1, 3) and fit["images_per_s"] > 0
    assert (first["phase"], first["epochs"], first["planned_epochs"], first["finished"]) == ("vit", 1, 1, True)
    assert not (tmp_path / "machine1" / ".probe").exists()
    carried = tmp_path / "carried"
    lease.unpack(tmp_path / "out1", carried)
    assert json.loads((carried / lease.FIT).read_text()) == fit
    # finished: the pack holds the ViT's weights and the teacher, not the ViT's checkpoint
    vit_run = carried / "cifar10-vit-lee-lease"
    assert (vit_run / "cifar10-vit-lee-lease.safetensors").exists() and not (vit_run / "checkpoint.pt").exists()
    assert (carried / lease.TEACHER / "cifar10-cnn-lease.safetensors").exists()
    # the next machine, with all the time in the world, trains nothing more: the run is finished
    # on its fitted schedule, not begun again on the preset's 3 epochs
    again = lease.lease(
        str(data), tmp_path / "out2", tmp_path / "machine2", budget=600, resume=tmp_path / "out1", tiny=True
    )
    assert (again["epochs"], again["planned_epochs"], again["finished"]) == (1, 1, True)
