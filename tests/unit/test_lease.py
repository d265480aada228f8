"""``python -m tools.lease --tiny``: the lease's own code path on the CPU, three calls on three
"machines", each handing the next only the files the device tool brings back."""

import json
import time

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
    # the snapshots of epochs 0 and 1 came in call 2's pack; call 3 added its end's, and the history
    snapshots = tmp_path / "machine3" / "cifar10-vit-lee-lease" / "snapshots"
    record = json.loads((snapshots / "snapshots.json").read_text())
    assert [s["epoch"] for s in record["snapshots"]] == [0, 1, 3] and sorted(p.name for p in snapshots.iterdir()) == [
        "epoch-0000.safetensors", "epoch-0001.safetensors", "epoch-0003.safetensors", "snapshots.json"
    ]  # fmt: skip
    assert [row["epoch"] for row in record["history"]] == [0, 1, 2, 3] and record["history"][1:] == card.history
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
    # the probe: the step as it is, CUDA graphs (skipped without CUDA), then the fastest at twice the batch
    probed = {(row["compile"], row.get("batch_size", 32)): row for row in fit["probe"]}
    assert sorted(probed) == [("off", 32), ("off", 64), ("reduce-overhead", 32)]
    if not torch.cuda.is_available():
        assert probed["reduce-overhead", 32]["skipped"] == "needs CUDA"
    fastest = max((row for row in fit["probe"] if "images_per_s" in row), key=lambda row: row["images_per_s"])
    assert fit["images_per_s"] == fastest["images_per_s"] and fit["batch_size"] == fastest.get("batch_size", 32)
    vit_card = ModelCard.read(tmp_path / "machine1" / "cifar10-vit-lee-lease" / "cifar10-vit-lee-lease.json")
    assert (vit_card.recipe["batch_size"], vit_card.recipe["lr"], vit_card.recipe["compile"]) == (
        fit["batch_size"], fit["lr"], fit["compile"]
    )  # fmt: skip
    assert (first["phase"], first["epochs"], first["planned_epochs"], first["finished"]) == ("vit", 1, 1, True)
    assert not (tmp_path / "machine1" / ".probe").exists()
    carried = tmp_path / "carried"
    lease.unpack(tmp_path / "out1", carried)
    assert json.loads((carried / lease.FIT).read_text()) == fit
    # finished: the pack holds the ViT's weights and the teacher, not the ViT's checkpoint
    vit_run = carried / "cifar10-vit-lee-lease"
    assert (vit_run / "cifar10-vit-lee-lease.safetensors").exists() and not (vit_run / "checkpoint.pt").exists()
    assert sorted(p.name for p in (vit_run / "snapshots").glob("*.safetensors")) == [
        "epoch-0000.safetensors", "epoch-0001.safetensors"
    ]  # fmt: skip
    assert (carried / lease.TEACHER / "cifar10-cnn-lease.safetensors").exists()
    # the next machine, with all the time in the world, trains nothing more: the run is finished
    # on its fitted schedule, not begun again on the preset's 3 epochs
    again = lease.lease(
        str(data), tmp_path / "out2", tmp_path / "machine2", budget=600, resume=tmp_path / "out1", tiny=True
    )
    assert (again["epochs"], again["planned_epochs"], again["finished"]) == (1, 1, True)


def test_the_probe_skips_what_this_machine_cannot_run_and_takes_the_fastest(tmp_path, monkeypatch, caplog):
    data = make_image_folder(tmp_path / "data", per_class=30)
    monkeypatch.setenv("VITVIZ_CACHE", str(tmp_path / "cache"))
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)

    def no_compiler(*args, **kwargs):
        raise RuntimeError("no C compiler here\nmore lines")

    monkeypatch.setattr(torch, "compile", no_compiler)
    cfg = lease.recipes(str(data), True, {}, {})[1]
    candidates = ({"compile": "default"}, {"compile": "off"}, {"compile": "max-autotune"})
    speeds = {32: 100.0, 64: 150.0}
    real_train = lease.train

    def timed_train(probe, out):  # a compiled step trains for real (and fails to compile); the others at set speeds
        if probe.compile != "off":
            return real_train(probe, out=out)
        return ModelCard(
            history=[{"epoch": 1, "images_per_s": 1.0}, {"epoch": 2, "images_per_s": speeds[probe.batch_size]}]
        )

    monkeypatch.setattr(lease, "train", timed_train)
    with caplog.at_level("INFO", logger="tools.lease"):
        changes, images_per_s, rows = lease.probe(cfg, tmp_path / "work", time.monotonic() + 600, candidates)
    assert rows[0] == {"compile": "default", "skipped": "RuntimeError: no C compiler here"}
    assert rows[1] == {"compile": "off", "images_per_s": 100.0}
    assert rows[2] == {"compile": "max-autotune", "skipped": "needs CUDA"}
    assert rows[3] == {"compile": "off", "batch_size": 64, "lr": pytest.approx(cfg.lr * 2**0.5), "images_per_s": 150.0}
    assert (changes["batch_size"], images_per_s) == (64, 150.0)
    assert "probe: skipped" in caplog.text and "no C compiler here" in caplog.text
    speeds[64] = 90.0  # a larger batch that is slower is not taken
    assert lease.probe(cfg, tmp_path / "work", time.monotonic() + 600, candidates)[:2] == ({"compile": "off"}, 100.0)
    # no time left: the first candidate runs, and none after it that might take as long
    rows = lease.probe(cfg, tmp_path / "work", time.monotonic(), candidates[1:])[2]
    assert "images_per_s" in rows[0] and rows[1]["skipped"] == "needs CUDA"
    assert rows[2]["batch_size"] == 64 and rows[2]["skipped"].startswith("the probe had taken")
    with pytest.raises(RuntimeError, match="No candidate"):
        lease.probe(cfg, tmp_path / "work", time.monotonic() + 600, candidates[:1])


def test_snapshots_go_into_the_pack_last_and_are_what_is_left_out_past_its_limit(tmp_path, monkeypatch):
    work = tmp_path / "work"
    for path, size in (("vit/snapshots/epoch-0000.safetensors", 600), ("vit/checkpoint.pt", 500), ("teacher/t", 400)):
        (work / path).parent.mkdir(parents=True, exist_ok=True)
        (work / path).write_bytes(b"x" * size)
    monkeypatch.setattr(lease, "PACK_BYTES", 1000)  # the checkpoint and the teacher fit, the snapshot not beside them
    lease.pack(work, tmp_path / "out", {"phase": "vit", "epochs": 1})
    lease.unpack(tmp_path / "out", tmp_path / "again")
    assert (
        sorted(p.relative_to(tmp_path / "again").as_posix() for p in (tmp_path / "again").rglob("*.*"))
        == ["vit/checkpoint.pt"]
        and (tmp_path / "again" / "teacher" / "t").exists()
    )
