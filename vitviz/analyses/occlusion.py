"""Every test image's occlusion curves, computed once and shipped beside the weights.

    python -m vitviz occlusion --model cifar10-vit --data ../shared/data/cifar10-jpeg --out F

The prediction step hides an image's patches in two orders (``analysis.OCCLUSION_ORDERS``) and
follows the top class's probability: 2 x 34 forward passes an image, the heaviest work of a
class's server when thirty students each look at a test image of their own. This command runs
exactly what the page runs (``curve``) on every image of the test split and stores the curves
(``<name>.occlusion.safetensors``, float32), keyed by a hash of each image's bytes, with the
weights hash that makes them stale (``evaluate.weights_hash``). The app reads a stored curve
where the model, the image's bytes, the order and the number of steps are the very ones it was
made with, and in float32; anything else it computes as before.
"""

from __future__ import annotations

import hashlib
import logging
import sys
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch
from safetensors.torch import save_file
from torch import Tensor

from vitviz import commandline
from vitviz.analyses import analysis
from vitviz.analyses.evaluate import explained_inference, read_tensors, shipped_path, weights_hash
from vitviz.models import data as vdata
from vitviz.models import precision, zoo
from vitviz.models.model import VisionTransformer, on_weights
from vitviz.models.trace import Trace

log = logging.getLogger(__name__)

SUFFIX = ".occlusion.safetensors"
DIGEST_BYTES = 16


def occlusion_path(weights: Path) -> Path:
    """Where the stored curves of the weights file ``weights`` sit: beside it."""
    return shipped_path(weights, SUFFIX)


def image_digest(image_bytes: bytes) -> bytes:
    """What a stored curve is keyed by: a hash of the image's bytes as the app receives them."""
    return hashlib.blake2b(image_bytes, digest_size=DIGEST_BYTES).digest()


def curve(
    model: VisionTransformer, trace: Trace, kind: str, steps: int, dtype: torch.dtype = torch.float32
) -> tuple[Tensor, Tensor]:
    """One occlusion curve of the image ``trace`` explains, as the prediction step shows it: the
    patches hidden in ``kind``'s order, following the unoccluded image's top class from the
    probabilities behind its top-k bars (the trace's logits). The occluded copies run in
    ``dtype`` (bf16 autocast where a server asks for it); the order and the start are the trace's.

    Returns:
        order: (N,) long, the patches in the order they are hidden.
        curve: (steps + 1,) float32, the class's probability at every step.
    """
    order = analysis.occlusion_order(trace, kind)  # type: ignore[arg-type]
    start = trace.logits[0].float().softmax(dim=-1)
    pixels = on_weights(trace.pixels, model)  # the trace sits on the CPU
    with torch.inference_mode(), precision.autocast(pixels.device, dtype):
        return order, analysis.occlusion_curve(model, pixels, order, steps, target=int(start.argmax()), start=start)


def curves_of(model: VisionTransformer, image_bytes: bytes, steps: int) -> Tensor:
    """(kinds, steps + 1): every order's curve for one image, read and explained in float32 as
    the app reads an image (``vitviz.app.caches.cached_trace``)."""
    image = vdata.load_image(image_bytes)
    pixels = on_weights(vdata.to_tensor(image, model.config.preprocess, model.config.in_chans), model)
    trace = precision.explain(model, pixels, torch.float32)
    return torch.stack([curve(model, trace, kind, steps)[1] for kind in analysis.OCCLUSION_ORDERS])


def every_test_image(root: str | None) -> Iterator[tuple[str, bytes]]:
    """Every test image's class and bytes as the lab hands them to the tour: a folder's files as
    they are, in the lab's order; a dataset without files (MNIST, torchvision's CIFAR-10) as PNGs."""
    folder = vdata.find_image_folder(Path(root), "test") if root is not None else None
    if folder is None:
        data = vdata.load_split(root, "test")
        for image, label in zip(data.images, data.labels.tolist(), strict=True):
            yield data.classes[label], vdata.encode_png(image)
        return
    for name in vdata.folder_classes(folder):
        for path in vdata.class_files(folder / name):
            yield name, path.read_bytes()


