import dataclasses
import itertools
import json
import os
import shutil
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import numpy as np
import pytest
import torch
from safetensors.torch import load_file

from tests.conftest import REPO
from tests.helpers import TINY, make_image_folder, tiny_recipe, write_idx
from vitviz.analyses.evaluate import weights_hash
from vitviz.models import data as vdata
from vitviz.models import zoo
from vitviz.models.card import ModelCard
from vitviz.models.config import CIFAR10_CLASSES, ViTConfig, config_from_dict
from vitviz.models.model import build_model
from vitviz.render.tables import recipe_rows
from vitviz.training import train as train_module
from vitviz.training.train import (
    CHOICES,
    PRESETS,
    TrainConfig,
    build_augment,
    learning_rate,
    parse_args,
    read_run,
    same_recipe,
    train,
)


@pytest.fixture(scope="module")
def dataset(tmp_path_factory):
    return make_image_folder(tmp_path_factory.mktemp("data"), per_class=100)


def test_loss_falls_and_card_is_written(dataset, tmp_path):
    card = train(tiny_recipe(dataset), out=tmp_path)
    losses = [row["train_loss"] for row in card.history]
    assert losses[-1] < losses[0] * 0.8
    assert card.test_accuracy > 0.6  # three colour classes, chance is 1/3
    saved = json.loads((tmp_path / "tiny.json").read_text())
    assert saved["epochs"] == 3 and saved["config"]["num_classes"] == 3
    assert {"train_loss", "train_accuracy", "test_accuracy", "lr", "seconds"} <= set(saved["history"][0])
    weights = load_file(str(tmp_path / "tiny.safetensors"))
    assert "blocks.0.attn.qkv.weight" in weights


def stop_after_first_epoch(recipe: TrainConfig, out, monkeypatch) -> None:
    """Train ``recipe`` into ``out`` until its first checkpoint is saved, then stop, as a machine going away would."""
    real_save = train_module.save_atomic

    def save_then_stop(obj, path):
        real_save(obj, path)
        raise KeyboardInterrupt

    with monkeypatch.context() as patched:
        patched.setattr(train_module, "save_atomic", save_then_stop)
        with pytest.raises(KeyboardInterrupt):
            train(recipe, out=out)


def test_resume_continues_where_it_stopped(dataset, tmp_path, monkeypatch):
    recipe = tiny_recipe(
        dataset, epochs=2, augment="trivialaugment", mixup_alpha=0.8, cutmix_alpha=1.0, random_erasing=0.25
    )
    straight = train(recipe, out=tmp_path / "straight")

    stop_after_first_epoch(recipe, tmp_path / "resumed", monkeypatch)
    assert torch.load(tmp_path / "resumed" / "checkpoint.pt", weights_only=True)["epoch"] == 1
    resumed = train(recipe, out=tmp_path / "resumed")

    assert [r["epoch"] for r in resumed.history] == [1, 2]
    a = load_file(str(tmp_path / "straight" / "tiny.safetensors"))
    b = load_file(str(tmp_path / "resumed" / "tiny.safetensors"))
    for key in a:
        torch.testing.assert_close(a[key], b[key], msg=key)
    assert resumed.history[1]["train_loss"] == pytest.approx(straight.history[1]["train_loss"], rel=1e-5)


def test_a_run_moves_between_machines_with_its_data(dataset, tmp_path, monkeypatch):
    """Begun on a lent GPU that read a copy of the data, finished here: the same bytes in another
    folder, other threads and workers resume it, and its card names both machines in order."""
    recipe = tiny_recipe(dataset, epochs=2, augment="autoaugment", threads=1)
    straight = train(recipe, out=tmp_path / "straight")

    monkeypatch.setattr(train_module, "hardware_label", lambda: "NVIDIA H200")
    stop_after_first_epoch(recipe, tmp_path / "moved", monkeypatch)  # the lease ended
    monkeypatch.setattr(train_module, "hardware_label", lambda: "CPU (AMD EPYC, 2 threads)")
    here = shutil.copytree(dataset, tmp_path / "here")
    moved = train(dataclasses.replace(recipe, data=str(here), threads=2, workers=2), out=tmp_path / "moved")

    assert [r["epoch"] for r in moved.history] == [1, 2] and moved.recipe["data"] == str(here)
    assert moved.hardware == "NVIDIA H200 + CPU (AMD EPYC, 2 threads)"
    assert moved.history[1]["train_loss"] == pytest.approx(straight.history[1]["train_loss"], rel=1e-4)

    other = make_image_folder(tmp_path / "other", per_class=100, seed=1)  # other bytes: another run
    with pytest.raises(ValueError, match="different recipe"):
        train(dataclasses.replace(recipe, data=str(other)), out=tmp_path / "moved")


def test_changed_recipe_is_not_resumed(dataset, tmp_path):
    train(tiny_recipe(dataset, epochs=1), out=tmp_path)
    with pytest.raises(ValueError, match="different recipe"):
        train(tiny_recipe(dataset, epochs=1, lr=1e-4), out=tmp_path)


def test_a_checkpoint_from_before_a_new_recipe_field_still_resumes():
    recipe = TrainConfig(epochs=10)
    saved = json.loads(json.dumps(dataclasses.asdict(recipe)))
    older = {k: v for k, v in saved.items() if k != "init_from"}  # written before the field existed
    assert same_recipe(older, recipe)
    assert not same_recipe(older, TrainConfig(epochs=10, init_from="/elsewhere"))
    assert not same_recipe({**older, "lr": 5e-4}, recipe)
    assert not same_recipe({**saved, "unknown": 1}, recipe)
    assert same_recipe({**saved, "threads": 8, "workers": 3}, recipe)  # where it runs, not what it learns
    assert not same_recipe({**saved, "data": "/elsewhere"}, recipe)
    assert same_recipe({**saved, "data": "/elsewhere"}, recipe, same_data=True)  # the same bytes elsewhere


def test_a_second_stage_starts_from_the_first_ones_weights_and_counts_on(dataset, tmp_path):
    first = train(tiny_recipe(dataset, epochs=2), out=tmp_path / "tiny")
    # lr 0 and no weight decay: the second stage's weights stay exactly where they started
    still = tiny_recipe(
        dataset, name="tiny2", epochs=1, lr=0.0, min_lr=0.0, weight_decay=0.0, init_from=str(tmp_path / "tiny")
    )
    second = train(still, out=tmp_path / "tiny2")
    a = load_file(str(tmp_path / "tiny" / "tiny.safetensors"))
    b = load_file(str(tmp_path / "tiny2" / "tiny2.safetensors"))
    for key in a:
        torch.testing.assert_close(a[key], b[key], rtol=0, atol=0, msg=key)
    assert second.test_accuracy == pytest.approx(first.test_accuracy)

    assert [row["epoch"] for row in second.history] == [1, 2, 3]
    assert second.history[:2] == first.history
    assert second.epochs == 3 and second.planned_epochs == 3
    assert [(s["name"], s["epochs"], s["recipe"]["lr"]) for s in second.stages] == [
        ("tiny", 2, 3e-3),
        ("tiny2", 1, 0.0),
    ]
    assert second.wall_time_s >= first.wall_time_s

    # a third stage from the second's checkpoint inherits both stages
    _, _, interim = read_run(tmp_path / "tiny2", checkpoint=True)
    assert interim.interim == "checkpoint after epoch 3 of 3"
    third = train(
        tiny_recipe(dataset, name="tiny3", epochs=1, init_from=str(tmp_path / "tiny2" / "checkpoint.pt")),
        out=tmp_path / "tiny3",
    )
    assert [s["name"] for s in third.stages] == ["tiny", "tiny2", "tiny3"]
    assert [s["hardware"] for s in third.stages] == [train_module.hardware_label()] * 3  # where each one ran
    assert [row["epoch"] for row in third.history] == [1, 2, 3, 4]


