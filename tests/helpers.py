"""Small datasets and models that tests make for themselves (nothing is downloaded)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
from PIL import Image

CLASSES = ("blue", "green", "red")


def make_image_folder(root: Path, per_class: int = 20, size: int = 32, seed: int = 0, splits=("train", "test")) -> Path:
    """root/<split>/<class>/NNNN.png: noisy images whose dominant colour is the class."""
    rng = np.random.default_rng(seed)
    for split in splits:
        for name in CLASSES:
            folder = root / split / name
            folder.mkdir(parents=True, exist_ok=True)
            channel = {"red": 0, "green": 1, "blue": 2}[name]
            for i in range(per_class):
                pixels = rng.integers(0, 120, (size, size, 3), dtype=np.uint8)
                pixels[..., channel] = rng.integers(120, 255, (size, size), dtype=np.uint8)
                Image.fromarray(pixels).save(folder / f"{i:04d}.png")
    return root
