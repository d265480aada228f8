"""Snapshots of one training run: the model as it was after a few of its epochs, for the page
"How the ViT learned" (``vitviz.steps.learn``). They ship beside the model whose run they follow:

- ``<model>.learn.safetensors``: each snapshot's state dict, its floating-point tensors in float16,
  keys ``epoch{N}/{parameter}`` (epoch 0: the weights before the first step); and ``samples``
  (n, C, H, W) uint8: test images of the run's dataset, one per class, for a session whose own image
  the run's model cannot read; and ``positions/epoch{N}``: the position embeddings (1, T, D) of
  every other epoch the run kept (a few kB each), for the curve of how they formed.
- ``<model>.learn.json``: ``{"run": what run made them (its recipe, planned and trained epochs,
  hardware), "config": the model config, "snapshots": [epochs], "positions": [epochs], "history": a row per epoch
  ("epoch", "test_accuracy", "test_loss", and from epoch 1 "train_loss", "train_accuracy"), the
  row of epoch 0 first, "samples": [{"index", "class"}] (each sample's place in the test split)}``.

``python -m tools.snapshots`` writes them from a run's ``snapshots/`` folder (``vitviz train
--snapshots``); ``write`` is the one writer, ``read`` the one reader.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import torch
from safetensors.torch import load_file, save_file
from torch import Tensor

from vitviz.models.config import ViTConfig, config_from_dict
from vitviz.models.model import VisionTransformer

FOLDER = Path(__file__).resolve().parents[1] / "assets" / "models"  # package data: a wheel carries it
SUFFIX = ".learn"  # <model>.learn.safetensors and <model>.learn.json
SHIPPED = "fashion-mnist-vit"  # the model whose run the shipped snapshots follow
SAMPLES = "samples"
POSITIONS = "positions"


def paths(model: str, folder: Path = FOLDER) -> tuple[Path, Path]:
    """Where the snapshots of ``model``'s run are: (weights, record)."""
    return folder / f"{model}{SUFFIX}.safetensors", folder / f"{model}{SUFFIX}.json"


@dataclass(frozen=True)
class Snapshots:
    """One run's snapshots, as ``read`` finds them.

    Attributes:
        model: the name of the model whose run they follow ("fashion-mnist-vit").
        config: the model's shape (every snapshot has it).
        epochs: the epochs kept, in order (0: before training).
        history: the run's rows, one per epoch, epoch 0 first.
        run: what run made them: "recipe", "planned_epochs", "epochs", "hardware", ...
        samples: (n, C, H, W) uint8 test images of the run's dataset.
        sample_classes: their classes, as the model spells them.
        sample_indices: their places in the test split.
    """

    model: str
    config: ViTConfig
    epochs: tuple[int, ...]
    history: tuple[dict[str, Any], ...]
    run: dict[str, Any]
    samples: np.ndarray
    sample_classes: tuple[str, ...]
    sample_indices: tuple[int, ...]
    states: Mapping[int, Mapping[str, Tensor]] = field(repr=False)  # epoch -> its float16 state dict
    positions: Mapping[int, Tensor] = field(repr=False, default_factory=dict)  # epoch -> (1, T, D) float16

    def model_at(self, epoch: int) -> VisionTransformer:
        """A new model (float32, eval mode) with the weights it had after ``epoch``.

        Raises:
            KeyError: the run kept no snapshot of that epoch.
        """
        if epoch not in self.states:
            raise KeyError(f"No snapshot after epoch {epoch}; there are {list(self.epochs)}.")
        model = VisionTransformer(self.config)
        model.load_state_dict({key: value.float() for key, value in self.states[epoch].items()}, strict=True)
        return model.eval()

    def row(self, epoch: int) -> dict[str, Any]:
        """The history's row of ``epoch`` (empty where the run has none)."""
        return next((row for row in self.history if row["epoch"] == epoch), {})


def write(
    model: str,
    config: ViTConfig,
    states: Mapping[int, Mapping[str, Tensor]],
    history: Sequence[Mapping[str, Any]],
    run: Mapping[str, Any],
    samples: np.ndarray,
    sample_classes: Sequence[str],
    sample_indices: Sequence[int],
    positions: Mapping[int, Tensor] | None = None,
    folder: Path = FOLDER,
) -> tuple[Path, Path]:
    """Write a run's snapshots in the form ``read`` reads (floating-point tensors as float16);
    ``positions``: the position embeddings of more epochs than ``states`` keeps whole (those of
    ``states`` are added).

    Returns:
        The two files written: (weights, record).
    """
    weights, record = paths(model, folder)
    tensors = {
        f"epoch{epoch}/{key}": (value.half() if value.is_floating_point() else value).detach().contiguous().cpu()
        for epoch, state in sorted(states.items())
        for key, value in state.items()
    }
    more = {epoch: value for epoch, value in (positions or {}).items() if epoch not in states}  # the others: in states
    tensors |= {f"{POSITIONS}/epoch{epoch}": value.half().contiguous().cpu() for epoch, value in more.items()}
    tensors[SAMPLES] = torch.from_numpy(np.ascontiguousarray(samples, dtype=np.uint8))
    tmp = weights.with_name(f".{weights.name}.tmp")
    save_file(tensors, str(tmp), metadata={"format": "pt", "vitviz": "1"})
    os.replace(tmp, weights)
    data = {
        "model": model,
        "run": dict(run),
        "config": config.to_dict(),
        "snapshots": sorted(states),
        "positions": sorted({*states, *more}),
        "history": [dict(row) for row in history],
        "samples": [{"index": int(i), "class": c} for i, c in zip(sample_indices, sample_classes, strict=True)],
    }
    record.write_text(json.dumps(data, indent=1) + "\n")
    return weights, record


def read(model: str = SHIPPED, folder: Path = FOLDER) -> Snapshots | None:
    """The snapshots of ``model``'s run, or None where none ship."""
    weights, record = paths(model, folder)
    if not (weights.is_file() and record.is_file()):
        return None
    data = json.loads(record.read_text())
    tensors = load_file(str(weights))
    epochs = tuple(int(epoch) for epoch in data["snapshots"])
    states = {epoch: {} for epoch in epochs}
    for key, value in tensors.items():
        if key.startswith("epoch"):
            epoch, name = key.removeprefix("epoch").split("/", 1)
            states[int(epoch)][name] = value
    config = config_from_dict(data["config"])
    if not isinstance(config, ViTConfig):
        raise ValueError(f"{record.name} is not a ViT's run.")
    return Snapshots(
        model=data["model"],
        config=config,
        epochs=epochs,
        history=tuple(data["history"]),
        run=data["run"],
        samples=tensors[SAMPLES].numpy(),
        sample_classes=tuple(sample["class"] for sample in data["samples"]),
        sample_indices=tuple(int(sample["index"]) for sample in data["samples"]),
        states=states,
        positions={
            int(epoch): states[epoch]["pos_embed"] if epoch in states else tensors[f"{POSITIONS}/epoch{epoch}"]
            for epoch in data["positions"]
        },
    )