def test_a_second_stage_keeps_the_model_and_its_classes(dataset, tmp_path):
    train(tiny_recipe(dataset, epochs=1), out=tmp_path / "tiny")
    with pytest.raises(ValueError, match=r"cannot change a model .*\(depth\)"):
        train(tiny_recipe(dataset, name="b", init_from=str(tmp_path / "tiny"), model={"depth": 2}), out=tmp_path / "b")
    other = make_image_folder(tmp_path / "other", per_class=40)
    (other / "train" / "red").rename(other / "train" / "crimson")
    with pytest.raises(ValueError, match="knows the classes"):
        train(tiny_recipe(other, name="c", init_from=str(tmp_path / "tiny")), out=tmp_path / "c")
    (tmp_path / "empty").mkdir()
    with pytest.raises(FileNotFoundError, match="neither finished weights"):
        train(tiny_recipe(dataset, name="d", init_from=str(tmp_path / "empty")), out=tmp_path / "d")


def test_a_second_stage_may_regularise_the_model_it_continues(dataset, tmp_path):
    train(tiny_recipe(dataset, epochs=1), out=tmp_path / "tiny")
    weights, parent, _ = read_run(tmp_path / "tiny")
    stochastic = {"drop_path_rate": 0.2, "drop_rate": 0.1}
    still = dict(epochs=1, lr=0.0, min_lr=0.0, weight_decay=0.0, init_from=str(tmp_path / "tiny"), model=stochastic)
    train(tiny_recipe(dataset, name="reg", **still), out=tmp_path / "reg")
    after, config, _ = read_run(tmp_path / "reg")
    assert (config.drop_path_rate, config.drop_rate, config.attn_drop_rate) == (0.2, 0.1, 0.0)
    assert config == dataclasses.replace(parent, **stochastic)  # the rest is the continued model's
    for key in weights:  # lr 0: the same weights, now trained with stochastic depth and dropout
        torch.testing.assert_close(after[key], weights[key], rtol=0, atol=0, msg=key)
    with pytest.raises(ValueError, match=r"cannot change a model .*\(depth\)"):
        train(
            tiny_recipe(dataset, name="b", init_from=str(tmp_path / "tiny"), model={**stochastic, "depth": 2}),
            out=tmp_path / "b",
        )


def test_a_grown_vit_answers_as_its_parent_until_it_trains(dataset, tmp_path):
    parent = build_model(ViTConfig(image_size=32, patch_size=8, num_classes=3, **{**TINY, "depth": 2}))
    parent.eval()
    weights = {k: v.detach().clone() for k, v in parent.state_dict().items()}
    for depth, origin in ((3, [0, 0, 1]), (4, [0, 0, 1, 1]), (5, [0, 0, 0, 1, 1])):
        config, grown_weights = train_module.grown(parent.config, weights, depth)
        child = build_model(config)
        child.load_state_dict(grown_weights)  # strict: every block's every weight is there
        child.eval()
        pixels = torch.randn(4, 3, 32, 32)
        with torch.no_grad():
            torch.testing.assert_close(child(pixels), parent(pixels), rtol=0, atol=1e-6)
        for i, source in enumerate(origin):
            copy = i > 0 and origin[i - 1] == source
            for part in ("attn.qkv.weight", "mlp.fc1.weight", "norm1.weight", "attn.proj.weight", "mlp.fc2.bias"):
                silent = copy and part.startswith(("attn.proj", "mlp.fc2"))
                want = (
                    torch.zeros_like(weights[f"blocks.{source}.{part}"])
                    if silent
                    else weights[f"blocks.{source}.{part}"]
                )
                torch.testing.assert_close(grown_weights[f"blocks.{i}.{part}"], want, rtol=0, atol=0)
    with pytest.raises(ValueError, match="must be more than the model's 2 blocks"):
        train_module.grown(parent.config, weights, 2)

    # a run grows the weights it starts from, and trains them
    train(tiny_recipe(dataset, epochs=1), out=tmp_path / "tiny")
    card = train(
        tiny_recipe(dataset, name="deeper", epochs=1, init_from=str(tmp_path / "tiny"), grow_depth=3),
        out=tmp_path / "deeper",
    )
    assert card.config["depth"] == 3
    grown_now = load_file(str(tmp_path / "deeper" / "deeper.safetensors"))
    assert grown_now["blocks.1.attn.proj.weight"].abs().sum() > 0  # the copy learned: its branch is open
    with pytest.raises(ValueError, match="--grow-depth grows the model that --init-from names"):
        train(tiny_recipe(dataset, name="alone", grow_depth=3), out=tmp_path / "alone")


def test_schedule_warms_up_then_decays():
    recipe = TrainConfig(epochs=10, warmup_epochs=2, lr=1e-3, min_lr=1e-5)
    lrs = [learning_rate(step, 10, recipe) for step in range(100)]
    assert lrs[0] == pytest.approx(1e-3 / 20)
    assert max(lrs) == pytest.approx(1e-3)
    assert lrs[19] == pytest.approx(1e-3)
    assert lrs[-1] < 2e-5
    assert all(a >= b for a, b in itertools.pairwise(lrs[20:]))


def test_command_line_reads_flags_and_environment(monkeypatch):
    monkeypatch.setenv("VITVIZ_DATA", "/somewhere")
    recipe = parse_args(["--epochs", "7", "--model", '{"depth": 2}', "--limit-train", "100", "--init-from", "runs/a"])
    assert recipe.epochs == 7 and recipe.model == {"depth": 2} and recipe.limit_train == 100
    assert recipe.init_from == "runs/a"
    assert recipe.data == "/somewhere"


@pytest.mark.parametrize(("flag", "typo"), [("--compile", "fast"), ("--distill", "kl"), ("--augment", "autoaug")])
def test_the_command_line_refuses_a_typo_before_reading_data(flag, typo, capsys):
    with pytest.raises(SystemExit):
        parse_args(["--data", "nowhere", flag, typo])
    said = capsys.readouterr().err
    assert f"invalid choice: '{typo}'" in said and flag in said


