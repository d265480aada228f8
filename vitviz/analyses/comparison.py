"""Every test image's ViT-against-CNN work, computed once and shipped beside the ViT's weights.

    python -m vitviz comparison --model cifar10-vit --cnn cifar10-cnn --data ../shared/data/cifar10-jpeg --out F

Page 8 opens on an image with the CNN's logits and Grad-CAM (a forward pass of both views and a
backward through the head), the ViT's gradient-weighted rollout (a forward and a backward pass)
and the first experiment, the shuffled patches, through both models: for a class of thirty each on
a test image of their own, the server's heaviest work after the occlusion curves
(``vitviz.analyses.occlusion``). This command runs what the page runs for every image of the test
split, with the class the page explains first for a test image (its true class), and stores the
results (``<name>.comparison.safetensors``, float32), keyed by a hash of each image's bytes and
by both models' weights hashes. Grad-CAM is stored before it is upsampled (``compare.gradcam_maps``:
a 3 x 3 map a view for the shipped CNN); the app upsamples it as the page does. The app reads a
row where the models, the image's bytes, the class and the experiment's seed are the very ones it
was made with, in float32; anything else it computes as before.
"""

from __future__ import annotations

import logging
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch
from safetensors.torch import save_file
from torch import Tensor

from vitviz import commandline
from vitviz.analyses import compare
from vitviz.analyses.analysis import grad_rollout
from vitviz.analyses.evaluate import explained_inference, inference, read_tensors, shipped_path, weights_hash
from vitviz.analyses.occlusion import DIGEST_BYTES, every_test_image, image_digest
from vitviz.models import data as vdata
from vitviz.models import zoo
from vitviz.models.cnn import ConvNet
from vitviz.models.model import VisionTransformer, on_weights

log = logging.getLogger(__name__)

SUFFIX = ".comparison.safetensors"
FIELDS = ("cnn_logits", "grad_rollout", "gradcam_maps", "shuffle_vit_logits", "shuffle_cnn_logits")


def comparison_path(weights: Path) -> Path:
    """Where the stored comparisons of the ViT weights file ``weights`` sit: beside it."""
    return shipped_path(weights, SUFFIX)


def inputs(vit: VisionTransformer, cnn: ConvNet, image_bytes: bytes) -> tuple[Tensor, Tensor]:
    """Both models' inputs for one image, read as the app reads an image (``vitviz.app.caches``)."""
    image = vdata.load_image(image_bytes)
    vit_pixels = on_weights(vdata.to_tensor(image, vit.config.preprocess, vit.config.in_chans), vit)
    return vit_pixels, on_weights(vdata.to_tensor(image, cnn.config.preprocess, cnn.config.in_chans), cnn)


def row(vit: VisionTransformer, cnn: ConvNet, image_bytes: bytes, class_index: int, seed: int) -> dict[str, Tensor]:
    """What page 8 computes first for one image and class (``compare.comparison`` without integrated
    gradients, and ``compare.run_experiment("shuffle", seed=seed)``), in float32 on the CPU."""
    vit_pixels, cnn_pixels = inputs(vit, cnn, image_bytes)
    maps, cnn_logits = compare.gradcam_maps(cnn, cnn_pixels, class_index)
    shuffled = compare.run_experiment("shuffle", vit, vit_pixels, cnn, cnn_pixels, seed=seed)
    if shuffled.cnn_logits is None:
        raise ValueError("The CNN's input cannot be cut into the ViT's grid: the shuffle runs on the ViT alone.")
    return {
        "cnn_logits": cnn_logits,
        "grad_rollout": grad_rollout(vit, vit_pixels, class_index),
        "gradcam_maps": maps.float().cpu(),
        "shuffle_vit_logits": shuffled.vit_logits[0],
        "shuffle_cnn_logits": shuffled.cnn_logits[0],
    }


@dataclass(frozen=True)
class Table:
    """Stored rows: ``rows`` maps an image digest to (its row, the class it explains); ``fields``
    holds each of ``FIELDS`` for every row."""

    seed: int
    rows: dict[bytes, tuple[int, int]]
    fields: dict[str, np.ndarray]

    def row(self, image_bytes: bytes, class_index: int | None = None) -> dict[str, np.ndarray] | None:
        """The stored arrays of this image explained for ``class_index`` (None: whichever class;
        the experiment's logits do not depend on it), or None."""
        found = self.rows.get(image_digest(image_bytes))
        if found is None or class_index not in (None, found[1]):
            return None
        return {name: values[found[0]].copy() for name, values in self.fields.items()}


