"""Small datasets and models that tests make for themselves (nothing is downloaded)."""

from __future__ import annotations

import functools
import gzip
import io
from pathlib import Path

import numpy as np
import torch
from PIL import Image

from vitviz.models import zoo
from vitviz.models.config import ViTConfig
from vitviz.models.model import VisionTransformer
from vitviz.training.train import TrainConfig

CLASSES = ("blue", "green", "red")
MIRROR_CLASSES = ("red", "green", "blue")  # left_right_vit's


TINY = {"embed_dim": 32, "depth": 1, "num_heads": 2, "drop_path_rate": 0.0}


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


def write_idx(path: Path, array: np.ndarray, gz: bool = False) -> None:
    """An idx file (MNIST's format) of unsigned bytes, gzipped or not."""
    header = bytes([0, 0, 0x08, array.ndim]) + b"".join(int(n).to_bytes(4, "big") for n in array.shape)
    raw = header + array.astype(np.uint8).tobytes()
    path.write_bytes(gzip.compress(raw) if gz else raw)


def tiny_recipe(data: Path, **changes: object) -> TrainConfig:
    """A few seconds of training on a generated folder: a 1-block ViT of width 32, no augmentation."""
    base = dict(
        name="tiny",
        data=str(data),
        epochs=3,
        batch_size=32,
        lr=3e-3,
        warmup_epochs=0,
        augment="none",
        mixup_alpha=0.0,
        cutmix_alpha=0.0,
        random_erasing=0.0,
        amp="off",
        threads=1,
        model=TINY,
    )
    return TrainConfig(**{**base, **changes})


def no_cls_vit(path: Path, **changes: object) -> Path:
    """A small ViT without a [CLS] token (32x32 input, 4 x 4 patches of 8 pixels, the patches'
    mean pooled), saved at ``path`` for a page to open; ``changes`` alter its config."""
    config = ViTConfig(
        image_size=32, patch_size=8, num_classes=3, embed_dim=32, depth=2, num_heads=2,
        class_token=False, global_pool="avg",
    ).replace(**changes)  # fmt: skip
    zoo.save(VisionTransformer(config), path)
    return path


@functools.lru_cache(maxsize=2)
def lossless_webp(side: int) -> bytes:
    """A side x side lossless WebP of stripes, a few tens of kB: issue 53's attack uploaded a
    6900 x 6900 one of 75 kB, 190 MB once decoded."""
    ramp = (np.arange(side) // 27 % 256).astype(np.uint8)
    picture = np.empty((side, side, 3), dtype=np.uint8)
    picture[..., 0], picture[..., 1] = ramp[None, :], ramp[:, None]
    index = np.arange(side, dtype=np.int32)
    picture[..., 2] = (index[:, None] + index[None, :]) // 54 % 256  # diagonals: WebP packs them into 44 kB
    buffer = io.BytesIO()
    Image.fromarray(picture).save(buffer, "WEBP", lossless=True, quality=0, method=0)
    return buffer.getvalue()


def left_right_vit(test_flip: bool = True) -> VisionTransformer:
    """A ViT built to tell left from right (32 x 32, 8 x 8 patches, ``MIRROR_CLASSES``): each patch
    embeds its mean brightness along ``u``, the position embeddings add ``+v`` to the left half's
    patches and ``-v`` to the right's, the block adds nothing, and the mean of the normed patch
    tokens goes to a head that reads ``v``: red where the left half is the darker, green where the
    right is, blue (a small bias) where neither. The mirror image turns red into green, so with
    ``test_flip`` the mean of both views answers blue where one view answers red (``LEFT_DARK``)."""
    config = ViTConfig(
        image_size=32, patch_size=8, num_classes=3, embed_dim=16, depth=1, num_heads=2, class_names=MIRROR_CLASSES,
        global_pool="avg", test_flip=test_flip,
    )  # fmt: skip
    model = VisionTransformer(config).eval()
    u = torch.tensor([1.0, -1.0] * 8) / 4  # zero mean, unit length
    v = torch.tensor([1.0, 1.0, -1.0, -1.0] * 4) / 4  # and orthogonal to u
    side = torch.tensor([1.0 if col < 2 else -1.0 for row in range(4) for col in range(4)])  # (16,) row-major
    with torch.no_grad():
        for parameter in model.parameters():
            parameter.zero_()
        model.patch_embed.proj.weight.copy_(u[:, None, None, None].expand(16, 3, 8, 8) / (3 * 8 * 8))
        model.pos_embed[0, -16:].copy_(side[:, None] * v)
        model.norm.weight.fill_(1.0)
        model.head.weight.copy_(torch.stack([v, -v, torch.zeros(16)]))
        model.head.bias.copy_(torch.tensor([0.0, 0.0, 0.1]))
        for block in model.blocks:
            block.norm1.weight.fill_(1.0)
            block.norm2.weight.fill_(1.0)
    return model


LEFT_DARK = torch.cat(
    [torch.zeros(1, 3, 32, 16), torch.full((1, 3, 32, 16), 3.0)], dim=-1
)  # (1, 3, 32, 32): red, one view