@pytest.mark.parametrize("field", sorted(CHOICES))
def test_a_recipe_refuses_a_value_no_flag_offers(field):
    flag = "--" + field.replace("_", "-")
    with pytest.raises(ValueError, match=f"{flag} must be one of {', '.join(CHOICES[field])}, not 'typo'"):
        TrainConfig(**{field: "typo"})


def test_every_preset_uses_values_the_command_line_accepts():
    for name, preset in PRESETS.items():
        for key, choices in CHOICES.items():
            assert preset.get(key, getattr(TrainConfig(), key)) in choices, (name, key)
    for augment in CHOICES["augment"]:  # every policy the command line offers builds
        build_augment(TrainConfig(augment=augment), (32, 32))


def test_help_lists_every_flag(capsys):
    with pytest.raises(SystemExit):
        parse_args(["--help"])
    shown = capsys.readouterr().out
    assert all(flag in shown for flag in ("--preset", "--epochs", "--teacher", "--init-from", "--model", "--flip"))


def test_torchrun_two_processes(dataset, tmp_path):
    env = dict(os.environ, VITVIZ_CACHE=str(tmp_path), OMP_NUM_THREADS="1")
    command = [
        sys.executable,
        "-m",
        "torch.distributed.run",
        "--nproc_per_node",
        "2",
        "--master_port",
        "29517",
        "-m",
        "vitviz.training.train",
        "--data",
        str(dataset),
        "--name",
        "ddp",
        "--epochs",
        "1",
        "--batch-size",
        "16",
        "--augment",
        "none",
        "--mixup-alpha",
        "0",
        "--cutmix-alpha",
        "0",
        "--amp",
        "off",
        "--threads",
        "1",
        "--warmup-epochs",
        "0",
        "--model",
        json.dumps(TINY),
    ]
    done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    card = ModelCard.read(tmp_path / "runs" / "ddp" / "ddp.json")
    assert card.extra["processes"] == 2
    assert card.history[0]["epoch"] == 1
    assert 0.0 <= card.test_accuracy <= 1.0


TINY_CNN = {"stem_width": 4, "widths": [8, 8], "batchnorm_momentum": 0.5}  # 27 steps: running stats must keep up


def cnn_recipe(data, **changes) -> TrainConfig:
    return tiny_recipe(data, **{"arch": "cnn", "optimizer": "sgd", "lr": 0.05, "model": TINY_CNN, **changes})


def test_cnn_trains_through_the_same_command(dataset, tmp_path):
    from vitviz.models.config import CNNConfig

    card = train(cnn_recipe(dataset), out=tmp_path)
    assert card.test_accuracy > 0.6  # three colour classes, chance is 1/3
    assert card.config["arch"] == "cnn"
    assert "groups.0.conv1.weight" in load_file(str(tmp_path / "tiny.safetensors"))
    _, config, _ = read_run(tmp_path)
    assert isinstance(config, CNNConfig) and config.widths == (8, 8)


@pytest.fixture(scope="module")
def teacher_file(dataset, tmp_path_factory):
    folder = tmp_path_factory.mktemp("teacher")
    train(cnn_recipe(dataset, name="teacher"), out=folder)
    return folder / "teacher.safetensors"


def test_teacher_sees_the_students_own_mixed_batch(dataset, teacher_file, tmp_path, monkeypatch):
    seen = {"student": [], "teacher": []}

    def recording(kind, builder):
        def wrapped(*args, **kwargs):
            result = builder(*args, **kwargs)
            model = result[0] if isinstance(result, tuple) else result
            model.register_forward_pre_hook(
                lambda module, inputs: (
                    seen[kind].append(inputs[0].detach().clone()) if module.training or kind == "teacher" else None
                )
            )
            return result

        return wrapped

    monkeypatch.setattr(train_module, "build_model", recording("student", train_module.build_model))
    monkeypatch.setattr(train_module, "load_teacher", recording("teacher", train_module.load_teacher))
    recipe = tiny_recipe(
        dataset,
        epochs=1,
        teacher=str(teacher_file),
        augment="trivialaugment",
        mixup_alpha=0.8,
        cutmix_alpha=1.0,
        random_erasing=0.25,
    )
    card = train(recipe, out=tmp_path)

    steps = len(seen["teacher"])
    assert steps == 300 // 32  # one teacher call per training step
    student_train = [x for x in seen["student"] if x.shape[0] == 32][:steps]
    for student, teacher in zip(student_train, seen["teacher"], strict=True):
        assert torch.equal(student, teacher)
    assert card.teacher["name"] == str(teacher_file)
    from vitviz.models import zoo

    assert card.teacher["weights_sha256"] == weights_hash(zoo.load(str(teacher_file), "cpu").model)
    assert card.teacher["test_accuracy"] > 0.6


def _to_answer(dataset, teacher_file):
    """The tiny training split, a fresh copy of the teacher, and the student's normalisation."""
    data = vdata.load_split(dataset, "train", (32, 32))
    return (
        data,
        zoo.load(str(teacher_file), "cpu").model.eval(),
        tiny_recipe(dataset).model_config(data.classes).preprocess,
    )


def test_a_teacher_that_sees_each_image_once_answers_it_and_its_mirror(dataset, teacher_file):
    data, teacher, student_pre = _to_answer(dataset, teacher_file)
    answers = train_module.teacher_answers(teacher, data, student_pre, True, torch.device("cpu"), None, batch_size=64)
    with torch.no_grad():
        own = vdata.normalise(data.images, teacher.config.preprocess)  # the teacher's own normalisation
        expected = (teacher(own) + teacher(own.flip(-1))) / 2
        unflipped = train_module.teacher_answers(teacher, data, student_pre, False, torch.device("cpu"), None)
    assert answers.shape == (300, 3)
    torch.testing.assert_close(answers, expected, atol=1e-4, rtol=1e-4)
    torch.testing.assert_close(unflipped, teacher(own).detach(), atol=1e-4, rtol=1e-4)
    assert not torch.allclose(answers, unflipped, atol=1e-3)  # the mirror's answer counts


def test_a_teacher_that_averages_its_mirror_itself_sees_each_image_once(dataset, teacher_file):
    data, teacher, pre = _to_answer(dataset, teacher_file)
    both = train_module.teacher_answers(teacher, data, pre, True, torch.device("cpu"), None)
    teacher.config = dataclasses.replace(teacher.config, test_flip=True)  # now its forward averages the mirror in
    calls = []
    teacher.register_forward_pre_hook(lambda module, inputs: calls.append(len(inputs[0])))
    once = train_module.teacher_answers(teacher, data, pre, True, torch.device("cpu"), None)
    assert sum(calls) == 300  # one view of each image, not two
    torch.testing.assert_close(once, both, atol=1e-4, rtol=1e-4)  # the same mean


@pytest.fixture(scope="module")
def second_teacher_file(dataset, tmp_path_factory):
    folder = tmp_path_factory.mktemp("second_teacher")
    train(cnn_recipe(dataset, name="second", seed=1), out=folder)
    return folder / "second.safetensors"


