"""A map of the test set: every image's [CLS] token (and mean patch token) at a layer, in 2D.

    python -m vitviz projection --model cifar10-vit --data ../shared/data/cifar10-jpeg --out FILE

The tokens are the residual stream as ``Trace.hidden_states`` holds it: entry l is the stream
entering block l (0: the embedded tokens), entry depth the output of the last block, before the
final LayerNorm. "cls" is token 0 of a model with a [CLS] token; "mean" is the mean of the patch
tokens (what a model without [CLS] pools). They come from the fast forward path, block by block
(``ablation.streams``), not from ``model.explain``: the attention maps are not needed here.

Two projections to 2D:

- "pca": the first two principal components (an SVD of the centred tokens in float64, each
  axis's sign fixed so that its largest loading is positive): linear, exact, and its axes mean
  something (the directions of largest variance);
- "umap" (McInnes et al. 2018, umap-learn): nonlinear, keeps neighbourhoods, so classes the
  model separates show as islands. On the CIFAR-10 test set's 10,000 tokens it was several times
  faster than scikit-learn's Barnes-Hut t-SNE on one CPU core once numba had compiled it (the
  first map in a process also pays that compilation), with about as trustworthy a map
  (docs/trust.md has the measurements); "tsne" stays available.

Both nonlinear maps start from the tokens' first ``PRE_PCA`` principal components (the usual
denoising step, and most of their cost saved) and are seeded, so a map is the same every run.
"""

from __future__ import annotations

import json
import logging
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import torch
from safetensors import SafetensorError, safe_open
from safetensors.torch import save_file
from torch import Tensor

from vitviz import commandline
from vitviz.analyses.ablation import streams
from vitviz.analyses.evaluate import check_classes, shipped_path, weights_hash
from vitviz.models import zoo
from vitviz.models.data import ImageSet, dataset_label, load_split, preprocess_batch, spread_subset
from vitviz.models.model import VisionTransformer

log = logging.getLogger(__name__)

Progress = Callable[[int, int], None]
TOKENS = ("cls", "mean")
NONLINEAR = "umap"  # the faster of the two on this project's CPUs, as trustworthy (docs/trust.md)
METHODS = ("pca", NONLINEAR)
PRE_PCA = 50  # components the nonlinear maps start from
SEED = 0
BATCH = 256
PROJECTION_SUFFIX = ".projection.safetensors"


