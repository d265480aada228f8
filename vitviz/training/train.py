"""Train a ViT on CIFAR-10 (or any ImageFolder): the recipe behind the shipped model.

    python -m vitviz train --data ../shared/data/cifar10-jpeg --name cifar10-vit --epochs 100
    torchrun --nproc_per_node 2 -m vitviz.training.train --data ... --name ...   # DistributedDataParallel

Runs resume by themselves: every epoch writes a checkpoint to ~/.cache/vitviz/runs/<name>/,
and starting the same command again continues from it. ``pkill -TSTP -f vitviz.training.train`` pauses a
run (``-CONT`` lets it go on); its epoch times leave the pause out. When the last epoch ends, the weights
(safetensors) and a json card with the config, the recipe and the per-epoch history are written
beside the checkpoint.

A run can start from another run's weights with a schedule of its own (a warm restart, or a
second stage with a gentler recipe):

    python -m vitviz train --data ... --name cifar10-vit-2 --init-from ~/.cache/vitviz/runs/cifar10-vit

Its card then carries the whole lineage: the earlier stages' recipes and histories, with epochs
counted from the very first one.

The same command trains the CNN the ViT is compared with (``--arch cnn``), and a ViT can learn
from any zoo classifier as its teacher (DeiT's distillation, Touvron et al. 2021):

    python -m vitviz train --arch cnn --name cifar10-cnn --optimizer sgd --lr 0.2 ...
    python -m vitviz train --name cifar10-vit-kd --teacher cifar10-cnn --distill hard ...

The teacher runs in eval mode on the very batch the student sees (augmented and mixed), or
(``--teacher-sees image``) answers each training image once before the first step. ``--teacher a+b``
teaches with the mean of several teachers' logits (an ensemble, ``Ensemble``).

``--snapshots 0,1,5,20,end`` keeps the model as it was after those epochs (0: before the first
step; end: the last), in float16, in ``<run folder>/snapshots/`` (``write_snapshot`` says the form).

Batches are built where the model trains (``--loader device``, ``vitviz.training.augment``): the training
split sits there as one uint8 tensor and each batch is augmented whole; ``--loader dataloader``
augments one image at a time in ``--workers`` processes, as runs begun before it did.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import logging
import math
import os
import platform
import signal
import sys
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch
import torch.distributed as dist
import torch.nn.functional as F
from safetensors.torch import load_file, save_file
from torch import Tensor, nn
from torchvision.transforms import v2
from tqdm import tqdm

from vitviz import commandline
from vitviz.analyses.evaluate import weights_hash
from vitviz.models import zoo
from vitviz.models.card import MACHINES_JOIN, ModelCard
from vitviz.models.cnn import ConvNet, init_airbench
from vitviz.models.config import ModelConfig, Preprocess, cifar10_cnn_config, cifar10_vit_config, config_from_dict
from vitviz.models.convert import load_state_dict_strict
from vitviz.models.data import ImageSet, cache_dir, describe, load_split, normalise, save_atomic, spread_subset
from vitviz.models.model import build_model, set_fused_attention
from vitviz.models.precision import native_bf16
from vitviz.training.augment import BatchAugment, to_device

log = logging.getLogger(__name__)


COMPILE_MODES = ("off", "default", "reduce-overhead", "max-autotune", "max-autotune-no-cudagraphs")
# The recipe's fields with a fixed set of values: a TrainConfig refuses any other when it is
# made, and the command line offers these (a typo is refused before any data is read).
CHOICES = {
    "arch": ("vit", "cnn"),
    "optimizer": ("adamw", "sgd"),
    "schedule": ("cosine", "triangle"),
    "cnn_init": ("default", "airbench"),
    "augment": ("autoaugment", "trivialaugment", "randaugment", "none"),
    "distill": ("hard", "soft"),
    "teacher_sees": ("batch", "image"),
    "compile": COMPILE_MODES,
    "loader": ("device", "dataloader"),
}


@dataclass
class TrainConfig:
    """The training recipe (AdamW, warmup + cosine, label smoothing, strong augmentation)."""

    name: str = "cifar10-vit"
    data: str | None = None
    arch: str = "vit"  # "vit" or "cnn"
    optimizer: str = "adamw"  # "adamw" or "sgd" (Nesterov momentum)
    momentum: float = 0.9
    epochs: int = 100
    batch_size: int = 128
    lr: float = 1e-3
    min_lr: float = 1e-5
    weight_decay: float = 0.05
    warmup_epochs: int = 5
    schedule: str = "cosine"  # "cosine" (warmup, then cosine to min_lr) or "triangle" (airbench's)
    norm_lr_scale: float = 1.0  # learning-rate factor for normalisation layers (airbench's 64 for BatchNorm biases)
    cnn_init: str = "default"  # "airbench": whitened frozen stem, identity-started convs, BatchNorm scales fixed at 1
    whiten_bias_epochs: int = 3  # with cnn_init "airbench": epochs the whitened stem's bias trains before it freezes
    lookahead: bool = False  # airbench's lookahead: every 5 steps the weights move to an average that tightens
    label_smoothing: float = 0.1
    augment: str = "autoaugment"  # "autoaugment", "trivialaugment", "randaugment" or "none"
    flip: bool = True  # random horizontal flips (not for digits)
    crop_padding: int = 4  # random crops of the image padded (by reflection) this many pixels a side; 0: none
    mixup_alpha: float = 0.8
    cutmix_alpha: float = 1.0
    mix_prob: float = 1.0
    random_erasing: float = 0.25
    cutout: int = 0  # a square of this side, at a random place inside every training image, set to the mean colour
    grad_clip: float = 1.0
    amp: str = "auto"  # "auto", "bf16" or "off"
    seed: int = 0
    limit_train: int | None = None
    limit_test: int | None = None
    threads: int | None = None
    loader: str = "device"  # "device": batches built whole where the model trains (vitviz.training.augment); "dataloader": one image at a time
    workers: int = (
        0  # with loader "dataloader": processes that build the batches (augment, erase, cut out); 0: this process
    )
    compile: str = "off"  # torch.compile the training step's student and teacher: "off" or a mode ("default", "reduce-overhead", ...)
    eval_every: int = 1
    checkpoint_every: int = (
        1  # epochs between checkpoints (the last epoch, and a run stopped for time, always write one)
    )
    init_from: str | None = None  # a run folder, checkpoint.pt or shipped .safetensors to start from
    # with init_from, a ViT that many blocks deep: each block it lacks is a copy of the one before,
    # whose last layers (attention's projection, the MLP's second) start at zero (``grown``)
    grow_depth: int = 0
    teacher: str | None = None  # a zoo name (or path) whose predictions the student also learns from; a+b: their mean
    distill: str = "hard"  # "hard" (DeiT: the teacher's top-1 as a label) or "soft" (KL at distill_tau)
    distill_alpha: float = 0.5  # weight of the teacher's term; the label loss gets 1 - alpha
    distill_tau: float = 1.0  # temperature of soft distillation
    # what the teacher answers: "batch", the student's own batch (augmented and mixed) every step;
    # "image", each training image once before the first step (the mean over it and its mirror
    # where the run flips), the answer every shifted or flipped view of it then learns. On a CPU
    # that saves the teacher's forward pass, a third of a grey ViT's step (docs/training.md).
    teacher_sees: str = "batch"
    model: dict[str, Any] = field(default_factory=dict)  # ViTConfig or CNNConfig overrides

    def __post_init__(self) -> None:
        for name, allowed in CHOICES.items():
            if getattr(self, name) not in allowed:
                flag = "--" + name.replace("_", "-")
                raise ValueError(f"{flag} must be one of {', '.join(allowed)}, not {getattr(self, name)!r}.")
        mixes = self.mix_prob > 0 and (self.mixup_alpha > 0 or self.cutmix_alpha > 0)
        if self.teacher_sees == "image" and mixes:
            raise ValueError(
                "--teacher-sees image answers each image once, so it cannot answer a mixed one: "
                "set --mixup-alpha 0 --cutmix-alpha 0, or let the teacher see the batch."
            )

    def model_config(self, classes: list[str]) -> ModelConfig:
        overrides = dict(self.model)
        overrides.setdefault("num_classes", len(classes))
        overrides.setdefault("class_names", tuple(classes))
        if self.arch == "cnn":
            return cifar10_cnn_config(**overrides)
        return cifar10_vit_config(**overrides)


# ---------------------------------------------------------------------------------------------
# Presets: named recipes (``--preset NAME``; a flag given beside one overrides it). Each reads
# like airbench's ``hyp``: the recipe a preset starts from, then every knob it sets, with why.
# ---------------------------------------------------------------------------------------------

# Keller Jordan's cifar10-airbench (airbench94): its ``hyp`` in our loop, for the CNN presets.
AIRBENCH_RECIPE = dict(
    arch="cnn",
    # opt: SGD with Nesterov momentum. airbench states lr and weight decay "per 1024 examples" on
    # a summed loss, decoupled from the momentum (its 11.5 and 0.0153 at momentum 0.85); on the
    # batch's mean loss they are these.
    optimizer="sgd",
    momentum=0.85,
    batch_size=1024,
    lr=1.5,
    weight_decay=0.00133,
    norm_lr_scale=64.0,  # airbench's bias_scaler: BatchNorm biases learn 64x faster (their scales stay at 1)
    lookahead=True,  # every 5 steps the weights go back to an average whose memory grows, and end as it
    grad_clip=0.0,  # airbench does not clip
    # schedule
    schedule="triangle",  # 0.2 lr up to lr over the first 23% of the steps, then down to 0.07 lr
    warmup_epochs=0,  # the triangle's rise is its warmup
    # net: how it starts, and what stays fixed
    cnn_init="airbench",  # a 2x2 stem that whitens the patches (fixed), convolutions that start as the identity
    whiten_bias_epochs=3,  # the stem's bias learns for 3 epochs, then freezes too
    # aug: airbench's flip and translate only
    crop_padding=2,  # shifts of up to 2 pixels (flips are TrainConfig's default)
    augment="none",
    mixup_alpha=0.0,
    cutmix_alpha=0.0,
    random_erasing=0.0,
    # loss
    label_smoothing=0.2,
)
# airbench94's net: its BatchNorm momentum 0.6 is torch's 0.4 (torch weighs the new batch, airbench
# the running average), fast enough for lookahead to help; logits scaled by 1/9 (its scaling_factor)
AIRBENCH_NET = {"batchnorm_momentum": 0.4, "logit_scale": 1 / 9}

# The seed notes' MNIST ViT: 28x28 grayscale, 7x7 patches (16 of them, 49 numbers each), D = 128,
# 3 encoder blocks.
SEED_MNIST_VIT = {"image_size": 28, "patch_size": 7, "in_chans": 1, "embed_dim": 128, "depth": 3, "num_heads": 4}
# Its recipe: AdamW, a short warmup, cosine, label smoothing, and no augmentation but flips. No
# random crops and no erasing: a shift of up to 4 of 28 pixels moves a garment by more than half a
# 7-pixel patch, and a ViT this small, with no convolution to share what it learns across
# positions, underfit with them (docs/training.md).
SEED_VIT_RECIPE = dict(
    # opt
    batch_size=128,
    lr=1e-3,
    min_lr=1e-5,
    weight_decay=0.05,
    # schedule
    epochs=30,
    warmup_epochs=2,
    # aug: flips only (TrainConfig's default)
    augment="none",
    crop_padding=0,
    random_erasing=0.0,
    mixup_alpha=0.0,
    cutmix_alpha=0.0,
    # loss
    label_smoothing=0.1,
    # run
    eval_every=2,
)
# Fashion-MNIST's and MNIST's pixels: their training split's mean and spread; light things on a dark ground
FASHION_MNIST_PIXELS = {"resize": [28, 28], "mean": [0.2860], "std": [0.3530], "dark_background": True}
MNIST_PIXELS = {"resize": [28, 28], "mean": [0.1307], "std": [0.3081], "dark_background": True}

# The grey ViT on a 7 x 7 grid of 4-pixel patches (49 tokens of 16 numbers), and the knobs of
# learning from fashion-mnist-cnn's soft answers: KL at temperature 1 for half the loss, with the
# shifts of up to 2 pixels that a 4-pixel patch tolerates (docs/training.md).
GREY_GRID_7 = {**SEED_MNIST_VIT, "patch_size": 4, "preprocess": FASHION_MNIST_PIXELS}
TAUGHT_BY_GREY_CNN = dict(
    teacher="fashion-mnist-cnn", distill="soft", distill_tau=1.0, distill_alpha=0.5, crop_padding=2
)
# The deeper, narrower grey ViT of the peers (6 blocks of D = 64, 4 heads, MLP ratio 2, dropout 0.1,
# 205,962 parameters) on the 7 x 7 grid, taught by fashion-mnist-cnn: its stages differ in schedule.
DEEP_GREY = dict(
    SEED_VIT_RECIPE,
    **TAUGHT_BY_GREY_CNN,
    data="fashion-mnist",
    eval_every=2,
    model={**GREY_GRID_7, "embed_dim": 64, "depth": 6, "mlp_ratio": 2.0, "drop_rate": 0.1},
)
# The seed's grey ViT taught by fashion-mnist-cnn's answers given once (the image and its mirror),
# with shifts of 1 pixel: half a 7-pixel patch's tolerance of the deeper ViT's 2 (docs/training.md).
SEED_TAUGHT = dict(
    SEED_VIT_RECIPE,
    **{**TAUGHT_BY_GREY_CNN, "crop_padding": 1},
    data="fashion-mnist",
    teacher_sees="image",
    model={**SEED_MNIST_VIT, "preprocess": FASHION_MNIST_PIXELS},
)
# A later stage, from trained weights: one warmup epoch, half the first stage's rate.
LATER_STAGE = dict(warmup_epochs=1, lr=5e-4)

PRESETS: dict[str, dict[str, Any]] = {
    # airbench94: its net and recipe, over 18 epochs where it has 9.9
    "cifar10-cnn": dict(
        AIRBENCH_RECIPE,
        name="cifar10-cnn",
        epochs=18,
        eval_every=2,
        model=dict(AIRBENCH_NET),
    ),
    # airbench96 (legacy/airbench96.py), the shipped CNN: wider groups with a third, residual
    # convolution, and more augmentation to go with them (docs/training.md)
    "cifar10-cnn-96": dict(
        AIRBENCH_RECIPE,
        name="cifar10-cnn-96",
        lr=1.174,  # airbench96's 9 per 1024 examples
        weight_decay=0.00133,  # its 0.012 per 1024 examples
        crop_padding=4,  # translations of up to 4 pixels
        cutout=12,  # a 12-pixel square of every training image set to the mean colour
        epochs=37,  # airbench96 has 45
        eval_every=3,
        model={
            **AIRBENCH_NET,
            "widths": [128, 384, 512],
            "group_convs": 3,  # the third convolution adds its output to the group's after the first
            "test_flip": True,  # answer with the mean of the image's and its mirror image's logits
        },
    ),
    # airbench95: groups of 128/384/384, about 2.5x airbench94's compute. On the JPEG copy
    # airbench94 lands well under its published figure, so a teacher needs the wider net and,
    # like airbench, the mean of its answers for the image and its mirror image (docs/training.md).
    "cifar10-cnn-wide": dict(
        AIRBENCH_RECIPE,
        name="cifar10-cnn-wide",
        lr=1.304,  # airbench95's 10 per 1024 examples
        weight_decay=0.00153,  # the same decay per step as airbench94 (0.0153 per 1024 examples)
        epochs=15,
        eval_every=3,
        model={**AIRBENCH_NET, "widths": [128, 384, 384], "test_flip": True},
    ),
    # Lee, Lee & Song 2021 ("Vision Transformer for Small-Size Datasets"), from scratch and with no
    # teacher: a deeper ViT of narrower heads at the shipped shape's cost, the recipe that reaches
    # 93.58% on CIFAR-10 in their paper (docs/training.md has what it reached here).
    "cifar10-vit-lee": dict(
        name="cifar10-vit-lee",
        model={"depth": 9, "num_heads": 12, "mlp_ratio": 2.0},  # 2.7 M parameters, the shipped shape's FLOPs
        # opt: AdamW (stochastic depth 0.1 is the config's default)
        batch_size=256,  # the paper's 128 doubled, as a lent GPU ran it: half the steps
        lr=1e-3,
        min_lr=1e-5,
        weight_decay=0.05,
        # schedule: the paper's 300 passes
        epochs=300,
        warmup_epochs=15,  # then cosine to min_lr
        # aug: crops, flips, AutoAugment, mixing and erasing, as the paper has them
        augment="autoaugment",
        crop_padding=4,
        flip=True,
        mixup_alpha=0.8,  # mixup or CutMix on half the batches
        cutmix_alpha=1.0,
        mix_prob=0.5,
        random_erasing=0.25,
        # loss
        label_smoothing=0.1,
        # run
        eval_every=5,
    ),
    # The seed notes' grey ViT on Fashion-MNIST
    "fashion-mnist-vit": dict(
        SEED_VIT_RECIPE,
        name="fashion-mnist-vit",
        data="fashion-mnist",
        model={**SEED_MNIST_VIT, "preprocess": FASHION_MNIST_PIXELS},
    ),
    # The grey ViT's teacher: airbench94's net on one channel, flips and 2-pixel shifts (docs/training.md).
    "fashion-mnist-cnn": dict(
        AIRBENCH_RECIPE,
        name="fashion-mnist-cnn",
        data="fashion-mnist",
        epochs=10,
        eval_every=2,
        model={
            "image_size": 28,
            "in_chans": 1,
            "stem_width": 8,  # the whitening stem: 2 * C * 2 * 2
            **AIRBENCH_NET,
            "test_flip": True,
            "preprocess": FASHION_MNIST_PIXELS,
        },
    ),
    # The shipped grey ViT's third stage: the same shape, taught by fashion-mnist-cnn (DeiT's hard
    # distillation) with shifts and random erasing, from the shipped weights.
    "fashion-mnist-vit-kd": dict(
        SEED_VIT_RECIPE,
        **LATER_STAGE,
        name="fashion-mnist-vit-kd",
        data="fashion-mnist",
        teacher="fashion-mnist-cnn",
        distill="hard",
        epochs=26,
        crop_padding=2,
        random_erasing=0.25,
        model={**SEED_MNIST_VIT, "preprocess": FASHION_MNIST_PIXELS},
    ),
    # The grey ViT on a 7 x 7 grid of 4-pixel patches (49 tokens of 16 numbers): the seed's width,
    # depth and heads, three times the tokens; what small scratch ViTs on Fashion-MNIST use
    # (docs/training.md). The seed's recipe, flips only, over 50 epochs.
    "fashion-mnist-vit-p4": dict(
        SEED_VIT_RECIPE,
        name="fashion-mnist-vit-p4",
        data="fashion-mnist",
        epochs=50,
        model=GREY_GRID_7,
    ),
    # The 7 x 7 grid's ViT from its own 50 epochs, taught by fashion-mnist-cnn: soft distillation
    # (temperature 1, half the loss) with the 2-pixel shifts a 4-pixel patch tolerates, 25 epochs
    # at half the first rate (docs/training.md).
    "fashion-mnist-vit-p4-kd": dict(
        SEED_VIT_RECIPE,
        **LATER_STAGE,
        **TAUGHT_BY_GREY_CNN,
        name="fashion-mnist-vit-p4-kd",
        data="fashion-mnist",
        epochs=25,
        eval_every=1,
        model=GREY_GRID_7,
    ),
    # The small scratch ViTs that reach 92.3-93.0% on Fashion-MNIST (s-chh's: 4-pixel patches,
    # D = 64, 6 blocks of 4 heads, MLP ratio 2, dropout 0.1, shifts of up to 2 pixels and flips,
    # AdamW at 5e-4 after 10 warmup epochs), taught by fashion-mnist-cnn as the 7 x 7 grid's second
    # stage was, over 100 epochs where they take 200: a run across sessions (docs/training.md).
    "fashion-mnist-vit-deep": dict(DEEP_GREY, name="fashion-mnist-vit-deep", epochs=100, warmup_epochs=10, lr=5e-4),
    # The deeper ViT's second stage, from its checkpoint after epoch 26 of 100: the cosine from
    # where it stood then (4.6e-4) to 1e-5 over 60 epochs, the teacher's answers given once (the
    # image and its mirror; its forward pass was a third of a step); a CPU runs it in fp32
    # (``--amp off``), 1.7-2.4x faster than bf16 for this ViT (docs/training.md).
    "fashion-mnist-vit-deep-2": dict(
        DEEP_GREY, name="fashion-mnist-vit-deep-2", teacher_sees="image", epochs=60, warmup_epochs=0, lr=4.6e-4
    ),
    # The seed's grey ViT (its 4 x 4 grid of 7-pixel patches) taught from its shipped weights by
    # fashion-mnist-cnn's answers given once, with shifts of 1 pixel and flips, over 60 epochs.
    "fashion-mnist-vit-soft": dict(SEED_TAUGHT, **LATER_STAGE, name="fashion-mnist-vit-soft", epochs=60),
    # Its next stage, from its weights: a second, lower cosine (2.5e-4 to 1e-5) over 30 epochs; beside
    # it the same with shifts of up to 2 pixels (docs/training.md).
    "fashion-mnist-vit-soft-2": dict(
        SEED_TAUGHT, name="fashion-mnist-vit-soft-2", epochs=30, warmup_epochs=1, lr=2.5e-4
    ),
    "fashion-mnist-vit-soft-2s": dict(
        SEED_TAUGHT, name="fashion-mnist-vit-soft-2s", epochs=30, warmup_epochs=1, lr=2.5e-4, crop_padding=2
    ),
    # A third, from soft-2's weights: a cosine lower again (1.5e-4 to 1e-5 over 20 epochs)
    "fashion-mnist-vit-soft-3": dict(
        SEED_TAUGHT, name="fashion-mnist-vit-soft-3", epochs=20, warmup_epochs=1, lr=1.5e-4
    ),
    # One long cosine instead of three (from the 90.36% weights shipped before them: 120 epochs of
    # soft's recipe), the next try at 92.5% with the seed's shape (docs/training.md)
    "fashion-mnist-vit-soft-long": dict(SEED_TAUGHT, **LATER_STAGE, name="fashion-mnist-vit-soft-long", epochs=120),
    # The seed's grey ViT (7-pixel patches) grown to 6 blocks from trained weights (``grown``: the
    # copies start as the identity, so it begins at its parent's accuracy), then taught as soft
    # was, a cosine from 3e-4 over 30 epochs: more depth over the same 16 patches, where the
    # seed's 3 blocks flattened near 92.6% (docs/training.md)
    "fashion-mnist-vit-grown": dict(
        SEED_TAUGHT, name="fashion-mnist-vit-grown", grow_depth=6, epochs=30, warmup_epochs=1, lr=3e-4
    ),
    # The same ViT and recipe on handwritten digits
    "mnist-vit": dict(
        SEED_VIT_RECIPE,
        name="mnist-vit",
        data="mnist",
        flip=False,  # a mirrored digit is another glyph
        model={**SEED_MNIST_VIT, "preprocess": MNIST_PIXELS},
    ),
}


def run_dir(name: str) -> Path:
    return cache_dir() / "runs" / name


# how many threads and processes a machine gives the run, whether it compiles the step, in which
# precision it multiplies ("auto" is the machine's choice anyway) and how often it checkpoints: a run
# may move between machines on these (workers build the very batches one process would)
MACHINE_FIELDS = ("threads", "workers", "compile", "amp", "checkpoint_every")
# what a checkpoint written before a field existed did, where that differs from the field's default
BEFORE_FIELD = {"loader": "dataloader"}


def same_recipe(saved: dict[str, Any], cfg: TrainConfig, same_data: bool = False, same_teacher: bool = False) -> bool:
    """Whether a checkpoint's recipe is ``cfg``'s; a field added to TrainConfig after the
    checkpoint was written matches what runs did before it (``BEFORE_FIELD``, else its default).

    Args:
        saved: the checkpoint's train_config.
        cfg: the recipe asked for now.
        same_data: the training split here has the fingerprint the checkpoint recorded, so the
            data may sit in another folder (a lent GPU's copy of the JPEGs, then this machine's).
        same_teacher: the teacher here has the weights the checkpoint recorded, so it may sit in
            another folder too (a lease's CNN, carried back with its ViT).
    """
    now = _jsonable(dataclasses.asdict(cfg))
    before = {**_jsonable(dataclasses.asdict(TrainConfig())), **BEFORE_FIELD}
    free = set(MACHINE_FIELDS) | ({"data"} if same_data else set()) | ({"teacher"} if same_teacher else set())
    same = all(saved.get(key, before[key]) == value for key, value in now.items() if key not in free)
    return same and set(saved) <= set(now)


def as_begun(saved: dict[str, Any], cfg: TrainConfig) -> TrainConfig:
    """``cfg`` with what a checkpoint written before a field existed did (``BEFORE_FIELD``), where
    ``cfg`` leaves that field at its default: a run goes on as it began (the same command resumes
    a run begun before ``loader`` existed with the DataLoader it began with)."""
    default = TrainConfig()
    older = {k: v for k, v in BEFORE_FIELD.items() if k not in saved and getattr(cfg, k) == getattr(default, k)}
    return dataclasses.replace(cfg, **older)


def machines_text(machines: list[str]) -> str:
    """Where a stage trained: one machine's label, or those it moved between in order ("A + B")."""
    return MACHINES_JOIN.join(machines)


def checkpoint_machines(state: dict[str, Any]) -> list[str]:
    """Where a checkpoint's run trained, in order; a checkpoint written before runs could move
    names one machine as "hardware", and an older one none."""
    return state.get("machines") or ([state["hardware"]] if "hardware" in state else [])


# ---------------------------------------------------------------------------------------------
# Lineage: a run that starts from another run's weights
# ---------------------------------------------------------------------------------------------


def lineage_fields(
    name: str,
    recipe: dict[str, Any],
    history: list[dict],
    wall: float,
    lineage: dict[str, Any] | None,
    teacher: dict[str, Any] | None = None,
    hardware: str | None = None,
) -> dict[str, Any]:
    """The card fields that count from the first stage: history, epochs, wall time, stages.

    Args:
        name, recipe: this stage's run name and recipe.
        history: this stage's epochs (numbered from the first stage already).
        wall: this stage's seconds.
        lineage: what came before (``read_run``'s "lineage" of the parent), or None.
        teacher: what ``load_teacher`` recorded of this stage's teacher, if it had one.
        hardware: where this stage trained (``hardware_label``).
    """
    lineage = lineage or {}
    before = lineage.get("epochs", 0)
    fields: dict[str, Any] = {
        "history": list(lineage.get("history", [])) + list(history),
        "epochs": before + len(history),
        "planned_epochs": before + recipe.get("epochs", len(history)),
        "wall_time_s": round(lineage.get("wall_s", 0.0) + wall, 1),
    }
    if lineage:
        taught = {"teacher": teacher} if teacher else {}
        where = {"hardware": hardware} if hardware else {}
        stage = {"name": name, "epochs": len(history), "recipe": recipe, **where, **taught}
        fields["stages"] = list(lineage.get("stages", [])) + [stage]
    return fields


def _as_parent(card: ModelCard, source: str) -> dict[str, Any]:
    """The lineage a new stage inherits from a card (a finished run's, a checkpoint's or a shipped model's)."""
    return {
        "epochs": card.epochs,
        "wall_s": card.wall_time_s,
        "history": card.history,
        "stages": card.runs,
        "source": source,
    }


def read_run(source: Path | str, checkpoint: bool = False) -> tuple[dict[str, Tensor], ModelConfig, ModelCard]:
    """Weights, config and card of a training run, never running code from the files.

    Args:
        source: a run folder (``~/.cache/vitviz/runs/<name>``: its final weights, else its
            latest checkpoint), a run's checkpoint.pt, or a .safetensors file with its json card
            beside it (a shipped model).
        checkpoint: read a run folder's latest checkpoint even when its final weights exist.

    Returns:
        (state dict, config, card); a checkpoint's card is built from it and has "interim".

    Raises:
        FileNotFoundError: with a sentence saying what is missing.
    """
    source = Path(source).expanduser()
    if source.is_dir():
        final = source / f"{source.name}.safetensors"
        if not checkpoint and final.exists():
            source = final
        elif (source / "checkpoint.pt").exists():
            source = source / "checkpoint.pt"
        elif checkpoint:
            raise FileNotFoundError(f"{source} has no checkpoint.pt.")
        else:
            raise FileNotFoundError(f"{source} holds neither finished weights ({final.name}) nor a checkpoint.pt.")
    if not source.exists():
        raise FileNotFoundError(f"{source} does not exist.")
    if source.suffix == ".safetensors":
        card_path = source.with_suffix(".json")
        if not card_path.exists():
            raise FileNotFoundError(f"{source.name} has no json card beside it ({card_path.name}) to say its config.")
        card = ModelCard.read(card_path)
        return load_file(str(source)), config_from_dict(card.config), card
    state = torch.load(source, map_location="cpu", weights_only=True)
    recipe = state["train_config"]
    lineage = state.get("lineage")
    name, hardware = recipe.get("name", source.parent.name), machines_text(checkpoint_machines(state)) or None
    teacher = state.get("teacher")  # None for a run without one, or a checkpoint older than the record
    card = ModelCard(
        name=source.parent.name,
        config=state["vit_config"],
        recipe=recipe,
        hardware=hardware,
        teacher=teacher,
        **lineage_fields(name, recipe, state["history"], state["wall_s"], lineage, teacher, hardware),
    )
    card.interim = f"checkpoint after epoch {card.epochs} of {card.planned_epochs}"
    return state["model"], config_from_dict(state["vit_config"]), card


# ---------------------------------------------------------------------------------------------
# Distributed helpers (torchrun sets RANK / WORLD_SIZE; a plain run is rank 0 of 1)
# ---------------------------------------------------------------------------------------------


def _dist_setup() -> tuple[int, int]:
    world = int(os.environ.get("WORLD_SIZE", "1"))
    if world > 1 and not dist.is_initialized():
        dist.init_process_group("nccl" if torch.cuda.is_available() else "gloo")
    return (dist.get_rank(), world) if world > 1 else (0, 1)


def _all_sum(values: list[float], device: torch.device) -> list[float]:
    if not dist.is_initialized():
        return values
    t = torch.tensor(values, dtype=torch.float64, device=device)
    dist.all_reduce(t)
    return t.tolist()


# ---------------------------------------------------------------------------------------------
# Augmentation on uint8 tensors held in memory
# ---------------------------------------------------------------------------------------------


def build_augment(cfg: TrainConfig, size: tuple[int, int]) -> v2.Transform:
    """Per-image augmentation of one uint8 (C, H, W) tensor."""
    policies = {
        "autoaugment": lambda: v2.AutoAugment(v2.AutoAugmentPolicy.CIFAR10),
        "trivialaugment": v2.TrivialAugmentWide,
        "randaugment": v2.RandAugment,
    }
    steps: list[v2.Transform] = []
    if cfg.crop_padding > 0:
        steps.append(v2.RandomCrop(size, padding=cfg.crop_padding, padding_mode="reflect"))
    steps += [v2.RandomHorizontalFlip()] if cfg.flip else []
    if cfg.augment != "none":
        steps.append(policies[cfg.augment]())
    return v2.Compose(steps) if steps else v2.Identity()


def random_erase(pixels: Tensor, prob: float, generator: torch.Generator) -> Tensor:
    """Erase one random rectangle (2-33% of the area) with noise in a fraction of the images."""
    if prob <= 0:
        return pixels
    eraser = v2.RandomErasing(p=1.0, value=0.0)
    chosen = torch.rand(pixels.shape[0], generator=generator) < prob
    for i in torch.nonzero(chosen).flatten().tolist():
        pixels[i] = eraser(pixels[i])
    return pixels


def cutout(pixels: Tensor, size: int, generator: torch.Generator) -> Tensor:
    """Set a size x size square of every normalised image to 0 (the mean colour), its corner drawn
    uniformly so the square lies inside the image (airbench96's cutout, DeVries & Taylor 2017)."""
    if size <= 0:
        return pixels
    batch, _, height, width = pixels.shape
    top = torch.randint(0, height - size + 1, (batch, 1, 1), generator=generator).to(pixels.device)
    left = torch.randint(0, width - size + 1, (batch, 1, 1), generator=generator).to(pixels.device)
    rows = torch.arange(height, device=pixels.device).view(1, -1, 1)
    cols = torch.arange(width, device=pixels.device).view(1, 1, -1)
    square = (rows >= top) & (rows < top + size) & (cols >= left) & (cols < left + size)  # (B, H, W)
    return pixels.masked_fill(square[:, None], 0.0)


class TrainingBatches(torch.utils.data.Dataset):
    """Batch k of a run (epoch k // steps_per_epoch): the epoch's shuffled images, augmented one
    by one (crop, flip, policy), normalised, erased and cut out.

    Every batch draws from its own seeds, so it comes out the same whichever process builds it:
    with ``--workers`` DataLoader processes build the next batches while the model trains (on a
    GPU one process would hold the model back: docs/training.md).
    """

    def __init__(
        self, data: ImageSet, cfg: TrainConfig, augment: v2.Transform | None, pre: Preprocess, steps_per_epoch: int,
        rank: int = 0, world: int = 1,
    ) -> None:  # fmt: skip
        self.data, self.cfg, self.augment, self.pre = data, cfg, augment, pre
        self.steps_per_epoch, self.rank, self.world = steps_per_epoch, rank, world
        self._order: tuple[int, Tensor] | None = None

    def order(self, epoch: int) -> Tensor:
        """The epoch's shuffled indices of this rank's share."""
        if self._order is None or self._order[0] != epoch:
            generator = torch.Generator().manual_seed(self.cfg.seed * 100_003 + epoch)
            self._order = (epoch, torch.randperm(len(self.data), generator=generator)[self.rank :: self.world])
        return self._order[1]

    def __len__(self) -> int:
        return self.cfg.epochs * self.steps_per_epoch

    def indices(self, k: int) -> tuple[Tensor, int]:
        """Batch k's images (indices into the data) and the seed its draws start from."""
        epoch, step = divmod(k, self.steps_per_epoch)
        size = self.cfg.batch_size
        seed = (self.cfg.seed * 100_003 + epoch) * 1_000_003 + step * 131 + self.rank
        return self.order(epoch)[step * size : (step + 1) * size], seed

    def __getitem__(self, k: int) -> tuple[Tensor, Tensor, Tensor]:
        """Batch k: its pixels, labels and indices into the data."""
        batch, seed = self.indices(k)
        with torch.random.fork_rng(devices=[]):  # the policies draw from the global generator
            torch.manual_seed(seed)
            generator = torch.Generator().manual_seed(seed + 1)
            images = torch.stack([self.augment(img) for img in self.data.images[batch]])
            pixels = random_erase(normalise(images, self.pre), self.cfg.random_erasing, generator)
            pixels = cutout(pixels, self.cfg.cutout, generator)
        return pixels, self.data.labels[batch], batch


class DeviceBatches(TrainingBatches):
    """The same batches of images (the same shuffled order), built whole on ``device``: the
    training split sits there as one uint8 tensor, and each batch is cropped, flipped, put through
    the policy, normalised, erased and cut out in a few dozen tensor operations (``vitviz.training.augment``),
    from draws made on the CPU with the batch's own seed. No DataLoader processes: on a GPU the
    CPU only launches the work.
    """

    def __init__(
        self, data: ImageSet, cfg: TrainConfig, size: tuple[int, int], pre: Preprocess, steps_per_epoch: int,
        device: torch.device, rank: int = 0, world: int = 1,
    ) -> None:  # fmt: skip
        super().__init__(data, cfg, None, pre, steps_per_epoch, rank, world)
        self.images = data.images.to(device)  # (N, C, H, W) uint8: CIFAR-10's training split is 150 MB
        self.labels = data.labels.to(device)
        self.batch_augment = BatchAugment(
            size, pre, crop_padding=cfg.crop_padding, flip=cfg.flip, policy=cfg.augment,
            random_erasing=cfg.random_erasing, cutout=cfg.cutout,
        )  # fmt: skip

    def __getitem__(self, k: int) -> tuple[Tensor, Tensor, Tensor]:
        batch, seed = self.indices(k)
        draws = self.batch_augment.draw(len(batch), torch.Generator().manual_seed(seed))
        index = to_device(batch, self.images.device)
        return self.batch_augment(self.images[index], draws), self.labels[index], index


def training_batches(
    data: ImageSet, cfg: TrainConfig, size: tuple[int, int], pre: Preprocess, steps_per_epoch: int,
    device: torch.device, start_epoch: int = 0, rank: int = 0, world: int = 1,
) -> Iterable[tuple[Tensor, Tensor, Tensor]]:  # fmt: skip
    """The run's batches (pixels, labels, indices into ``data``) from ``start_epoch`` on: built
    whole on ``device`` (loader "device"), or one image at a time in ``cfg.workers`` DataLoader
    processes (or this one)."""
    if cfg.loader == "device":
        batches = DeviceBatches(data, cfg, size, pre, steps_per_epoch, device, rank, world)
        return (batches[k] for k in range(start_epoch * steps_per_epoch, len(batches)))
    dataset = TrainingBatches(data, cfg, build_augment(cfg, size), pre, steps_per_epoch, rank, world)
    return torch.utils.data.DataLoader(
        dataset,
        batch_size=None,  # an item is already a batch
        sampler=range(start_epoch * steps_per_epoch, len(dataset)),
        num_workers=cfg.workers,
        prefetch_factor=8 if cfg.workers else None,
        pin_memory=torch.cuda.is_available(),
    )


def mix_batch(
    pixels: Tensor, labels: Tensor, num_classes: int, cfg: TrainConfig, generator: torch.Generator
) -> tuple[Tensor, Tensor]:
    """Mixup or CutMix (chosen at random) on a batch; returns pixels and soft targets."""
    targets = F.one_hot(labels, num_classes).float()
    use = cfg.mixup_alpha > 0 or cfg.cutmix_alpha > 0
    if not use or torch.rand(1, generator=generator).item() >= cfg.mix_prob:
        return pixels, targets
    perm = torch.randperm(pixels.shape[0], generator=generator).to(pixels.device)  # drawn on the CPU, as before
    use_cutmix = cfg.cutmix_alpha > 0 and (cfg.mixup_alpha <= 0 or torch.rand(1, generator=generator).item() < 0.5)
    alpha = cfg.cutmix_alpha if use_cutmix else cfg.mixup_alpha
    lam = torch.distributions.Beta(alpha, alpha).sample().item()
    if use_cutmix:
        height, width = pixels.shape[-2:]
        cut_h, cut_w = int(height * math.sqrt(1 - lam)), int(width * math.sqrt(1 - lam))
        cy = int(torch.randint(height, (1,), generator=generator))
        cx = int(torch.randint(width, (1,), generator=generator))
        top, bottom = max(cy - cut_h // 2, 0), min(cy + cut_h // 2, height)
        left, right = max(cx - cut_w // 2, 0), min(cx + cut_w // 2, width)
        pixels = pixels.clone()
        pixels[:, :, top:bottom, left:right] = pixels[perm, :, top:bottom, left:right]
        lam = 1 - (bottom - top) * (right - left) / (height * width)
    else:
        pixels = lam * pixels + (1 - lam) * pixels[perm]
    return pixels, lam * targets + (1 - lam) * targets[perm]


# ---------------------------------------------------------------------------------------------
# Distillation: a teacher's answers on the student's own batch
# ---------------------------------------------------------------------------------------------


def renormalise(pixels: Tensor, source: Preprocess, target: Preprocess, size: tuple[int, int]) -> Tensor:
    """A batch normalised for one model, normalised (and resized) for another."""

    def stats(pre: Preprocess) -> tuple[Tensor, Tensor]:
        return (
            torch.tensor(pre.mean, device=pixels.device).view(1, -1, 1, 1),
            torch.tensor(pre.std, device=pixels.device).view(1, -1, 1, 1),
        )

    if source.mean == target.mean and source.std == target.std and tuple(pixels.shape[-2:]) == tuple(size):
        return pixels
    mean, std = stats(source)
    raw = pixels * std + mean  # (B, C, H, W) in [0, 1] (mixed and erased pixels stay as they are)
    if tuple(raw.shape[-2:]) != tuple(size):
        raw = F.interpolate(raw, size=size, mode="bilinear", antialias=True, align_corners=False)
    mean, std = stats(target)
    return (raw - mean) / std


def teacher_input(pixels: Tensor, pre: Preprocess, teacher: nn.Module) -> Tensor:
    """The student's batch (normalised by ``pre``) as ``teacher`` takes it: its normalisation and
    size, channels_last for a CNN."""
    config = teacher.config
    seen = renormalise(pixels, pre, config.preprocess, config.image_size)
    return seen.contiguous(memory_format=torch.channels_last) if isinstance(teacher, ConvNet) else seen


def distillation_loss(student: Tensor, teacher: Tensor, kind: str, tau: float) -> Tensor:
    """The teacher's term: cross-entropy with its top-1 ("hard", DeiT) or KL at a temperature ("soft")."""
    if kind == "hard":
        return F.cross_entropy(student, teacher.argmax(dim=-1))
    if kind == "soft":
        log_p = F.log_softmax(student / tau, dim=-1)
        log_q = F.log_softmax(teacher / tau, dim=-1)
        return F.kl_div(log_p, log_q, reduction="batchmean", log_target=True) * tau * tau
    raise ValueError(f'--distill must be "hard" or "soft", not {kind!r}.')


class Ensemble(nn.Module):
    """Several teachers answering as one: the mean of their logits, as a CNN averages its mirror in.
    Its members share their classes, input size and normalisation (``load_teacher`` checks), so it
    takes their input as each of them does; a CNN member gets it channels_last."""

    def __init__(self, members: list[nn.Module]) -> None:
        super().__init__()
        self.members = nn.ModuleList(members)
        self.config = members[0].config

    def forward(self, pixels: Tensor) -> Tensor:
        as_cnn = pixels.contiguous(memory_format=torch.channels_last)
        logits = [member(as_cnn if isinstance(member, ConvNet) else pixels) for member in self.members]
        return torch.stack(logits).mean(0)  # (B, classes)


TEACHERS_JOIN = "+"  # --teacher a+b: an ensemble of the zoo classifiers (or files) a and b


def load_teacher(
    name: str, classes: list[str], device: torch.device, test_set: ImageSet | None = None
) -> tuple[nn.Module, dict[str, Any]]:
    """A zoo classifier in eval mode, frozen, and what the card records of it. ``name`` may join
    several with "+": an ``Ensemble`` of them, whose card records each member and the ensemble's
    own accuracy on ``test_set`` (a member's card cannot say it).

    Raises:
        ValueError: when it predicts other classes than the data's, or an ensemble's members read
            their images differently.
    """
    names = name.split(TEACHERS_JOIN)
    members = [_load_member(member, classes, device) for member in names]
    if len(members) == 1:
        return members[0]
    first = members[0][0].config
    for model, about in members[1:]:
        if _reads(model.config) != _reads(first):
            raise ValueError(
                f"The teachers {names[0]} and {about['name']} read images differently (size, normalisation or "
                "mirror): an ensemble's members must take the same input."
            )
    ensemble = Ensemble([model for model, _ in members]).eval()
    accuracy = None
    if test_set is not None:
        accuracy = round(evaluate_accuracy(ensemble, test_set, first.preprocess, device, None)[0], 4)  # float32
    about = {
        "name": name,
        "weights_sha256": weights_hash(ensemble),
        "test_accuracy": accuracy,
        "members": [about for _, about in members],
    }
    return ensemble, about


def _reads(config: ModelConfig) -> tuple[Any, ...]:
    """How a teacher reads an image: its size, its normalisation, and whether it averages its mirror in."""
    return config.image_size, config.preprocess, getattr(config, "test_flip", False)


def _load_member(name: str, classes: list[str], device: torch.device) -> tuple[nn.Module, dict[str, Any]]:
    """One zoo classifier as a teacher (``load_teacher``)."""
    loaded = zoo.load(name, device)
    config = loaded.model.config
    if list(config.class_names) != list(classes):
        raise ValueError(
            f"The teacher {name} predicts {list(config.class_names)[:3]}..., the data has {classes[:3]}...: choose a teacher trained on these classes."
        )
    for param in loaded.model.parameters():
        param.requires_grad_(False)
    if isinstance(loaded.model, ConvNet):  # channels_last: the CNN's convolutions run faster on the CPU
        loaded.model.to(memory_format=torch.channels_last)
    about = {
        "name": name,
        "weights_sha256": weights_hash(loaded.model),
        "test_accuracy": loaded.spec.card.test_accuracy,
    }
    return loaded.model.eval(), about


# ---------------------------------------------------------------------------------------------
# Schedule, precision, evaluation
# ---------------------------------------------------------------------------------------------


@torch.no_grad()
def teacher_answers(
    teacher: nn.Module, data: ImageSet, pre: Preprocess, flip: bool, device: torch.device,
    dtype: torch.dtype | None, batch_size: int = 500,
) -> Tensor:  # fmt: skip
    """The teacher's logits for every image of ``data`` as it is, the mean with its mirror's when
    ``flip``: (N, classes) float32 on ``device``, what ``--teacher-sees image`` teaches every view.
    A CNN that answers as that mean already (``test_flip``) sees each image once."""
    mirror = flip and not getattr(teacher.config, "test_flip", False)
    answers = []
    for start in range(0, len(data), batch_size):
        pixels = normalise(data.images[start : start + batch_size].to(device), pre)
        views = [pixels, pixels.flip(-1)] if mirror else [pixels]
        with torch.autocast(device.type, dtype=dtype or torch.float32, enabled=dtype is not None):
            logits = [teacher(teacher_input(view, pre, teacher)).float() for view in views]
        answers.append(torch.stack(logits).mean(0))
    return torch.cat(answers)


def learning_rate(step: int, steps_per_epoch: int, cfg: TrainConfig) -> float:
    """Linear warmup for warmup_epochs, then cosine decay to min_lr; or, with the "triangle"
    schedule (airbench), from 0.2 lr up to lr over the first 23% of the steps, then linearly
    down to 0.07 lr."""
    total = cfg.epochs * steps_per_epoch
    if cfg.schedule == "triangle":
        peak = int(0.23 * total)
        if step < peak:
            return cfg.lr * (0.2 + 0.8 * step / peak)
        return cfg.lr * (1.0 - 0.93 * (step - peak) / max(1, total - peak))
    warmup = cfg.warmup_epochs * steps_per_epoch
    if step < warmup:
        return cfg.lr * (step + 1) / warmup
    progress = (step - warmup) / max(1, total - warmup)
    return cfg.min_lr + 0.5 * (cfg.lr - cfg.min_lr) * (1 + math.cos(math.pi * min(1.0, progress)))


def choose_attention_path(model: nn.Module, device: torch.device) -> None:
    """On a CPU, every Attention in ``model`` computes softmax(Q K^T / sqrt(d)) V explicitly
    (``fused_attn = False``); on a GPU, with ``scaled_dot_product_attention``. PyTorch's CPU
    kernel for the fused call is slow to differentiate at these lengths (65 tokens), so the
    explicit path makes a training step faster there (docs/training.md; the bench measures it
    again as train_step_explicit_over_fused)."""
    set_fused_attention(model, fused=device.type != "cpu")


def autocast_dtype(amp: str, device: torch.device) -> torch.dtype | None:
    """bf16 where the hardware multiplies it natively (``precision.native_bf16``: CUDA with bf16,
    CPUs with AVX-512 BF16 or AMX), else full precision; "bf16" or "off" decide by themselves."""
    if amp == "off":
        return None
    if amp == "bf16":
        return torch.bfloat16
    return torch.bfloat16 if native_bf16(device) else None


@torch.no_grad()
def evaluate_accuracy(
    model: nn.Module,
    data: ImageSet,
    pre: Preprocess,
    device: torch.device,
    dtype: torch.dtype | None,
    batch_size: int = 500,
    rank: int = 0,
    world: int = 1,
    memory_format: torch.memory_format = torch.contiguous_format,
) -> tuple[float, float]:
    """(top-1 accuracy, mean loss) on a dataset, sharded across ranks."""
    model.eval()
    correct = total = loss_sum = 0.0
    indices = torch.arange(rank, len(data), world)
    for start in range(0, len(indices), batch_size):
        batch = indices[start : start + batch_size]
        pixels = normalise(data.images[batch].to(device), pre).contiguous(memory_format=memory_format)
        labels = data.labels[batch].to(device)
        with torch.autocast(device.type, dtype=dtype or torch.float32, enabled=dtype is not None):
            logits = model(pixels)
        loss_sum += F.cross_entropy(logits.float(), labels, reduction="sum").item()
        correct += (logits.argmax(-1) == labels).sum().item()
        total += len(batch)
    correct, total, loss_sum = _all_sum([correct, total, loss_sum], device)
    return correct / max(total, 1), loss_sum / max(total, 1)


# ---------------------------------------------------------------------------------------------
# airbench's devices for the CNN: fixed parameters, parameter groups, lookahead
# ---------------------------------------------------------------------------------------------


def freeze_for_recipe(model: nn.Module, cfg: TrainConfig, epoch: int) -> None:
    """With cnn_init "airbench": the whitened stem's filters and every BatchNorm scale stay
    fixed; the stem's bias learns for the first whiten_bias_epochs epochs only."""
    if cfg.cnn_init == "default":
        return
    if not isinstance(model, ConvNet):
        raise ValueError('--cnn-init "airbench" is for --arch cnn.')
    model.stem.weight.requires_grad_(False)
    model.stem.bias.requires_grad_(epoch < cfg.whiten_bias_epochs)
    for module in model.modules():
        if isinstance(module, nn.BatchNorm2d):
            module.weight.requires_grad_(False)


def parameter_groups(model: nn.Module, cfg: TrainConfig) -> list[dict[str, Any]]:
    """Weight decay on matrices and filters (not on the position embedding, [CLS], biases or
    norms); with norm_lr_scale != 1 the normalisation layers get a group of their own whose
    learning rate is that many times larger. Parameters fixed for good are left out."""

    def decays(name: str, param: Tensor) -> bool:
        return param.ndim >= 2 and "pos_embed" not in name and "cls_token" not in name

    def is_norm(name: str) -> bool:
        return cfg.norm_lr_scale != 1.0 and "norm" in name

    named = [(n, p) for n, p in model.named_parameters() if p.requires_grad]  # after freeze_for_recipe(epoch=0)
    groups = [
        {"params": [p for n, p in named if decays(n, p)], "weight_decay": cfg.weight_decay, "lr_scale": 1.0},
        {"params": [p for n, p in named if not decays(n, p) and not is_norm(n)], "weight_decay": 0.0, "lr_scale": 1.0},
    ]
    if cfg.norm_lr_scale != 1.0:
        groups.append(
            {"params": [p for n, p in named if is_norm(n)], "weight_decay": 0.0, "lr_scale": cfg.norm_lr_scale}
        )
    return groups


class WorkClock:
    """Seconds of work: ``time.perf_counter`` less the time the process spent stopped by SIGTSTP,
    so a run paused for an hour (``pkill -TSTP -f vitviz.training.train``, then ``-CONT``) does not record an
    hour-long epoch or a slow speed. A SIGSTOP cannot be caught: pause runs with TSTP.

    Use it as a context manager: it takes SIGTSTP (in the main thread, where the platform has it)
    and gives the previous handler back on exit.
    """

    def __init__(self) -> None:
        self.stopped = 0.0  # seconds spent stopped so far
        self._previous: Any = None

    def __enter__(self) -> WorkClock:
        if hasattr(signal, "SIGTSTP") and threading.current_thread() is threading.main_thread():
            self._previous = signal.signal(signal.SIGTSTP, self._stop)
        return self

    def __exit__(self, *exc: object) -> None:
        if self._previous is not None:
            signal.signal(signal.SIGTSTP, self._previous)
            self._previous = None

    def _stop(self, signum: int, frame: object) -> None:
        began = time.perf_counter()
        os.kill(os.getpid(), signal.SIGSTOP)  # the process stops here until a SIGCONT
        self.stopped += time.perf_counter() - began

    def now(self) -> float:
        return time.perf_counter() - self.stopped


class Lookahead:
    """airbench's lookahead: every 5 steps an average of the weights (and BatchNorm statistics)
    takes a step towards them, and the weights jump back to it; the average's memory
    0.95^5 * (progress)^3 grows towards the end, and the last step hands the weights the average."""

    every = 5

    def __init__(self, model: nn.Module, total_steps: int) -> None:
        self.total_steps = total_steps
        self.average = {k: v.detach().clone() for k, v in model.state_dict().items() if v.is_floating_point()}

    @torch.no_grad()
    def step(self, model: nn.Module, step: int) -> None:
        """After optimizer step number ``step`` (counted from 1)."""
        if step % self.every and step < self.total_steps:
            return
        memory = 1.0 if step >= self.total_steps else 0.95**5 * (step / self.total_steps) ** 3
        state = model.state_dict()
        for key, average in self.average.items():
            average.lerp_(state[key], 1 - memory)
            state[key].copy_(average)


# ---------------------------------------------------------------------------------------------
# The loop, in phases (``train`` calls them in this order): init (data, model, teacher), the
# optimiser, resume, the epoch and its steps, evaluation and checkpoint, the end
# ---------------------------------------------------------------------------------------------


def load_data(cfg: TrainConfig) -> tuple[ImageSet, ImageSet, tuple[int, int]]:
    """The training and test splits at the model's input size, and that size; ``limit_train``
    keeps a random subset drawn from the seed, ``limit_test`` one spread over the classes."""
    size = (32, 32)
    model_size = cfg.model.get("image_size", 32)
    if model_size:
        size = (model_size, model_size) if isinstance(model_size, int) else tuple(model_size)
    train_set = load_split(cfg.data, "train", size)
    test_set = load_split(cfg.data, "test", size)
    if cfg.limit_train:
        train_set = train_set.subset(
            torch.randperm(len(train_set), generator=torch.Generator().manual_seed(cfg.seed))[: cfg.limit_train]
        )
    if cfg.limit_test:
        test_set = spread_subset(test_set, cfg.limit_test)
    return train_set, test_set, size


# Settings of a model's config that its weights do not depend on: a run that continues trained
# weights may ask for others (stochastic depth for a student that learns its own training views by
# heart, docs/training.md). Every other setting stays the continued model's.
REGULARISATION = ("drop_rate", "attn_drop_rate", "drop_path_rate")


def starting_point(
    cfg: TrainConfig, classes: list[str]
) -> tuple[ModelConfig, dict[str, Tensor] | None, dict[str, Any] | None]:
    """The model's config and, with ``--init-from``, the weights it starts from and the stages
    before it (its lineage); without it, ``cfg``'s config, no weights and no lineage.

    Raises:
        ValueError: when ``--model`` would change the model it continues (other than its
            ``REGULARISATION``), or that model knows other classes than the data's.
    """
    vit_config = cfg.model_config(classes)  # a ViTConfig or, with --arch cnn, a CNNConfig
    if not cfg.init_from:
        if cfg.grow_depth:  # a preset may name the depth, the command line the weights
            raise ValueError("--grow-depth grows the model that --init-from names: give it one.")
        return vit_config, None, None
    asked = vit_config.to_dict()  # --model (or a preset's model) as the config writes it: 28 -> [28, 28]
    start_weights, vit_config, parent = read_run(cfg.init_from)
    kept = vit_config.to_dict()
    changed = sorted(
        k for k in cfg.model if k not in REGULARISATION and _jsonable(kept.get(k)) != _jsonable(asked.get(k))
    )
    if changed:
        raise ValueError(
            f"--model cannot change a model that --init-from continues ({', '.join(changed)}): it keeps its config."
        )
    regularised = {k: asked[k] for k in REGULARISATION if k in cfg.model}
    if regularised:  # the same weights, trained with other dropout or stochastic depth
        vit_config = dataclasses.replace(vit_config, **regularised)
    if list(vit_config.class_names) != list(classes):
        raise ValueError(f"{cfg.init_from} knows the classes {list(vit_config.class_names)}, the data has {classes}.")
    if cfg.grow_depth:
        vit_config, start_weights = grown(vit_config, start_weights, cfg.grow_depth)
    return vit_config, start_weights, _as_parent(parent, str(cfg.init_from))


def grown(config: ModelConfig, weights: dict[str, Tensor], depth: int) -> tuple[ModelConfig, dict[str, Tensor]]:
    """A ViT ``depth`` blocks deep that answers exactly as ``weights`` do (Net2Net's deeper net,
    Chen et al. 2016, for pre-LayerNorm blocks): after each of its blocks, in turn, comes a copy of
    that block (or several, spread evenly) whose attention output projection and second MLP layer are zero, so both its
    residual branches add nothing until training moves them. The copies keep the block's
    normalisations, queries, keys, values and first MLP layer, so their first gradients already
    point where the block they copy looks.

    Raises:
        ValueError: for a CNN, or a ``depth`` not above the model's own.
    """
    old = getattr(config, "depth", None)
    if getattr(config, "arch", "vit") != "vit" or old is None:
        raise ValueError("--grow-depth grows a ViT's blocks; this model has none.")
    if depth <= old:
        raise ValueError(f"--grow-depth {depth} must be more than the model's {old} blocks.")
    origin = [i * old // depth for i in range(depth)]  # 3 blocks grown to 6: 0, 0, 1, 1, 2, 2
    fresh = [i > 0 and origin[i] == origin[i - 1] for i in range(depth)]  # a copy, not the block itself
    out = {k: v for k, v in weights.items() if not k.startswith("blocks.")}
    for i, (source, copy) in enumerate(zip(origin, fresh, strict=True)):
        prefix = f"blocks.{source}."
        for key, value in weights.items():
            if not key.startswith(prefix):
                continue
            part = key[len(prefix) :]
            silent = copy and part.split(".")[:2] in (["attn", "proj"], ["mlp", "fc2"])
            out[f"blocks.{i}.{part}"] = torch.zeros_like(value) if silent else value.clone()
    return dataclasses.replace(config, depth=depth), out


def build_student(
    cfg: TrainConfig,
    vit_config: ModelConfig,
    start_weights: dict[str, Tensor] | None,
    train_set: ImageSet,
    device: torch.device,
) -> tuple[nn.Module, torch.memory_format]:
    """The model to train, on ``device``: from ``start_weights``, else freshly initialised from
    the seed (airbench's CNN whitens its stem on the training images), with the recipe's fixed
    parameters frozen; and the memory format its batches take."""
    torch.manual_seed(cfg.seed)
    model = build_model(vit_config).to(device)
    choose_attention_path(model, device)
    if start_weights is not None:
        load_state_dict_strict(model, start_weights)
    elif cfg.cnn_init == "airbench" and isinstance(model, ConvNet):
        pixels = normalise(spread_subset(train_set, 5000).images, vit_config.preprocess)  # every class
        init_airbench(model, pixels.to(device))
    freeze_for_recipe(model, cfg, epoch=0)
    # channels_last for the CNN: its convolutions run faster in that layout on the CPU (docs/training.md)
    memory_format = torch.channels_last if getattr(vit_config, "arch", "vit") == "cnn" else torch.contiguous_format
    return model.to(memory_format=memory_format), memory_format


def build_optimizer(model: nn.Module, cfg: TrainConfig, device: torch.device) -> torch.optim.Optimizer:
    """SGD with Nesterov momentum, or AdamW, over ``parameter_groups`` (each step sets a group's
    learning rate to the schedule's times its ``lr_scale``)."""
    groups = parameter_groups(model, cfg)
    if cfg.optimizer == "sgd":
        return torch.optim.SGD(groups, lr=cfg.lr, momentum=cfg.momentum, nesterov=True)
    # fused on a GPU: one kernel updates every tensor, where a small model's step waits on launches
    return torch.optim.AdamW(groups, lr=cfg.lr, betas=(0.9, 0.999), fused=device.type == "cuda")


# ---------------------------------------------------------------------------------------------
# Snapshots: the model along the way, for a page on how it learned
# ---------------------------------------------------------------------------------------------

SNAPSHOTS = "snapshots"  # the run folder's sub-folder of snapshots
SNAPSHOTS_JSON = "snapshots.json"


@dataclass(frozen=True)
class Snapshots:
    """The epochs after which a run keeps its model (counted as the card counts them, from the
    first stage; 0 is the weights before the first step), and whether it keeps the last."""

    epochs: frozenset[int] = frozenset()
    end: bool = False

    @classmethod
    def parse(cls, text: str | None) -> Snapshots:
        """ "0,1,5,20,end" -> Snapshots({0, 1, 5, 20}, end=True); "" or None: none.

        Raises:
            ValueError: an entry is neither a whole number from 0 nor "end".
        """
        entries = [entry.strip() for entry in (text or "").split(",") if entry.strip()]
        wrong = [e for e in entries if e != "end" and not (e.isascii() and e.isdigit() and len(e) <= 7)]
        if wrong:
            raise ValueError(f"--snapshots takes epochs and 'end' separated by commas (0,1,5,20,end), not {wrong}.")
        return cls(frozenset(int(e) for e in entries if e != "end"), "end" in entries)

    def __bool__(self) -> bool:
        return bool(self.epochs) or self.end

    def wants(self, epoch: int, last: bool) -> bool:
        return epoch in self.epochs or (last and self.end)


def write_snapshot(
    model: nn.Module, config: ModelConfig, epoch: int, row: dict[str, Any], folder: Path, history: list[dict]
) -> Path:
    """Keep ``model`` as it is after ``epoch`` in ``folder`` (a run's ``snapshots/``), and the
    run's history beside it. The form, for whoever draws how the model learned:

    - ``epoch-0005.safetensors``: the state dict after epoch 5, every floating-point tensor in
      float16 (metadata: "epoch"); ``build_model(config_from_dict(config))`` loads it.
    - ``snapshots.json``: {"config": the model config, "snapshots": [{"epoch", "file",
      "test_accuracy", "test_loss", "train_loss", "train_accuracy"} of each kept epoch, in order],
      "history": every epoch's row as the card has it, after a row {"epoch": 0, "test_accuracy",
      "test_loss"} for the weights before the first step where epoch 0 was kept}.

    Returns:
        The snapshot's file.
    """
    folder.mkdir(parents=True, exist_ok=True)
    name = f"epoch-{epoch:04d}.safetensors"
    tensors = {
        key: (value.half() if value.is_floating_point() else value).detach().contiguous().cpu()
        for key, value in model.state_dict().items()
    }
    tmp = folder / f".{name}.tmp"
    save_file(tensors, str(tmp), metadata={"format": "pt", "vitviz": "1", "epoch": str(epoch)})
    os.replace(tmp, folder / name)
    numbers = ("test_accuracy", "test_loss", "train_loss", "train_accuracy")
    record_history(folder, config, history, {"epoch": epoch, "file": name, **{k: row[k] for k in numbers if k in row}})
    return folder / name


def record_history(folder: Path, config: ModelConfig, history: list[dict], kept: dict[str, Any] | None = None) -> None:
    """Write ``snapshots.json`` in ``folder`` again with the run's ``history`` so far, and the
    snapshot ``kept`` added to its list (the row of epoch 0, written with its snapshot, stays)."""
    record = read_snapshots(folder) or {"snapshots": [], "history": []}
    snapshots = [entry for entry in record["snapshots"] if not kept or entry["epoch"] != kept["epoch"]]
    snapshots += [kept] if kept else []
    start = [row for row in record["history"] if row["epoch"] == 0]
    if kept and kept["epoch"] == 0:
        start = [{key: value for key, value in kept.items() if key != "file"}]
    _write_json_atomic(
        folder / SNAPSHOTS_JSON,
        {
            "config": config.to_dict(),
            "snapshots": sorted(snapshots, key=lambda entry: entry["epoch"]),
            "history": start + [row for row in history if row["epoch"] != 0],
        },
    )


def read_snapshots(folder: Path) -> dict[str, Any] | None:
    """The ``snapshots.json`` ``write_snapshot`` keeps in ``folder``, or None where there is none."""
    path = Path(folder) / SNAPSHOTS_JSON
    return json.loads(path.read_text()) if path.is_file() else None


def _write_json_atomic(path: Path, data: Any) -> None:
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text(json.dumps(data, indent=1))
    os.replace(tmp, path)


@dataclass
class Progress:
    """How far a run has come: what its checkpoint keeps besides the weights and the optimiser."""

    epoch: int = 0  # epochs of this stage done
    history: list[dict] = field(default_factory=list)  # one row per epoch, numbered from the first stage
    wall: float = 0.0  # seconds of work (``WorkClock``) so far
    machines: list[str] = field(default_factory=list)  # where it trained, in order: a run may move
    lineage: dict[str, Any] | None = None  # the stages before it (``--init-from``)


def resume(
    path: Path,
    cfg: TrainConfig,
    progress: Progress,
    train_set: ImageSet,
    teacher_card: dict[str, Any] | None,
    model: nn.Module,
    optimizer: torch.optim.Optimizer,
    lookahead: Lookahead | None,
    device: torch.device,
) -> tuple[TrainConfig, Progress]:
    """Load the run's own checkpoint into the model, the optimiser, lookahead and torch's random
    state; returns the recipe as the run began (``as_begun``) and its progress.

    Raises:
        ValueError: when the checkpoint's recipe is not ``cfg`` (data and teacher may have moved
            to another folder with the same bytes), or its teacher's weights changed since.
    """
    out = path.parent
    state = torch.load(path, weights_only=True, map_location=device)
    same_data = state.get("train_fingerprint") == train_set.fingerprint
    taught_by = (state.get("teacher") or {}).get("weights_sha256")
    same_teacher = bool(teacher_card and taught_by == teacher_card["weights_sha256"])
    cfg = as_begun(state["train_config"], cfg)
    if not same_recipe(state["train_config"], cfg, same_data, same_teacher):
        raise ValueError(
            f"A run named {cfg.name!r} with a different recipe exists at {out}: "
            "resume it with the same flags, or choose another --name."
        )
    if teacher_card and taught_by and taught_by != teacher_card["weights_sha256"]:
        raise ValueError(
            f"The run {cfg.name!r} at {out} was taught by {cfg.teacher} with weights {taught_by[:12]}; "
            f"{cfg.teacher} now has weights {teacher_card['weights_sha256'][:12]}. Resume it with the same "
            "teacher, or start another --name."
        )
    model.load_state_dict(state["model"])
    optimizer.load_state_dict(state["optimizer"])
    before = checkpoint_machines(state)
    machines = before if before[-1:] == progress.machines else before + progress.machines
    if lookahead is not None:
        lookahead.average = state["lookahead"]
    torch.set_rng_state(state["rng"])
    return cfg, Progress(state["epoch"], state["history"], state["wall_s"], machines, state.get("lineage"))


@dataclass
class Step:
    """What every training step works with, fixed for the run."""

    cfg: TrainConfig
    model: nn.Module  # the parameters: clipped, averaged by lookahead, evaluated and saved
    student: nn.Module  # the model as the step calls it (DistributedDataParallel, torch.compile)
    optimizer: torch.optim.Optimizer
    lookahead: Lookahead | None
    criterion: nn.Module
    teacher: nn.Module | None  # its config and class say what its input needs
    teach: nn.Module | None  # the teacher as the step calls it (torch.compile)
    answers: Tensor | None  # with --teacher-sees image: its logits for every training image, else None
    pre: Preprocess  # the student's normalisation, undone for the teacher
    num_classes: int
    steps_per_epoch: int
    memory_format: torch.memory_format
    dtype: torch.dtype | None  # autocast's, or None for full precision
    device: torch.device


def train_step(
    step: Step, pixels: Tensor, labels: Tensor, epoch: int, index: int, generator: torch.Generator,
    answers: Tensor | None = None,
) -> tuple[Tensor, Tensor, float]:  # fmt: skip
    """One optimiser step on one batch on the device (mixed there, at the schedule's learning
    rate, taught where there is a teacher: by ``answers``, its logits for these images computed
    before, or else on this very batch); returns (loss, logits, learning rate)."""
    cfg, device = step.cfg, step.device
    pixels, targets = mix_batch(pixels, labels, step.num_classes, cfg, generator)
    pixels = pixels.contiguous(memory_format=step.memory_format)
    lr = learning_rate(epoch * step.steps_per_epoch + index, step.steps_per_epoch, cfg)
    for group in step.optimizer.param_groups:
        group["lr"] = lr * group.get("lr_scale", 1.0)
    dtype, teacher_logits = step.dtype, answers
    with torch.autocast(device.type, dtype=dtype or torch.float32, enabled=dtype is not None):
        logits = step.student(pixels)
        if step.teacher is not None and teacher_logits is None:
            with torch.no_grad():
                teacher_logits = step.teach(teacher_input(pixels, step.pre, step.teacher)).float()
    loss = step.criterion(logits.float(), targets)
    if step.teacher is not None:
        taught = distillation_loss(logits.float(), teacher_logits, cfg.distill, cfg.distill_tau)
        loss = (1 - cfg.distill_alpha) * loss + cfg.distill_alpha * taught
    step.optimizer.zero_grad(set_to_none=True)
    loss.backward()
    if cfg.grad_clip:
        nn.utils.clip_grad_norm_(step.model.parameters(), cfg.grad_clip)
    step.optimizer.step()
    if step.lookahead is not None:
        step.lookahead.step(step.model, epoch * step.steps_per_epoch + index + 1)
    return loss, logits, lr


def train_epoch(
    step: Step, batches: Iterator[tuple[Tensor, Tensor]], epoch: int, rank: int = 0
) -> tuple[float, float, float, float]:
    """One pass over the training split, from the epoch's own seeds; returns (summed loss,
    correct answers, images) over every process, and the last step's learning rate."""
    cfg = step.cfg
    freeze_for_recipe(step.model, cfg, epoch)
    generator = torch.Generator().manual_seed(cfg.seed * 100_003 + epoch)
    torch.manual_seed(cfg.seed * 100_003 + epoch * 7 + rank)  # stochastic depth's and mixing's draws
    step.student.train()
    totals, seen = torch.zeros(2, device=step.device), 0  # summed loss, correct answers
    bar = tqdm(
        range(step.steps_per_epoch),
        desc=f"epoch {epoch + 1}/{cfg.epochs}",
        disable=rank != 0,
        mininterval=1.0 if sys.stderr.isatty() else 60.0,
        leave=sys.stderr.isatty(),
    )
    for index in bar:
        pixels, labels, images = next(batches)
        # to the device while the batch is still in pinned memory, then mixed there: mixed on the
        # CPU, a GPU's batch would wait for the mixing and then be copied from pageable memory
        pixels, labels = pixels.to(step.device, non_blocking=True), labels.to(step.device, non_blocking=True)
        answers = step.answers[images.to(step.device)] if step.answers is not None else None
        loss, logits, lr = train_step(step, pixels, labels, epoch, index, generator, answers)
        # summed where they are: reading them every step would make a GPU wait for each batch
        totals += torch.stack([loss.detach() * len(labels), (logits.argmax(-1) == labels).sum()])
        seen += len(labels)
        if index % 50 == 0 or index + 1 == step.steps_per_epoch:
            bar.set_postfix(loss=f"{totals[0].item() / seen:.3f}", lr=f"{lr:.2e}", refresh=False)
    loss_sum, correct, seen = _all_sum([*totals.tolist(), seen], step.device)
    return loss_sum, correct, seen, lr


def checkpoint_state(
    cfg: TrainConfig,
    vit_config: ModelConfig,
    step: Step,
    progress: Progress,
    train_set: ImageSet,
    teacher_card: dict[str, Any] | None,
) -> dict[str, Any]:
    """What a checkpoint holds: enough to resume the run exactly (``resume``) and to build its
    card (``read_run``)."""
    return {
        "model": step.model.state_dict(),
        "optimizer": step.optimizer.state_dict(),
        "epoch": progress.epoch,
        "history": progress.history,
        "wall_s": progress.wall,
        "rng": torch.get_rng_state(),
        "train_config": _jsonable(dataclasses.asdict(cfg)),
        "vit_config": vit_config.to_dict(),
        "lineage": progress.lineage,
        "machines": progress.machines,
        "train_fingerprint": train_set.fingerprint,
        **({"teacher": teacher_card} if teacher_card else {}),
        **({"lookahead": step.lookahead.average} if step.lookahead is not None else {}),
    }


def train(
    cfg: TrainConfig,
    out: Path | None = None,
    deadline: float | None = None,
    on_checkpoint: Callable[[Path], None] | None = None,
    snapshots: Snapshots = Snapshots(),
) -> ModelCard:
    """Train (or resume) a run; returns its card (config, recipe, history, accuracy).

    Args:
        cfg: the recipe.
        out: the run folder; defaults to ~/.cache/vitviz/runs/<cfg.name>.
        deadline: a ``time.monotonic()`` by which to stop: after an epoch, when another would end
            later, the run writes its checkpoint and returns that checkpoint's card (``interim``
            set, no final weights); the same command resumes it.
        on_checkpoint: called with the run folder after each checkpoint is written (a lease
            copies it where the device brings files back).
        snapshots: the epochs whose model to keep in ``out/snapshots`` (``write_snapshot``); each
            is evaluated on the test split, whatever ``cfg.eval_every`` says. They are not part of
            the recipe: a run resumes with other ones.
    """
    # -- init: processes, device, data, the model and its teacher ----------------------------
    rank, world = _dist_setup()
    device = torch.device(f"cuda:{int(os.environ.get('LOCAL_RANK', 0))}" if torch.cuda.is_available() else "cpu")
    if device.type == "cpu":
        torch.set_num_threads(cfg.threads or max(1, (os.cpu_count() or 1) // world))
    out = Path(out) if out is not None else run_dir(cfg.name)
    if rank == 0:
        out.mkdir(parents=True, exist_ok=True)
    train_set, test_set, size = load_data(cfg)
    vit_config, start_weights, lineage = starting_point(cfg, train_set.classes)
    pre = vit_config.preprocess
    model, memory_format = build_student(cfg, vit_config, start_weights, train_set, device)
    teacher, teacher_card = (
        load_teacher(cfg.teacher, train_set.classes, device, test_set) if cfg.teacher else (None, None)
    )

    # -- optimiser ----------------------------------------------------------------------------
    optimizer = build_optimizer(model, cfg, device)
    dtype = autocast_dtype(cfg.amp, device)
    steps_per_epoch = len(train_set) // (cfg.batch_size * world)
    if steps_per_epoch == 0:
        raise ValueError(f"{len(train_set)} training images are fewer than one batch of {cfg.batch_size * world}.")
    lookahead = Lookahead(model, cfg.epochs * steps_per_epoch) if cfg.lookahead else None

    # -- resume: this run's own checkpoint, where one exists ----------------------------------
    progress = Progress(machines=[hardware_label()], lineage=lineage)
    checkpoint_path = out / "checkpoint.pt"
    if checkpoint_path.exists():
        cfg, progress = resume(
            checkpoint_path, cfg, progress, train_set, teacher_card, model, optimizer, lookahead, device
        )
        if rank == 0:
            log.info("resumed %s at epoch %d", out, progress.epoch)

    answers = None
    if teacher is not None and cfg.teacher_sees == "image":
        answers = teacher_answers(teacher, train_set, pre, cfg.flip, device, dtype)
        if rank == 0:
            log.info("the teacher answered %d training images once", len(answers))

    # -- the step: the student wrapped for several processes and compiled if asked (evaluation
    # runs the model as it is), the teacher beside it
    student: nn.Module = model
    if world > 1:
        student = nn.parallel.DistributedDataParallel(
            model, device_ids=[device.index] if device.type == "cuda" else None
        )
    step = Step(
        cfg, model, compiled(student, cfg.compile), optimizer, lookahead,
        criterion=nn.CrossEntropyLoss(label_smoothing=cfg.label_smoothing),
        teacher=teacher, teach=compiled(teacher, cfg.compile) if teacher is not None else None, answers=answers,
        pre=pre, num_classes=vit_config.num_classes, steps_per_epoch=steps_per_epoch,
        memory_format=memory_format, dtype=dtype, device=device,
    )  # fmt: skip

    # -- the epochs ---------------------------------------------------------------------------
    offset = progress.lineage["epochs"] if progress.lineage else 0  # epochs are counted from the first stage
    start = progress.epoch
    kept = out / SNAPSHOTS
    if start == 0 and offset in snapshots.epochs:  # the weights before the first step
        acc, test_loss = evaluate_accuracy(
            model, test_set, pre, device, dtype, rank=rank, world=world, memory_format=memory_format
        )
        if rank == 0:
            write_snapshot(
                model, vit_config, offset, {"epoch": offset, "test_accuracy": acc, "test_loss": test_loss}, kept, []
            )
    batches = iter(training_batches(train_set, cfg, size, pre, steps_per_epoch, device, start, rank, world))
    stopped = False  # for time (``deadline``), before the schedule's end
    with WorkClock() as clock:  # an epoch's seconds leave out the time the run was paused
        for epoch in range(start, cfg.epochs):
            began, started = time.monotonic(), clock.now()
            loss_sum, correct, seen, lr = train_epoch(step, batches, epoch, rank)
            seconds = clock.now() - started
            progress.epoch, progress.wall = epoch + 1, progress.wall + seconds
            row: dict[str, Any] = {
                "epoch": offset + epoch + 1,
                "train_loss": loss_sum / seen,
                "train_accuracy": correct / seen,
                "lr": lr,
                "seconds": round(seconds, 1),
                "images_per_s": round(seen / seconds, 1),
            }

            # -- evaluation and checkpoint --------------------------------------------------
            last = epoch + 1 == cfg.epochs
            snapshot = snapshots.wants(offset + epoch + 1, last)
            if (epoch + 1) % cfg.eval_every == 0 or last or snapshot:
                acc, test_loss = evaluate_accuracy(
                    model, test_set, pre, device, dtype, rank=rank, world=world, memory_format=memory_format
                )
                row.update(test_accuracy=acc, test_loss=test_loss)
            progress.history.append(row)
            if deadline is not None and not last:  # would another epoch (and its evaluation) end in time?
                late = time.monotonic() + (time.monotonic() - began) > deadline
                stopped = _all_sum([float(late)], device)[0] > 0  # every rank stops at the same epoch
            if rank == 0:
                log.info("epoch %s", json.dumps(row))
            if rank == 0 and snapshot:
                write_snapshot(model, vit_config, row["epoch"], row, kept, progress.history)
            if rank == 0 and ((epoch + 1) % cfg.checkpoint_every == 0 or last or stopped):
                save_atomic(checkpoint_state(cfg, vit_config, step, progress, train_set, teacher_card), checkpoint_path)
                (out / "history.json").write_text(json.dumps(progress.history, indent=1))
                if snapshots and not snapshot:  # the snapshots' history as far as the checkpoint
                    record_history(kept, vit_config, progress.history)
                if on_checkpoint is not None:
                    on_checkpoint(out)
            if dist.is_initialized():
                dist.barrier()
            if stopped:
                log.info("stopped for time after epoch %d of %d; the same command resumes it", epoch + 1, cfg.epochs)
                break

    # -- the end: the card, and the final weights unless the run stopped for time --------------
    card = _card(
        cfg, vit_config, progress.history, progress.wall, progress.lineage, train_set, test_set, world, dtype,
        teacher_card, progress.machines,
    )  # fmt: skip
    if stopped:
        card.interim = f"checkpoint after epoch {card.epochs} of {card.planned_epochs}"
    elif rank == 0:
        weights = {k: v.detach().contiguous().cpu() for k, v in model.state_dict().items()}
        save_file(weights, str(out / f"{cfg.name}.safetensors"), metadata={"format": "pt", "vitviz": "1"})
        card.write(out / f"{cfg.name}.json")
        log.info("wrote %s", out / f"{cfg.name}.safetensors")
    if dist.is_initialized():
        dist.barrier()
        dist.destroy_process_group()
    return card


def compiled(module: nn.Module, mode: str) -> nn.Module:
    """``module`` for the training step: as it is ("off"), or torch.compile'd in ``mode``.

    On the CPU it does not pay (docs/training.md); on a GPU, where a small model's step waits on
    kernel launches, fused kernels and CUDA graphs ("reduce-overhead") may.
    """
    return module if mode == "off" else torch.compile(module, mode=mode)


def _jsonable(value: Any) -> Any:
    return json.loads(json.dumps(value))


def hardware_label() -> str:
    """The GPU's name, or the CPU model and the number of threads torch uses."""
    if torch.cuda.is_available():
        return torch.cuda.get_device_name()
    model = platform.processor() or platform.machine()
    cpuinfo = Path("/proc/cpuinfo")
    if cpuinfo.exists():
        names = [
            line.split(":", 1)[1].strip() for line in cpuinfo.read_text().splitlines() if line.startswith("model name")
        ]
        model = names[0] if names else model
    threads = torch.get_num_threads()
    return f"CPU ({model}, {threads} thread{'s' if threads != 1 else ''})"


def _card(
    cfg: TrainConfig,
    vit_config: ModelConfig,
    history: list[dict],
    wall: float,
    lineage: dict[str, Any] | None,
    train_set: ImageSet,
    test_set: ImageSet,
    world: int,
    dtype: torch.dtype | None,
    teacher: dict[str, Any] | None,
    machines: list[str],
) -> ModelCard:
    final = history[-1] if history else {}
    recipe = _jsonable(dataclasses.asdict(cfg))
    hardware = machines_text(machines)
    return ModelCard(
        name=cfg.name,
        config=vit_config.to_dict(),
        recipe=recipe,
        trained_on=describe(train_set),
        tested_on=describe(test_set),
        test_accuracy=final.get("test_accuracy"),
        hardware=hardware,
        teacher=teacher,
        extra={
            "precision": str(dtype).replace("torch.", "") if dtype else "float32",
            "processes": world,
            "torch": torch.__version__,
        },
        **lineage_fields(cfg.name, recipe, history, wall, lineage, teacher, hardware),
    )


def _yes_no(text: str) -> bool:
    if text.lower() in ("1", "true", "yes", "on"):
        return True
    if text.lower() in ("0", "false", "no", "off"):
        return False
    raise argparse.ArgumentTypeError(f"expected true or false, not {text!r}")


def parse_args(argv: list[str] | None = None) -> TrainConfig:
    parser = commandline.parser("vitviz.training.train", __doc__)
    parser.add_argument(
        "--preset", choices=sorted(PRESETS), default=None, help="a named recipe; other flags override it"
    )
    first = argparse.ArgumentParser(add_help=False)  # the preset first: it sets the other flags' defaults
    first.add_argument("--preset", choices=sorted(PRESETS), default=None)
    preset = PRESETS.get(first.parse_known_args(argv)[0].preset or "", {})
    defaults = dataclasses.replace(TrainConfig(), **preset)
    for f in dataclasses.fields(TrainConfig):
        if f.name == "model":
            continue
        default = getattr(defaults, f.name)
        if isinstance(default, bool):
            kind = _yes_no
        else:
            kind = type(default) if default is not None else (int if f.name.startswith(("limit", "threads")) else str)
        parser.add_argument(
            f"--{f.name.replace('_', '-')}",
            type=kind,
            default=default,
            choices=CHOICES.get(f.name),
            help=f"default: {default}",
        )
    parser.add_argument(
        "--model", default="{}", help='ViTConfig overrides as JSON, e.g. \'{"depth": 2, "embed_dim": 32}\''
    )
    parser.add_argument(
        "--snapshots", default="", help="epochs whose model to keep in float16, and 'end' (e.g. 0,1,5,20,end)"
    )
    args = vars(parser.parse_args(argv))
    args.pop("preset")
    args.pop("snapshots")  # not the recipe: snapshots_arg reads it
    args["model"] = {**defaults.model, **json.loads(args["model"])}  # over the preset's model, if any
    if args["data"] is None and os.environ.get("VITVIZ_DATA"):
        args["data"] = os.environ["VITVIZ_DATA"]
    return TrainConfig(**args)


def snapshots_arg(argv: list[str] | None = None) -> Snapshots:
    """The command line's ``--snapshots`` (``parse_args`` leaves it out of the recipe)."""
    first = argparse.ArgumentParser(add_help=False)
    first.add_argument("--snapshots", default="")
    return Snapshots.parse(first.parse_known_args(argv)[0].snapshots)


def main(argv: list[str] | None = None) -> None:
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(message)s")
    cfg = parse_args(argv)
    card = train(cfg, snapshots=snapshots_arg(argv))
    if int(os.environ.get("RANK", "0")) == 0:
        print(json.dumps({k: card.to_dict().get(k) for k in ("name", "test_accuracy", "epochs", "wall_time_s")}))


if __name__ == "__main__":
    main()