def test_an_ensemble_of_teachers_answers_the_mean_of_their_logits(dataset, teacher_file, second_teacher_file):
    data, _, pre = _to_answer(dataset, teacher_file)
    test = vdata.load_split(dataset, "test", (32, 32))
    joined = f"{teacher_file}+{second_teacher_file}"
    ensemble, about = train_module.load_teacher(joined, data.classes, torch.device("cpu"), test)
    one, two = (zoo.load(str(path), "cpu").model.eval() for path in (teacher_file, second_teacher_file))
    cpu = torch.device("cpu")
    answers = train_module.teacher_answers(ensemble, data, pre, True, cpu, None)
    each = [train_module.teacher_answers(model, data, pre, True, cpu, None) for model in (one, two)]
    assert not torch.allclose(each[0], each[1], atol=1e-3)  # two teachers that differ, so the mean says something
    torch.testing.assert_close(answers, (each[0] + each[1]) / 2, atol=1e-4, rtol=1e-4)
    # the card: each member as a lone teacher's, and the ensemble's own accuracy, measured
    assert [member["name"] for member in about["members"]] == [str(teacher_file), str(second_teacher_file)]
    assert about["members"][1]["weights_sha256"] == weights_hash(two)
    assert about["weights_sha256"] not in {member["weights_sha256"] for member in about["members"]}
    logits = ensemble(vdata.normalise(test.images, ensemble.config.preprocess))
    assert about["test_accuracy"] == round((logits.argmax(-1) == test.labels).float().mean().item(), 4)
    alone = train_module.load_teacher(str(teacher_file), data.classes, cpu, test)[1]
    assert (
        "members" not in alone and alone["test_accuracy"] == zoo.load(str(teacher_file), "cpu").spec.card.test_accuracy
    )


def test_an_ensemble_refuses_members_that_read_images_differently(dataset, teacher_file, tmp_path):
    other = tmp_path / "other"
    train(cnn_recipe(dataset, name="other", model={**TINY_CNN, "test_flip": True}), out=other)  # averages its mirror
    data = vdata.load_split(dataset, "train", (32, 32))
    with pytest.raises(ValueError, match="read images differently"):
        train_module.load_teacher(f"{teacher_file}+{other / 'other.safetensors'}", data.classes, torch.device("cpu"))