@dataclass(frozen=True)
class Table:
    """Stored curves: ``rows`` maps an image digest to its row of ``curves`` (n, kinds, steps + 1)."""

    kinds: tuple[str, ...]
    steps: int
    rows: dict[bytes, int]
    curves: np.ndarray

    def curve(self, image_bytes: bytes, kind: str, steps: int) -> np.ndarray | None:
        """The stored curve of this image, order and number of steps, or None."""
        if steps != self.steps or kind not in self.kinds:
            return None
        row = self.rows.get(image_digest(image_bytes))
        return None if row is None else self.curves[row, self.kinds.index(kind)].copy()


def write(model: VisionTransformer, images: Sequence[bytes], path: Path, progress=None) -> int:
    """Compute every image's curves and write them to ``path``; how many images."""
    steps = analysis.occlusion_steps(model)
    digests, rows = [], []
    for done, image_bytes in enumerate(images, start=1):
        digests.append(np.frombuffer(image_digest(image_bytes), dtype=np.uint8))
        rows.append(curves_of(model, image_bytes, steps))
        if progress is not None:
            progress(done, len(images))
    metadata = {
        "weights_sha256": weights_hash(model),
        "inference": explained_inference(model),
        "kinds": ",".join(analysis.OCCLUSION_ORDERS),
        "steps": str(steps),
        "precision": "float32",
    }
    tensors = {
        "digests": torch.from_numpy(np.stack(digests)).contiguous(),
        "curves": torch.stack(rows).to(torch.float32).contiguous(),  # (n, kinds, steps + 1)
    }
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    save_file(tensors, str(path), metadata=metadata)
    return len(rows)


def read_stored(path: Path | None, model: torch.nn.Module) -> Table | None:
    """The curves stored at ``path`` when these weights made them; else None, and the page computes."""
    made_by = {"weights_sha256": weights_hash(model), "inference": explained_inference(model)}
    found = read_tensors(path, "occlusion curves", made_by, ("digests", "curves"))
    if found is None:
        return None
    metadata, tensors = found
    digests, curves = tensors["digests"].numpy(), tensors["curves"].numpy()
    try:
        kinds, steps = tuple(metadata["kinds"].split(",")), int(metadata["steps"])
    except (KeyError, ValueError) as err:
        log.warning("ignoring the occlusion curves in %s: %s", path, err)
        return None
    if curves.shape[1:] != (len(kinds), steps + 1) or digests.shape != (len(curves), DIGEST_BYTES):
        log.warning("ignoring the occlusion curves in %s: shapes %s and %s", path, digests.shape, curves.shape)
        return None
    return Table(kinds, steps, {bytes(digest): row for row, digest in enumerate(digests)}, curves)


def main(argv: list[str] | None = None) -> int:
    parser = commandline.analysis_parser("vitviz.analyses.occlusion", __doc__, images=None, out="the curves")
    args = commandline.parse(parser, argv)
    if args.out is None:
        print("error: --out names the file to write", file=sys.stderr)
        return 2
    try:
        model, spec = zoo.load(args.model, device="cpu")
        if not isinstance(model, VisionTransformer) or model.config.num_classes == 0:
            raise ValueError(f"{spec.name} is not a ViT classifier: the prediction step shows no occlusion for it.")
        images = [image_bytes for _, image_bytes in every_test_image(args.data)]
        images = [images[i] for i in vdata.spread_indices(len(images), args.images)]
        bar, advance = commandline.progress("occlusion", "img", args.json, total=len(images))
        started = time.perf_counter()
        count = write(model, images, Path(args.out), advance)
        bar.close()
    except (zoo.ModelLoadError, FileNotFoundError, ValueError) as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    commandline.wrote(count, time.perf_counter() - started, args.out, args.json)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