def write(
    vit: VisionTransformer,
    cnn: ConvNet,
    images: Sequence[tuple[bytes, int]],
    path: Path,
    seed: int = compare.DEFAULT_SEED,
    progress=None,
) -> int:
    """Compute every (image bytes, class) of ``images`` and write them to ``path``; how many."""
    digests, classes, rows = [], [], []
    for done, (image_bytes, class_index) in enumerate(images, start=1):
        digests.append(np.frombuffer(image_digest(image_bytes), dtype=np.uint8))
        classes.append(class_index)
        rows.append(row(vit, cnn, image_bytes, class_index, seed))
        if progress is not None:
            progress(done, len(images))
    metadata = {
        "weights_sha256": weights_hash(vit),
        "cnn_weights_sha256": weights_hash(cnn),
        "inference": explained_inference(vit),
        "cnn_inference": inference(cnn),
        "seed": str(seed),
        "precision": "float32",
    }
    tensors = {name: torch.stack([found[name] for found in rows]).contiguous() for name in FIELDS}
    tensors |= {"digests": torch.from_numpy(np.stack(digests)), "classes": torch.tensor(classes, dtype=torch.int64)}
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    save_file(tensors, str(path), metadata=metadata)
    return len(rows)


def read_stored(path: Path | None, vit: torch.nn.Module, cnn: torch.nn.Module) -> Table | None:
    """The rows stored at ``path`` when these two models made them; else None, and the page computes."""
    made_by = {
        "weights_sha256": weights_hash(vit),
        "cnn_weights_sha256": weights_hash(cnn),
        "inference": explained_inference(vit),
        "cnn_inference": inference(cnn),
    }
    found = read_tensors(path, "comparisons", made_by, ("digests", "classes", *FIELDS))
    if found is None:
        return None
    metadata, tensors = found
    digests, classes = tensors["digests"].numpy(), tensors["classes"].tolist()
    fields = {name: tensors[name].numpy() for name in FIELDS}
    try:
        seed = int(metadata["seed"])
    except (KeyError, ValueError) as err:
        log.warning("ignoring the comparisons in %s: %s", path, err)
        return None
    if digests.shape != (len(classes), DIGEST_BYTES) or any(len(values) != len(classes) for values in fields.values()):
        log.warning("ignoring the comparisons in %s: its arrays do not hold one row an image", path)
        return None
    rows = {
        bytes(digest): (n, int(class_index))
        for n, (digest, class_index) in enumerate(zip(digests, classes, strict=True))
    }
    return Table(seed, rows, fields)


def main(argv: list[str] | None = None) -> int:
    parser = commandline.analysis_parser("vitviz.analyses.comparison", __doc__, images=None, out="the comparisons")
    parser.add_argument("--cnn", default=zoo.SHIPPED_CNN, help="the CNN page 8 sets beside the ViT")
    args = commandline.parse(parser, argv)
    if args.out is None:
        print("error: --out names the file to write", file=sys.stderr)
        return 2
    try:
        vit, spec = zoo.load(args.model, device="cpu")
        cnn, cnn_spec = zoo.load(args.cnn, device="cpu")
        if not isinstance(vit, VisionTransformer) or not isinstance(cnn, ConvNet):
            raise ValueError(f"{spec.name} and {cnn_spec.name} are not a ViT and a CNN.")
        if list(vit.config.class_names) != list(cnn.config.class_names):
            raise ValueError(f"{spec.name} and {cnn_spec.name} do not name the same classes: page 8 compares neither.")
        names = list(vit.config.class_names)
        images = []
        for class_name, image_bytes in every_test_image(args.data):  # a test image's page explains its true class
            if class_name not in names:
                raise ValueError(f"The test images' class {class_name!r} is not one of {spec.name}'s.")
            images.append((image_bytes, names.index(class_name)))
        images = [images[i] for i in vdata.spread_indices(len(images), args.images)]
        bar, advance = commandline.progress("comparison", "img", args.json, total=len(images))
        started = time.perf_counter()
        count = write(vit, cnn, images, Path(args.out), progress=advance)
        bar.close()
    except (zoo.ModelLoadError, FileNotFoundError, ValueError) as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    commandline.wrote(count, time.perf_counter() - started, args.out, args.json)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