def test_each_step_learns_the_answers_of_its_own_images_and_the_teacher_runs_once(
    dataset, teacher_file, tmp_path, monkeypatch
):
    calls, taught = [], []
    real_load, real_step = train_module.load_teacher, train_module.train_step

    def counted(*args):
        model, about = real_load(*args)
        model.register_forward_pre_hook(lambda module, inputs: calls.append(len(inputs[0])))
        return model, about

    def recorded(step, pixels, labels, epoch, index, generator, answers=None):
        taught.append(answers)
        return real_step(step, pixels, labels, epoch, index, generator, answers)

    monkeypatch.setattr(train_module, "load_teacher", counted)
    monkeypatch.setattr(train_module, "train_step", recorded)
    recipe = tiny_recipe(dataset, epochs=2, teacher=str(teacher_file), teacher_sees="image", crop_padding=2)
    card = train(recipe, out=tmp_path)
    assert sum(calls) == 2 * 300  # every training image and its mirror, before the first step, and never again

    data, teacher, pre = _to_answer(dataset, teacher_file)
    answers = train_module.teacher_answers(teacher, data, pre, True, torch.device("cpu"), None)
    batches = train_module.DeviceBatches(data, recipe, (32, 32), pre, 300 // 32, torch.device("cpu"))
    assert len(taught) == 2 * (300 // 32)
    for k, given in enumerate(taught):
        torch.testing.assert_close(given, answers[batches.indices(k)[0]])
    assert card.teacher["name"] == str(teacher_file) and card.recipe["teacher_sees"] == "image"
    assert card.test_accuracy > 0.6


def test_the_answers_given_once_teach_as_the_teacher_on_the_batch_does(dataset, teacher_file):
    """Without shifts or flips a view is its image: one step taught either way moves the weights alike."""
    teacher = zoo.load(str(teacher_file), "cpu").model.eval()
    cfg = tiny_recipe(dataset, teacher=str(teacher_file), distill="soft", flip=False)
    pixels, labels = torch.randn(8, 3, 32, 32), torch.arange(8) % 3

    def weights_after(answers):
        torch.manual_seed(0)
        step = dataclasses.replace(_tiny_step(cfg), teacher=teacher, teach=teacher)
        train_module.train_step(step, pixels, labels, 0, 0, torch.Generator().manual_seed(0), answers)
        return torch.cat([p.detach().flatten() for p in step.model.parameters()])

    with torch.no_grad():
        answers = teacher(train_module.teacher_input(pixels, cfg.model_config(["r", "g", "b"]).preprocess, teacher))
    on_the_batch = weights_after(None)
    torch.testing.assert_close(weights_after(answers), on_the_batch, atol=2e-5, rtol=0)  # a step moves them ~3e-3
    assert not torch.allclose(weights_after(answers.flip(-1)), on_the_batch, atol=1e-4)  # other answers teach otherwise


def test_answers_given_once_refuse_mixed_images_and_precision_is_the_machines():
    with pytest.raises(ValueError, match="mixed"):
        TrainConfig(teacher="cifar10-cnn", teacher_sees="image", mixup_alpha=0.8)
    TrainConfig(teacher="cifar10-cnn", teacher_sees="image", mixup_alpha=0.0, cutmix_alpha=0.0)
    began = json.loads(json.dumps(dataclasses.asdict(TrainConfig(amp="bf16"))))
    assert same_recipe(began, TrainConfig(amp="off"))  # bf16 on one machine, fp32 on the next
    assert not same_recipe(began, TrainConfig(amp="off", teacher_sees="image", mixup_alpha=0.0, cutmix_alpha=0.0))


def test_a_compiled_step_learns_what_the_eager_one_does(dataset, teacher_file, tmp_path, monkeypatch):
    recipe = tiny_recipe(dataset, epochs=2, teacher=str(teacher_file), augment="autoaugment", mixup_alpha=0.8)
    eager = train(recipe, out=tmp_path / "eager")

    compiled, real_compile = [], torch.compile

    def compile_traced(module, mode):  # AOT autograd's traced graphs, run without inductor's C++ build
        compiled.append((type(module).__name__, mode))
        return real_compile(module, backend="aot_eager")

    monkeypatch.setattr(torch, "compile", compile_traced)
    card = train(dataclasses.replace(recipe, compile="reduce-overhead"), out=tmp_path / "compiled")

    assert compiled == [("VisionTransformer", "reduce-overhead"), ("ConvNet", "reduce-overhead")]
    for a, b in zip(card.history, eager.history, strict=True):
        assert a["train_loss"] == pytest.approx(b["train_loss"], rel=1e-4)
    assert card.test_accuracy == pytest.approx(eager.test_accuracy, abs=0.02)
    assert "compile" not in dict(recipe_rows([card.recipe]))  # how it ran, not what it learned from
    with pytest.raises(ValueError, match="--compile must be one of"):
        train(dataclasses.replace(recipe, compile="fast"), out=tmp_path / "typo")


def test_a_checkpoint_keeps_its_teacher_and_resumes_only_with_it(dataset, teacher_file, tmp_path, monkeypatch):
    """A mid-schedule checkpoint shipped (``read_run``) names its teacher as a finished run does,
    and a run whose teacher was replaced in the zoo since is not resumed with the new one."""
    recipe = tiny_recipe(dataset, name="taught", epochs=2, teacher=str(teacher_file))
    stop_after_first_epoch(recipe, tmp_path / "taught", monkeypatch)
    _, _, interim = read_run(tmp_path / "taught", checkpoint=True)
    assert interim.interim and interim.teacher["name"] == str(teacher_file)
    assert interim.teacher["weights_sha256"] == weights_hash(zoo.load(str(teacher_file), "cpu").model)

    real = train_module.load_teacher
    with monkeypatch.context() as patched:
        patched.setattr(
            train_module, "load_teacher", lambda *a: (real(*a)[0], {**real(*a)[1], "weights_sha256": "0" * 64})
        )
        with pytest.raises(ValueError, match="now has weights 000000000000"):
            train(recipe, out=tmp_path / "taught")
    assert train(recipe, out=tmp_path / "taught").teacher == interim.teacher


def test_each_stage_keeps_its_own_teacher(dataset, teacher_file, tmp_path):
    taught = train(tiny_recipe(dataset, name="taught", epochs=1, teacher=str(teacher_file)), out=tmp_path / "taught")
    after = train(
        tiny_recipe(dataset, name="after", epochs=1, init_from=str(tmp_path / "taught")), out=tmp_path / "after"
    )
    assert taught.teacher and after.teacher is None  # the card's own teacher is its last stage's
    assert [stage.get("teacher") for stage in after.stages] == [taught.teacher, None]
    assert after.teachers() == [(taught.teacher, [1])]
    assert ModelCard.read(tmp_path / "after" / "after.json").teachers() == after.teachers()


def test_distillation_losses():
    from vitviz.training.train import distillation_loss

    student = torch.tensor([[2.0, 0.0, -1.0], [0.0, 1.0, 3.0]])
    teacher = torch.tensor([[0.0, 5.0, 0.0], [0.0, 0.0, 1.0]])
    hard = distillation_loss(student, teacher, "hard", 1.0)
    assert torch.isclose(hard, torch.nn.functional.cross_entropy(student, torch.tensor([1, 2])))
    assert distillation_loss(student, student, "soft", 2.0).abs() < 1e-6
    assert distillation_loss(student, teacher, "soft", 2.0) > 0.1
    with pytest.raises(ValueError, match="hard"):
        distillation_loss(student, teacher, "medium", 1.0)


def test_a_teacher_of_other_classes_is_refused(dataset, teacher_file, tmp_path):
    from vitviz.training.train import load_teacher

    with pytest.raises(ValueError, match="other|classes"):
        load_teacher(str(teacher_file), ["x", "y", "z"], torch.device("cpu"))


def test_the_mnist_preset_trains_a_grayscale_seed_vit_that_joins_the_registry(tmp_path, monkeypatch):
    """``python -m vitviz.training.train --preset mnist-vit`` on a folder of idx files (a stand-in for the
    download): 1 channel, 16 patches of 49 numbers, no flips; the finished run is a registry model."""
    rng = np.random.default_rng(0)
    folder = tmp_path / "MNIST" / "raw"
    folder.mkdir(parents=True)
    labels = rng.integers(0, 10, 200)
    images = np.zeros((200, 28, 28), dtype=np.uint8)
    for i, label in enumerate(labels):  # the class is a bright row: learnable in a few steps
        images[i, 2 + 2 * label] = 255
    for split in ("train", "test"):
        image_stem, label_stem = vdata.IDX_FILES[split]
        write_idx(folder / image_stem, images)
        write_idx(folder / label_stem, labels)
    monkeypatch.setenv("VITVIZ_CACHE", str(tmp_path / "cache"))
    cfg = parse_args(["--preset", "mnist-vit", "--data", str(tmp_path), "--epochs", "2", "--warmup-epochs", "0"])
    assert cfg.name == "mnist-vit" and not cfg.flip and cfg.model["in_chans"] == 1
    card = train(dataclasses.replace(cfg, amp="off", threads=1, eval_every=1))
    config = card.config
    assert (config["in_chans"], config["patch_size"], config["embed_dim"], config["depth"]) == (1, 7, 128, 3)
    assert card.trained_on["dataset"] == "MNIST"
    monkeypatch.setattr(zoo, "REGISTRY", zoo._registry())  # what the next start of the app reads
    assert zoo.REGISTRY["mnist-vit"].source == "run" and zoo.REGISTRY["mnist-vit"].trained
    model, _ = zoo.load("mnist-vit")
    assert model.config.grid_size == (4, 4) and model.config.patch_dim == 49
    # a second stage of the preset from the finished run (the preset's model is the run's model)
    first_run = str(tmp_path / "cache" / "runs" / "mnist-vit")
    again = ["--preset", "mnist-vit", "--data", str(tmp_path), "--name", "mnist-vit-2", "--init-from", first_run]
    cfg = parse_args([*again, "--epochs", "1", "--crop-padding", "0"])
    second = train(dataclasses.replace(cfg, amp="off", threads=1, eval_every=1))
    assert [stage["name"] for stage in second.stages] == ["mnist-vit", "mnist-vit-2"] and second.epochs == 3


def test_crop_padding_zero_leaves_the_picture_in_place_and_old_checkpoints_still_resume():
    from vitviz.training.train import build_augment

    picture = torch.arange(28 * 28, dtype=torch.uint8).reshape(1, 28, 28)
    still = build_augment(TrainConfig(crop_padding=0, flip=False, augment="none"), (28, 28))
    assert all(torch.equal(still(picture), picture) for _ in range(5))
    shifted = build_augment(TrainConfig(crop_padding=4, flip=False, augment="none"), (28, 28))
    assert any(not torch.equal(shifted(picture), picture) for _ in range(20))
    saved = {k: v for k, v in json.loads(json.dumps(dataclasses.asdict(TrainConfig()))).items() if k != "crop_padding"}
    assert same_recipe(saved, TrainConfig())  # a checkpoint from before the field resumes
    assert not same_recipe(saved, TrainConfig(crop_padding=0))


def test_triangle_schedule_is_airbenchs():
    recipe = TrainConfig(epochs=10, lr=1.5, schedule="triangle")
    lrs = [learning_rate(step, 10, recipe) for step in range(100)]
    assert lrs[0] == pytest.approx(0.2 * 1.5)
    assert max(lrs) == pytest.approx(1.5) and lrs.index(max(lrs)) == 23
    assert lrs[-1] == pytest.approx(1.5 * (1 - 0.93 * 76 / 77))
    assert all(a <= b for a, b in itertools.pairwise(lrs[:24])) and all(a >= b for a, b in itertools.pairwise(lrs[23:]))
    with pytest.raises(ValueError, match="--schedule"):
        learning_rate(0, 10, TrainConfig(schedule="linear"))


def test_lookahead_pulls_the_weights_to_their_average_and_hands_it_over_at_the_end():
    model = torch.nn.Linear(2, 1)
    start = model.weight.detach().clone()
    ahead = train_module.Lookahead(model, total_steps=10)
    with torch.no_grad():
        model.weight.add_(1.0)
    ahead.step(model, 3)  # not a fifth step: nothing moves
    assert torch.equal(model.weight, start + 1)
    ahead.step(model, 5)  # memory 0.95^5 * 0.5^3
    memory = 0.95**5 * 0.5**3
    assert torch.allclose(model.weight, start + (1 - memory))
    with torch.no_grad():
        model.weight.add_(1.0)
    ahead.step(model, 10)  # the last step: memory 1, the weights become the average
    assert torch.allclose(model.weight, start + (1 - memory))


AIRBENCH_CNN = {"stem_width": 24, "widths": [8, 8], "batchnorm_momentum": 0.4, "logit_scale": 1 / 9}


def test_the_airbench_recipe_trains_a_cnn_with_its_stem_and_scales_fixed_and_resumes(dataset, tmp_path, monkeypatch):
    preset = {k: v for k, v in train_module.PRESETS["cifar10-cnn"].items() if k not in ("name", "epochs", "model")}
    changes = {**preset, "batch_size": 32, "lr": 0.1, "whiten_bias_epochs": 1, "epochs": 3, "eval_every": 1}
    recipe = tiny_recipe(dataset, **changes, model=AIRBENCH_CNN)
    real_step = train_module.Lookahead.step
    stem_bias = []

    def stop_after_two_epochs(self, model, step):
        real_step(self, model, step)
        if step == 2 * 9:  # 300 images / 32 = 9 steps an epoch
            stem_bias.append(model.stem.bias.detach().clone())
            raise KeyboardInterrupt

    monkeypatch.setattr(train_module.Lookahead, "step", stop_after_two_epochs)
    with pytest.raises(KeyboardInterrupt):
        train(recipe, out=tmp_path)
    monkeypatch.setattr(train_module.Lookahead, "step", real_step)
    card = train(recipe, out=tmp_path)  # resumes after epoch 1
    assert [row["epoch"] for row in card.history] == [1, 2, 3]
    assert card.test_accuracy > 0.6  # three colour classes, chance is 1/3
    weights = load_file(str(tmp_path / "tiny.safetensors"))
    assert torch.all(weights["groups.0.norm1.weight"] == 1) and torch.all(weights["groups.1.norm2.weight"] == 1)
    images = vdata.load_split(str(dataset), "train", (32, 32)).images
    from vitviz.models.cnn import whitening_filters
    from vitviz.models.config import cifar10_cnn_config

    pre = cifar10_cnn_config().preprocess
    expected = whitening_filters(vdata.normalise(images[:5000], pre), 2)
    assert torch.allclose(weights["stem.weight"], expected)  # computed once, then fixed
    assert not torch.equal(weights["stem.bias"], torch.zeros(24))  # it learned in epoch 1 ...
    assert torch.equal(weights["stem.bias"], stem_bias[0])  # ... and not after (whiten_bias_epochs=1)


def test_cutout_blanks_one_square_inside_every_image():
    pixels = torch.randn(64, 3, 10, 12) + 5.0  # nothing is 0 before
    out = train_module.cutout(pixels.clone(), 4, torch.Generator().manual_seed(0))
    blank = (out == 0).all(dim=1)  # (B, H, W): all channels set to the mean colour
    for square in blank:
        rows, cols = torch.nonzero(square.any(1)).flatten(), torch.nonzero(square.any(0)).flatten()
        assert square.sum() == 16 and len(rows) == len(cols) == 4  # one 4 x 4 square, whole, in the image
        assert rows.max() - rows.min() == 3 and cols.max() - cols.min() == 3
    assert torch.equal(out[~blank[:, None].expand_as(out)], pixels[~blank[:, None].expand_as(out)])
    corners = {tuple(torch.nonzero(square)[0].tolist()) for square in blank}
    assert len(corners) > 10  # drawn anew for every image
    assert torch.equal(train_module.cutout(pixels.clone(), 0, torch.Generator()), pixels)


def test_a_residual_cnn_learns_with_cutout(dataset, tmp_path, monkeypatch):
    blanked = []
    real_cutout = train_module.cutout
    monkeypatch.setattr(train_module, "cutout", lambda p, size, g: blanked.append(size) or real_cutout(p, size, g))
    model = {**AIRBENCH_CNN, "group_convs": 3}
    recipe = tiny_recipe(
        dataset, arch="cnn", optimizer="sgd", lr=0.05, momentum=0.9, cutout=8, model=model, loader="dataloader"
    )
    card = train(recipe, out=tmp_path)
    assert blanked and set(blanked) == {8}  # every training batch
    assert card.test_accuracy > 0.6  # three colour classes, chance is 1/3
    assert "groups.1.conv3.weight" in load_file(str(tmp_path / "tiny.safetensors"))


def test_the_airbench96_preset_builds_its_residual_net():
    cfg = parse_args(["--preset", "cifar10-cnn-96", "--data", "somewhere"])
    assert (cfg.cutout, cfg.crop_padding, cfg.epochs, cfg.arch) == (12, 4, 37, "cnn")
    config = cfg.model_config(list(CIFAR10_CLASSES))
    assert config.widths == (128, 384, 512) and config.group_convs == 3 and config.test_flip
    model = build_model(config)
    assert model.groups[-1].convs[-1] is model.groups[-1].conv3


def test_worker_processes_build_the_very_batches_this_process_would(dataset, tmp_path):
    recipe = tiny_recipe(
        dataset, epochs=2, augment="autoaugment", random_erasing=0.5, cutout=4, mixup_alpha=0.8, loader="dataloader"
    )
    here = train(recipe, out=tmp_path / "here")
    workers = train(dataclasses.replace(recipe, workers=2), out=tmp_path / "workers")

    assert [r["train_loss"] for r in workers.history] == [r["train_loss"] for r in here.history]
    a = load_file(str(tmp_path / "here" / "tiny.safetensors"))
    b = load_file(str(tmp_path / "workers" / "tiny.safetensors"))
    assert all(torch.equal(a[k], b[k]) for k in a)


def test_every_batch_of_a_run_is_its_own_and_augmented(dataset):
    from vitviz.models.data import load_split

    data = load_split(dataset, "train", (32, 32))
    recipe = tiny_recipe(dataset, augment="autoaugment", random_erasing=0.5)
    steps, pre = len(data) // recipe.batch_size, recipe.model_config(data.classes).preprocess
    batches = train_module.TrainingBatches(data, recipe, train_module.build_augment(recipe, (32, 32)), pre, steps)
    first, again, second = batches[0], batches[0], batches[1]
    assert torch.equal(first[0], again[0]) and torch.equal(first[1], again[1])  # its own seeds
    assert not torch.equal(first[0], second[0])
    next_epoch = batches[steps]
    assert not torch.equal(batches.order(0), batches.order(1)) and len(next_epoch[1]) == recipe.batch_size
    plain = vdata.normalise(data.images[batches.order(0)[: recipe.batch_size]], pre)
    assert first[0].shape == plain.shape and not torch.equal(first[0], plain)  # augmented, not the raw images


@pytest.mark.skipif(
    not hasattr(signal, "SIGTSTP") or not os.path.exists("/proc/self/stat"),
    reason="SIGTSTP is a POSIX signal, and the test reads the child's state from /proc (Linux)",
)
def test_the_work_clock_leaves_out_the_time_a_run_was_paused():
    child = textwrap.dedent("""
        import sys, time
        from vitviz.training.train import WorkClock
        with WorkClock() as clock:
            work, wall = clock.now(), time.perf_counter()
            print("ready", flush=True)
            sys.stdin.readline()  # the parent stops and continues this process meanwhile
            print(clock.now() - work, time.perf_counter() - wall, flush=True)
    """)
    process = subprocess.Popen(
        [sys.executable, "-c", child], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, cwd=REPO
    )
    try:
        assert process.stdout.readline().strip() == "ready"
        process.send_signal(signal.SIGTSTP)
        deadline = time.monotonic() + 10
        while Path(f"/proc/{process.pid}/stat").read_text().split(") ")[1][0] != "T":  # stopped
            assert time.monotonic() < deadline, "the process did not stop on SIGTSTP"
            time.sleep(0.05)
        time.sleep(1.5)
        process.send_signal(signal.SIGCONT)
        process.stdin.write("go\n")
        process.stdin.flush()
        work, wall = map(float, process.stdout.readline().split())
    finally:
        process.kill()
        process.wait()
    assert wall >= 1.5 and work < 0.5


def test_training_on_a_cpu_takes_the_explicit_attention_path():
    model = build_model(ViTConfig(image_size=32, patch_size=8, num_classes=3, **{**TINY, "depth": 2}))
    train_module.choose_attention_path(model, torch.device("cpu"))
    assert [block.attn.fused_attn for block in model.blocks] == [False, False]
    train_module.choose_attention_path(model, torch.device("cuda"))
    assert [block.attn.fused_attn for block in model.blocks] == [True, True]


def test_the_device_loader_trains_and_resumes_where_it_stopped(dataset, tmp_path, monkeypatch):
    recipe = tiny_recipe(
        dataset, epochs=2, loader="device", augment="autoaugment", crop_padding=4, mixup_alpha=0.8,
        cutmix_alpha=1.0, mix_prob=0.5, random_erasing=0.25, cutout=4,
    )  # fmt: skip
    straight = train(recipe, out=tmp_path / "straight")
    assert straight.recipe["loader"] == "device" and straight.history[-1]["train_loss"] < 1.2

    stop_after_first_epoch(recipe, tmp_path / "resumed", monkeypatch)
    resumed = train(recipe, out=tmp_path / "resumed")
    assert [row["epoch"] for row in resumed.history] == [1, 2]
    a = load_file(str(tmp_path / "straight" / "tiny.safetensors"))
    b = load_file(str(tmp_path / "resumed" / "tiny.safetensors"))
    assert all(torch.equal(a[k], b[k]) for k in a)
    other = train(dataclasses.replace(recipe, loader="dataloader"), out=tmp_path / "dataloader")
    assert other.history[0]["train_loss"] != straight.history[0]["train_loss"]  # other batches: another recipe


def test_a_run_begun_before_the_device_loader_goes_on_with_the_dataloader(dataset, tmp_path, monkeypatch):
    recipe = tiny_recipe(dataset, epochs=2, augment="trivialaugment", loader="dataloader")
    straight = train(recipe, out=tmp_path / "straight")
    stop_after_first_epoch(recipe, tmp_path / "old", monkeypatch)
    state = torch.load(tmp_path / "old" / "checkpoint.pt", weights_only=True)
    del state["train_config"]["loader"]  # as a checkpoint written before the field
    torch.save(state, tmp_path / "old" / "checkpoint.pt")

    resumed = train(dataclasses.replace(recipe, loader=TrainConfig().loader), out=tmp_path / "old")  # the same command
    assert resumed.recipe["loader"] == "dataloader"
    assert resumed.history[1]["train_loss"] == pytest.approx(straight.history[1]["train_loss"], rel=1e-5)


def test_a_deadline_stops_after_an_epoch_with_a_checkpoint_and_the_same_call_finishes(dataset, tmp_path, monkeypatch):
    recipe = tiny_recipe(dataset, epochs=3, checkpoint_every=2)
    saved = []
    real_save = train_module.save_atomic
    monkeypatch.setattr(
        train_module, "save_atomic", lambda obj, path: saved.append(obj["epoch"]) or real_save(obj, path)
    )
    interim = train(recipe, out=tmp_path, deadline=time.monotonic())  # no time for a second epoch
    assert interim.interim == "checkpoint after epoch 1 of 3" and saved == [1]
    assert not (tmp_path / "tiny.safetensors").exists()
    finished = train(recipe, out=tmp_path)
    assert saved == [1, 2, 3] and not finished.interim  # every second epoch, and the last
    assert [row["epoch"] for row in finished.history] == [1, 2, 3] and (tmp_path / "tiny.safetensors").exists()


def test_a_taught_run_resumes_with_its_teacher_moved_to_another_folder(dataset, teacher_file, tmp_path, monkeypatch):
    recipe = tiny_recipe(dataset, name="taught", epochs=2, teacher=str(teacher_file))
    stop_after_first_epoch(recipe, tmp_path / "taught", monkeypatch)
    moved = tmp_path / "carried" / teacher_file.name
    moved.parent.mkdir()
    shutil.copy(teacher_file, moved)
    shutil.copy(teacher_file.with_suffix(".json"), moved.with_suffix(".json"))
    card = train(dataclasses.replace(recipe, teacher=str(moved)), out=tmp_path / "taught")
    assert [row["epoch"] for row in card.history] == [1, 2] and card.recipe["teacher"] == str(moved)


def test_every_preset_resolves_to_the_recipe_it_had():
    """Each preset's whole recipe, as ``--preset NAME`` resolves it, against train_presets.json
    (written when the presets became commented recipes): a preset changes only on purpose (then
    write its new values there), and a new preset needs an entry."""
    expected = json.loads((Path(__file__).parent / "train_presets.json").read_text())
    resolved = {
        name: json.loads(json.dumps(dataclasses.asdict(dataclasses.replace(TrainConfig(), **preset))))
        for name, preset in PRESETS.items()
    }
    assert sorted(resolved) == sorted(expected)
    for name, recipe in expected.items():
        assert resolved[name] == recipe, name


def _tiny_step(cfg: TrainConfig, steps_per_epoch: int = 4) -> train_module.Step:
    model = build_model(cfg.model_config(["red", "green", "blue"]))
    optimizer = train_module.build_optimizer(model, cfg, torch.device("cpu"))
    return train_module.Step(
        cfg, model, model, optimizer, lookahead=None, criterion=torch.nn.CrossEntropyLoss(), teacher=None,
        teach=None, answers=None, pre=model.config.preprocess, num_classes=3, steps_per_epoch=steps_per_epoch,
        memory_format=torch.contiguous_format, dtype=None, device=torch.device("cpu"),
    )  # fmt: skip


def test_the_optimiser_phase_gives_airbench_its_sgd_and_the_vit_adamw():
    cnn = tiny_recipe(Path("unused"), **{k: v for k, v in PRESETS["cifar10-cnn"].items() if k != "model"})
    cnn = dataclasses.replace(cnn, model=AIRBENCH_CNN)
    model = build_model(cnn.model_config(["red", "green", "blue"]))
    train_module.freeze_for_recipe(model, cnn, epoch=0)
    sgd = train_module.build_optimizer(model, cnn, torch.device("cpu"))
    assert isinstance(sgd, torch.optim.SGD) and sgd.defaults["nesterov"] and sgd.defaults["momentum"] == 0.85
    assert [g["lr_scale"] for g in sgd.param_groups] == [1.0, 1.0, 64.0]  # BatchNorm biases learn 64x faster
    assert not any(p is model.stem.weight for g in sgd.param_groups for p in g["params"])  # fixed for good

    adamw = _tiny_step(tiny_recipe(Path("unused"))).optimizer
    assert isinstance(adamw, torch.optim.AdamW) and not adamw.defaults["fused"]  # fused only on a GPU
    assert [g["weight_decay"] for g in adamw.param_groups] == [0.05, 0.0]


def test_a_step_and_an_epoch_follow_the_schedule_and_move_the_weights():
    cfg = tiny_recipe(Path("unused"), epochs=2, warmup_epochs=1, norm_lr_scale=4.0)
    step = _tiny_step(cfg)
    before = [p.detach().clone() for p in step.model.parameters()]
    pixels, labels = torch.randn(8, 3, 32, 32), torch.arange(8) % 3
    loss, logits, lr = train_module.train_step(step, pixels, labels, 1, 2, torch.Generator().manual_seed(0))
    assert lr == learning_rate(1 * 4 + 2, 4, cfg) and logits.shape == (8, 3) and torch.isfinite(loss)
    assert [g["lr"] for g in step.optimizer.param_groups] == [lr, lr, 4 * lr]
    assert any(not torch.equal(a, b) for a, b in zip(before, step.model.parameters(), strict=True))

    loss_sum, correct, seen, last_lr = train_module.train_epoch(
        step, iter([(pixels, labels, torch.arange(8))] * 4), epoch=1
    )
    assert seen == 32 and 0 <= correct <= 32 and loss_sum > 0 and last_lr == learning_rate(1 * 4 + 3, 4, cfg)


def test_resume_reads_back_what_a_checkpoint_holds_and_refuses_another_recipe(tmp_path):
    cfg = tiny_recipe(tmp_path, epochs=3)
    step = _tiny_step(cfg)
    data = type("Data", (), {"fingerprint": "the same bytes"})()
    progress = train_module.Progress(epoch=1, history=[{"epoch": 1}], wall=2.0, machines=["NVIDIA H200"])
    state = train_module.checkpoint_state(cfg, step.model.config, step, progress, data, teacher_card=None)
    torch.save(state, tmp_path / "checkpoint.pt")

    fresh = _tiny_step(cfg)
    here = train_module.Progress(machines=["CPU (2 threads)"])
    args = (here, data, None, fresh.model, fresh.optimizer, None, torch.device("cpu"))
    again, resumed = train_module.resume(tmp_path / "checkpoint.pt", cfg, *args)
    assert again == cfg and (resumed.epoch, resumed.history, resumed.wall) == (1, [{"epoch": 1}], 2.0)
    assert resumed.machines == ["NVIDIA H200", "CPU (2 threads)"]  # it moved: both, in order
    for a, b in zip(step.model.state_dict().values(), fresh.model.state_dict().values(), strict=True):
        assert torch.equal(a, b)
    with pytest.raises(ValueError, match="different recipe"):
        train_module.resume(tmp_path / "checkpoint.pt", dataclasses.replace(cfg, lr=1e-4), *args)


def test_the_hardware_label_counts_threads_in_words(monkeypatch):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    before = torch.get_num_threads()
    try:
        torch.set_num_threads(1)
        assert train_module.hardware_label().endswith(", 1 thread)")
        torch.set_num_threads(2)
        assert train_module.hardware_label().endswith(", 2 threads)")
    finally:
        torch.set_num_threads(before)


def test_snapshots_keep_the_chosen_epochs_in_float16_and_the_history_beside_them(dataset, tmp_path):
    recipe = tiny_recipe(dataset, epochs=3, eval_every=3)
    card = train(recipe, out=tmp_path, snapshots=train_module.Snapshots.parse("0, 2,end"))
    folder = tmp_path / train_module.SNAPSHOTS
    assert sorted(p.name for p in folder.glob("*.safetensors")) == [
        "epoch-0000.safetensors", "epoch-0002.safetensors", "epoch-0003.safetensors"
    ]  # fmt: skip
    final = load_file(str(tmp_path / "tiny.safetensors"))
    last = load_file(str(folder / "epoch-0003.safetensors"))
    assert all(last[key].dtype == torch.float16 and torch.equal(last[key], final[key].half()) for key in final)
    assert not torch.equal(load_file(str(folder / "epoch-0000.safetensors"))["head.weight"], last["head.weight"])
    record = train_module.read_snapshots(folder)
    assert [s["epoch"] for s in record["snapshots"]] == [0, 2, 3]
    # epoch 2 is evaluated for its snapshot although eval_every is 3; the card's rows are the history's
    assert [row["epoch"] for row in record["history"]] == [0, 1, 2, 3] and record["history"][1:] == card.history
    assert "test_accuracy" not in card.history[0] and "test_accuracy" in card.history[1]
    assert record["snapshots"][2]["test_accuracy"] == card.test_accuracy
    assert {"test_accuracy", "test_loss"} <= set(record["snapshots"][0])
    model = build_model(config_from_dict(record["config"]))
    model.load_state_dict({k: v.float() for k, v in last.items()})  # the config builds what the file holds
    with pytest.raises(ValueError, match="0,1,5,20,end"):
        train_module.Snapshots.parse("0,five")
    assert not train_module.Snapshots.parse("") and train_module.snapshots_arg(["--snapshots", "1,end"]).end
    assert parse_args(["--snapshots", "1,end"]) == parse_args([])  # not part of the recipe
