"""Ship a run's snapshots for the page "How the ViT learned": vitviz/assets/models/<model>.learn.*

    python -m tools.snapshots ~/.cache/vitviz/runs/fashion-mnist-vit-learn --epochs 0,1,2,5,10,end --data fashion-mnist

The shipped ones come from a fresh run of the grey ViT's first stage (its card's first recipe:
the fashion-mnist-vit preset with random erasing 0.1, one thread, seed 0), every epoch evaluated
and kept, stopped by hand where the machine's time ran out (the same command resumes it):

    python -m vitviz train --preset fashion-mnist-vit --name fashion-mnist-vit-learn --random-erasing 0.1 --threads 1 --eval-every 1 --snapshots "$(seq -s, 0 30),end"

The run was trained with ``--snapshots`` (``vitviz.training.train``): its ``snapshots/`` folder holds
a float16 state dict per kept epoch and ``snapshots.json`` (the model config, the per-epoch
history); its ``checkpoint.pt`` the recipe. ``--epochs`` picks the snapshots to ship ("end": the
last one kept); the position embeddings of every epoch kept ship too (a few kB each). Beside
them go one test image per class of ``--data`` (the first of each in the test split), for a
session whose image the run's model cannot read. Nothing is written when the
files would pass ``--max-mb`` (25 MB), or when an asked epoch has no snapshot. What ships names
the run by its recipe, epochs and hardware, never by a folder of this machine.
"""

from __future__ import annotations

import logging
import sys
from pathlib import Path
from typing import Any

import numpy as np
import torch
from safetensors.torch import load_file

from tools.ship import portable
from vitviz import commandline
from vitviz.models import snapshots
from vitviz.models.config import ViTConfig, config_from_dict
from vitviz.models.data import load_split
from vitviz.training.train import SNAPSHOTS, read_snapshots

log = logging.getLogger(__name__)

MAX_MB = 25.0
ROW_KEYS = ("epoch", "test_accuracy", "test_loss", "train_loss", "train_accuracy", "lr", "seconds")


class SnapshotError(RuntimeError):
    """The snapshots cannot be shipped; the message says why."""


def chosen_epochs(text: str, kept: list[int]) -> list[int]:
    """ "0,1,5,end" against the epochs a run kept -> [0, 1, 5, <the last kept>].

    Raises:
        SnapshotError: an asked epoch has no snapshot.
    """
    asked = [entry.strip() for entry in text.split(",") if entry.strip()]
    epochs = sorted({max(kept) if entry == "end" else int(entry) for entry in asked})
    missing = [epoch for epoch in epochs if epoch not in kept]
    if missing or not epochs:
        raise SnapshotError(f"The run kept snapshots of epochs {kept}; asked for {missing or 'none'}.")
    return epochs


def run_facts(run: Path, epochs_trained: int) -> dict[str, Any]:
    """What made the snapshots, from the run's checkpoint: its recipe and how far it went."""
    state = torch.load(run / "checkpoint.pt", map_location="cpu", weights_only=True)
    recipe = portable(dict(state["train_config"]))  # a dataset or teacher named by a path of this machine: not shipped
    return {
        "name": recipe["name"],
        "recipe": recipe,
        "planned_epochs": recipe["epochs"],
        "epochs": epochs_trained,
        "seed": recipe["seed"],
        "hardware": list(state.get("machines") or []),
        "wall_time_s": round(float(state.get("wall_s", 0.0)), 1),
        "torch": torch.__version__,
    }


def first_of_each_class(data: str) -> tuple[np.ndarray, list[str], list[int]]:
    """The first test image of every class of ``data``: (n, C, H, W) uint8, their classes and indices."""
    test = load_split(data, "test", download=False)
    indices = [int((test.labels == label).nonzero()[0]) for label in range(len(test.classes))]
    images = test.images[indices].numpy()  # (n, C, H, W)
    return images, [test.classes[int(test.labels[i])] for i in indices], indices


def pack(run: Path, epochs_text: str, data: str, model: str, out: Path, max_mb: float = MAX_MB) -> tuple[Path, Path]:
    """Write ``model``'s snapshots from ``run`` into ``out`` (``vitviz.models.snapshots.write``).

    Raises:
        SnapshotError: no snapshots, a missing epoch, or more than ``max_mb`` megabytes.
    """
    record = read_snapshots(run / SNAPSHOTS)
    if record is None:
        raise SnapshotError(f"{run} has no {SNAPSHOTS}/ folder: train it with --snapshots.")
    files = {entry["epoch"]: entry["file"] for entry in record["snapshots"]}
    epochs = chosen_epochs(epochs_text, sorted(files))
    config = config_from_dict(record["config"])
    if not isinstance(config, ViTConfig):
        raise SnapshotError("Only a ViT's snapshots are drawn.")
    states = {epoch: load_file(str(run / SNAPSHOTS / files[epoch])) for epoch in epochs}
    positions = {epoch: load_file(str(run / SNAPSHOTS / name))["pos_embed"] for epoch, name in files.items()}
    history = [{k: row[k] for k in ROW_KEYS if k in row} for row in record["history"]]
    facts = run_facts(run, max(row["epoch"] for row in history))
    images, classes, indices = first_of_each_class(data)
    size = sum(t.numel() * 2 for state in [*states.values(), positions] for t in state.values()) + images.size
    if size > max_mb * 1e6:
        raise SnapshotError(f"{len(epochs)} snapshots are {size / 1e6:.1f} MB, over {max_mb} MB: keep fewer.")
    written = snapshots.write(model, config, states, history, facts, images, classes, indices, positions, out)
    log.info("wrote %s (%.1f MB) and %s", written[0], written[0].stat().st_size / 1e6, written[1])
    return written


def main(argv: list[str] | None = None) -> int:
    parser = commandline.parser("tools.snapshots", __doc__)
    parser.add_argument("run", type=Path, help="a run folder trained with --snapshots")
    parser.add_argument("--epochs", default="0,1,2,5,10,end", help="the snapshots to ship (default %(default)s)")
    parser.add_argument("--data", default="fashion-mnist", help="the dataset whose test images ship beside them")
    parser.add_argument("--model", default=snapshots.SHIPPED, help="the shipped model whose run this is")
    parser.add_argument("--out", type=Path, default=snapshots.FOLDER)
    parser.add_argument("--max-mb", type=float, default=MAX_MB)
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    try:
        pack(args.run, args.epochs, args.data, args.model, args.out, args.max_mb)
    except SnapshotError as err:
        print(err, file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