def default_layers(depth: int) -> list[int]:
    """The middle of the model and its end, as hidden-state indices: [depth // 2, depth]."""
    return sorted({depth // 2, depth})


@torch.no_grad()
def collect_tokens(
    model: VisionTransformer,
    data: ImageSet,
    layers: Sequence[int],
    tokens: Sequence[str] = TOKENS,
    batch_size: int = BATCH,
    progress: Progress | None = None,
) -> tuple[dict[tuple[str, int], Tensor], Tensor]:
    """Every image's tokens at the chosen layers, and the model's predictions.

    Args:
        model: the ViT.
        data: the images (uint8, as ``ImageSet`` holds them).
        layers: hidden-state indices, 0 to depth (see the module docstring).
        tokens: "cls" and/or "mean".
        batch_size: images per forward pass.
        progress: called with (done, total) after every batch.

    Returns:
        ((token, layer) -> (n, D) float32 on the CPU, predictions (n,) long).
    """
    config = model.config
    for layer in layers:
        if not 0 <= layer <= config.depth:
            raise ValueError(f"Layer {layer} does not exist: choose from 0 (the embeddings) to {config.depth}.")
    if "cls" in tokens and not config.num_prefix_tokens:
        raise ValueError("This model has no [CLS] token: project the mean patch token instead.")
    prefix = config.num_prefix_tokens
    kept: dict[tuple[str, int], list[Tensor]] = {(token, layer): [] for token in tokens for layer in layers}
    predictions = []
    starts = range(0, len(data), batch_size)
    for done, start in enumerate(starts, 1):
        pixels = preprocess_batch(data.images[start : start + batch_size], config.preprocess, config.in_chans)
        hidden = streams(model, pixels)  # depth + 1 entries of (b, T, D)
        predictions.append(model.forward_head(model.norm(hidden[-1])).argmax(dim=-1).cpu())
        for token, layer in kept:
            stream = hidden[layer]
            picked = stream[:, 0] if token == "cls" else stream[:, prefix:].mean(dim=1)  # (b, D)
            kept[(token, layer)].append(picked.float().cpu())
        if progress is not None:
            progress(done, len(starts))
    return {key: torch.cat(parts) for key, parts in kept.items()}, torch.cat(predictions)


def pca(x: Tensor, dims: int = 2) -> Tensor:
    """The first ``dims`` principal components of the rows of ``x`` (n, D): (n, dims) float32.

    An exact SVD of the centred rows in float64; each axis's sign is fixed so that its largest
    loading (by absolute value) is positive, so the same tokens always give the same picture.
    """
    centred = x.double() - x.double().mean(dim=0, keepdim=True)
    _, _, vh = torch.linalg.svd(centred, full_matrices=False)  # vh: (min(n, D), D)
    axes = vh[:dims]  # (dims, D)
    largest = axes.abs().argmax(dim=1)  # (dims,)
    signs = torch.sign(axes[torch.arange(len(axes)), largest])  # (dims,)
    return (centred @ (axes * signs[:, None]).T).float()  # (n, dims)


def nonlinear(x: Tensor, method: str = NONLINEAR, seed: int = SEED) -> Tensor:
    """A seeded nonlinear 2D map of the rows of ``x`` (n, D), from their first ``PRE_PCA``
    principal components: "umap" (umap-learn) or "tsne" (scikit-learn). (n, 2) float32."""
    start = pca(x, min(PRE_PCA, *x.shape)).numpy()
    if method == "umap":
        import umap  # about 10 s to import and compile the first time in a process: only when asked

        # a seed makes UMAP run on one thread (n_jobs=1): the same map every run is worth it
        mapper = umap.UMAP(n_components=2, n_neighbors=15, min_dist=0.1, random_state=seed, n_jobs=1)
        points = mapper.fit_transform(start)
    elif method == "tsne":
        from sklearn.manifold import TSNE

        points = TSNE(n_components=2, perplexity=30.0, init="pca", random_state=seed).fit_transform(start)
    else:
        raise ValueError(f'method must be "umap" or "tsne", not {method!r}.')
    return torch.from_numpy(points).float()


def project(x: Tensor, method: str) -> Tensor:
    """(n, D) -> (n, 2) by "pca", "umap" or "tsne"."""
    return pca(x) if method == "pca" else nonlinear(x, method)


@dataclass
class Projection:
    """Every image's 2D point for each (projection, token, layer), with its class and the answer.

    Attributes:
        points: (method, token, layer) -> (n, 2) float32.
        labels: (n,) true classes.
        predictions: (n,) the model's answers.
        classes: class names in label order.
        files: one name per image, in the order of the points (the test split's order).
        seconds: method -> seconds its projections took (all tokens and layers).
        tokens: (token, layer) -> (n, D) the projected tokens; not stored in the shipped file.
    """

    points: dict[tuple[str, str, int], Tensor]
    labels: Tensor
    predictions: Tensor
    classes: list[str]
    files: list[str]
    seconds: dict[str, float] = field(default_factory=dict)
    tokens: dict[tuple[str, int], Tensor] = field(default_factory=dict)

    @property
    def layers(self) -> list[int]:
        return sorted({layer for _, _, layer in self.points})

    @property
    def correct(self) -> Tensor:
        """(n,) bool: the images the model gets right."""
        return self.predictions == self.labels


def compute(
    model: VisionTransformer,
    data: ImageSet,
    layers: Sequence[int] | None = None,
    tokens: Sequence[str] | None = None,
    methods: Sequence[str] = METHODS,
    batch_size: int = BATCH,
    progress: Progress | None = None,
) -> Projection:
    """The map of a test set for any ViT: its tokens, then each projection of each.

    Args:
        model: the ViT in eval mode.
        data: the images (all of them are projected: pass ``spread_subset(data, n)`` for fewer).
        layers: hidden-state indices; default ``default_layers(depth)``.
        tokens: default both, or "mean" alone for a model without [CLS].
        methods: "pca", "umap", "tsne".
        batch_size: images per forward pass.
        progress: called with (done, total): first one step per batch, then one per projection.
    """
    check_classes(model, data)
    model.eval()
    config = model.config
    layers = list(layers) if layers is not None else default_layers(config.depth)
    if tokens is None:
        tokens = TOKENS if config.num_prefix_tokens else ("mean",)
    batches = -(-len(data) // batch_size)
    total = batches + len(methods) * len(tokens) * len(layers)

    def forward_progress(done: int, _: int) -> None:
        if progress is not None:
            progress(done, total)

    collected, predictions = collect_tokens(model, data, layers, tokens, batch_size, forward_progress)
    points, seconds, done = {}, dict.fromkeys(methods, 0.0), batches
    for method in methods:
        for (token, layer), x in collected.items():
            started = time.perf_counter()
            points[(method, token, layer)] = project(x, method)
            seconds[method] += time.perf_counter() - started
            done += 1
            if progress is not None:
                progress(done, total)
    return Projection(
        points=points,
        labels=data.labels.clone(),
        predictions=predictions,
        classes=list(data.classes),
        files=list(data.files),
        seconds=seconds,
        tokens=collected,
    )


def projection_path(weights: Path) -> Path:
    """Where the shipped test-set map of the weights file ``weights`` sits: beside it."""
    return shipped_path(weights, PROJECTION_SUFFIX)


def _key(method: str, token: str, layer: int) -> str:
    return f"{method}/{token}/{layer}"


def save(projection: Projection, path: Path, model: VisionTransformer, data: ImageSet) -> None:
    """Write the points in float16 (a 2D scatter needs no more), the classes and the answers, keyed
    by the weights hash and the images' fingerprint (safetensors metadata)."""
    tensors = {_key(*key): value.to(torch.float16).contiguous() for key, value in sorted(projection.points.items())}
    tensors["labels"] = projection.labels.to(torch.int16).contiguous()
    tensors["predictions"] = projection.predictions.to(torch.int16).contiguous()
    metadata = {
        "weights_sha256": weights_hash(model),
        "fingerprint": data.fingerprint,
        "dataset": dataset_label(data),
        "classes": json.dumps(projection.classes),
        "seconds": json.dumps({method: round(s, 1) for method, s in projection.seconds.items()}),
        "layers": "hidden-state indices: 0 = the embedded tokens, depth = the last block's output (before the final norm)",
    }
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    save_file(tensors, str(path), metadata=metadata)


def read_stored(path: Path | None, model: VisionTransformer, data: ImageSet | None = None) -> Projection | None:
    """The map stored at ``path`` when these weights made it (and, given ``data``, from these
    images); else None, and the caller computes it (``compute``, with a progress bar)."""
    if path is None or not Path(path).is_file():
        return None
    try:
        with safe_open(str(path), framework="pt") as file:
            metadata = file.metadata() or {}
            if metadata.get("weights_sha256") != weights_hash(model):
                return None
            if data is not None and metadata.get("fingerprint") != data.fingerprint:
                return None
            points = {}
            for name in file.keys():  # noqa: SIM118 (safe_open has keys(), not iteration)
                if name.count("/") == 2:
                    method, token, layer = name.split("/")
                    points[(method, token, int(layer))] = file.get_tensor(name).float()
            labels, predictions = file.get_tensor("labels").long(), file.get_tensor("predictions").long()
    except (SafetensorError, OSError, KeyError, ValueError) as err:
        log.warning("ignoring the map in %s: %s", path, err)
        return None
    return Projection(
        points=points,
        labels=labels,
        predictions=predictions,
        classes=json.loads(metadata.get("classes", "[]")),
        files=list(data.files) if data is not None else [],
        seconds={k: float(v) for k, v in json.loads(metadata.get("seconds", "{}")).items()},
    )


def main(argv: list[str] | None = None) -> int:
    parser = commandline.analysis_parser(
        "vitviz.analyses.projection", __doc__, images=None, out="the points (a .safetensors file)"
    )
    parser.add_argument(
        "--layers", type=int, nargs="+", default=None, help="hidden-state indices (default: middle, last)"
    )
    parser.add_argument("--methods", nargs="+", default=list(METHODS), choices=["pca", "umap", "tsne"])
    args = commandline.parse(parser, argv)
    try:
        model, spec = zoo.load(args.model, device="cpu")
        if not isinstance(model, VisionTransformer):
            raise ValueError(f"{spec.name} is not a ViT: it has no tokens to project.")
        data = spread_subset(load_split(args.data, "test"), args.images)
        bar, advance = commandline.progress("projection", "step", args.json)
        projection = compute(model, data, args.layers, methods=args.methods, progress=advance)
        bar.close()
    except (zoo.ModelLoadError, FileNotFoundError, ValueError) as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    if args.out is not None:
        save(projection, args.out, model, data)
    summary = {
        "images": len(data),
        "points": sorted(_key(*key) for key in projection.points),
        "seconds": {method: round(s, 1) for method, s in projection.seconds.items()},
    }
    print(f"{len(data)} images, {len(projection.points)} maps; seconds per method: {summary['seconds']}")
    if args.json:
        print(json.dumps(summary))
    return 0


if __name__ == "__main__":
    sys.exit(main())
