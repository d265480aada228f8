"""Switch parts of a ViT off and see what the answer needed: head and layer ablation.

    python -m vitviz ablation --model cifar10-vit --data ../shared/data/cifar10-jpeg --json

Two ways to switch a part off:

- a **head** (layer l, head h): what the head hands the output projection, softmax(QK^T/sqrt(d)) V
  of shape (B, T, head_dim), is replaced before the projection mixes the heads. "zero" sets it
  to 0; "mean" sets it to the head's mean output over a set of reference images, token position
  by token position (``head_means``). Mean ablation is the default reading of "which heads
  matter": a zeroed head moves the residual stream to a place it never is in training, so part
  of a zero-ablation's damage is the shock of the missing average, not the missing information.
  The mean over *reference images* (not over the image's own tokens) removes what the head says
  about this image while keeping what it says about every image: a mean over the image's tokens
  would still carry the image (its colours, its object) into the stream.
- a whole **layer** l: both residual branches of block l, attention and MLP, are skipped; the
  residual stream passes through unchanged, so the block's output is its input. Its attention
  map in a trace is all zeros (it attends nowhere), which attention rollout reads as the identity.

Nothing is changed on the model passed in (the app shares one cached model among its sessions,
so it gets no hooks and no new attributes): ``ablated`` returns a private copy whose modules are
new objects sharing the original's parameter tensors (no weights are copied), with the ablated
blocks swapped in. ``ablated(model, a)(pixels)`` gives the logits, ``ablated(model, a).explain
(pixels)`` the changed attention maps and hidden states.
"""

from __future__ import annotations

import copy
import itertools
import json
import logging
import sys
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import numpy as np
import torch
from torch import Tensor, nn

from vitviz import commandline
from vitviz.analyses import analysis
from vitviz.analyses.evaluate import check_classes, read_table, save_table, shipped_path
from vitviz.models import zoo
from vitviz.models.data import ImageSet, load_split, preprocess_batch, spread_subset
from vitviz.models.model import Attention, Block, VisionTransformer, on_weights
from vitviz.models.trace import BlockTrace

log = logging.getLogger(__name__)

Progress = Callable[[int, int], None]
AblationMode = Literal["zero", "mean"]
MODES = ("zero", "mean")
ABLATION_SUFFIX = ".ablation.json"
BATCH = 128  # images per forward pass: the fastest batch on 1-2 CPU threads for the CIFAR ViT


@dataclass(frozen=True)
class Ablation:
    """What to switch off.

    Attributes:
        heads: (layer, head) pairs whose output is replaced (layers counted from 0).
        layers: blocks skipped whole (their heads need not be listed).
        mode: "zero" or "mean" for the heads (a skipped layer is skipped either way).
        means: (depth, heads, T, head_dim) from ``head_means``; needed for "mean".
    """

    heads: frozenset[tuple[int, int]] = field(default_factory=frozenset)
    layers: frozenset[int] = field(default_factory=frozenset)
    mode: AblationMode = "zero"
    means: Tensor | None = None

    @classmethod
    def of(
        cls,
        heads: Iterable[tuple[int, int]] = (),
        layers: Iterable[int] = (),
        mode: AblationMode = "zero",
        means: Tensor | None = None,
    ) -> Ablation:
        """An ablation from any iterables (lists from a widget, say)."""
        pairs = frozenset((int(layer), int(head)) for layer, head in heads)
        return cls(pairs, frozenset(int(layer) for layer in layers), mode, means)

    @property
    def empty(self) -> bool:
        return not self.heads and not self.layers

    def check(self, depth: int, num_heads: int) -> None:
        """Refuse, with what to do, a layer or head the model does not have, or "mean" without means."""
        if self.mode not in MODES:
            raise ValueError(f'mode must be "zero" or "mean", not {self.mode!r}.')
        for layer, head in sorted(self.heads):
            if not (0 <= layer < depth and 0 <= head < num_heads):
                raise ValueError(
                    f"Head {head} of layer {layer} does not exist: layers go from 0 to {depth - 1}, "
                    f"heads from 0 to {num_heads - 1}."
                )
        for layer in sorted(self.layers):
            if not 0 <= layer < depth:
                raise ValueError(f"Layer {layer} does not exist: choose a layer from 0 to {depth - 1}.")
        if self.mode == "mean" and self.heads:
            if self.means is None:
                raise ValueError("Mean ablation needs the heads' mean outputs: pass means=head_means(model, pixels).")
            if self.means.shape[:2] != (depth, num_heads):
                raise ValueError(f"means has shape {tuple(self.means.shape)}, not (depth, heads, T, head_dim).")


class AblatedAttention(Attention):
    """An Attention whose listed heads hand the projection a replacement instead of their output.

    It shares the original's qkv and proj modules (and so their parameters) and overrides only
    ``_merge``, the step both the fused ``forward`` and the explicit ``explain`` end with: the
    attention weights are still computed (``explain`` still returns them), what the ablated heads
    write is not.
    """

    def __init__(self, attention: Attention, heads: Sequence[int], replacement: Tensor | None) -> None:
        nn.Module.__init__(self)  # not Attention.__init__: the layers are the original's, not new ones
        self.fused_attn = attention.fused_attn
        self.num_heads = attention.num_heads
        self.head_dim = attention.head_dim
        self.scale = attention.scale
        self.qkv = attention.qkv
        self.attn_drop = attention.attn_drop
        self.proj = attention.proj
        self.proj_drop = attention.proj_drop
        param = attention.proj.weight
        keep = torch.ones(self.num_heads, 1, 1, dtype=torch.bool, device=param.device)
        keep[list(heads)] = False
        if replacement is None:
            replacement = torch.zeros(self.num_heads, 1, 1, device=param.device, dtype=param.dtype)
        self.register_buffer("keep", keep, persistent=False)  # (heads, 1, 1)
        self.register_buffer("replacement", replacement.to(param.device, param.dtype), persistent=False)

    def ablate(self, heads: Tensor) -> Tensor:
        """(B, heads, T, head_dim) -> the same with the ablated heads replaced."""
        return torch.where(self.keep, heads, self.replacement.to(heads.dtype))  # broadcast over B (and T)

    def _merge(self, x: Tensor) -> Tensor:
        return super()._merge(self.ablate(x))


class SkippedBlock(Block):
    """A block whose attention and MLP branches are skipped: the residual stream passes through.

    It keeps the original's norms, attention and MLP (shared) so that code reading a block's
    parameters still finds them; only ``forward`` and ``explain`` change.
    """

    def __init__(self, block: Block) -> None:
        nn.Module.__init__(self)  # not Block.__init__: no new layers
        self.norm1, self.attn, self.norm2, self.mlp, self.drop_path = (
            block.norm1,
            block.attn,
            block.norm2,
            block.mlp,
            block.drop_path,
        )

    def forward(self, x: Tensor) -> Tensor:
        return x

    def explain(self, x: Tensor) -> BlockTrace:
        batch, tokens, _ = x.shape
        # attends nowhere; requires_grad like x, so a gradient-weighted rollout through it reads 0
        attention = x.new_zeros(batch, self.attn.num_heads, tokens, tokens).requires_grad_(x.requires_grad)
        return BlockTrace(x, attention, torch.zeros_like(x), torch.zeros_like(x))


def ablated(model: VisionTransformer, ablation: Ablation) -> VisionTransformer:
    """A private copy of ``model`` with ``ablation`` applied, sharing its parameters.

    The copy's modules are new objects (a deep copy whose memo maps every parameter and buffer to
    itself), so swapping its blocks leaves ``model`` as it was; its tensors are the very ones of
    ``model`` (no weights are copied), so do not train it. With nothing ablated its logits equal
    ``model``'s exactly.
    """
    config = model.config
    ablation.check(config.depth, config.num_heads)
    shared = {id(t): t for t in itertools.chain(model.parameters(), model.buffers())}
    private = copy.deepcopy(model, memo=shared)
    for layer in range(config.depth):
        block = private.blocks[layer]
        if layer in ablation.layers:
            private.blocks[layer] = SkippedBlock(block)
            continue
        heads = sorted(head for at, head in ablation.heads if at == layer)
        if heads:
            replacement = ablation.means[layer] if ablation.mode == "mean" else None  # (heads, T, head_dim)
            block.attn = AblatedAttention(block.attn, heads, replacement)
    return private


def head_outputs(attention: Attention, x: Tensor) -> Tensor:
    """What each head hands the output projection for the normalised stream ``x`` (B, T, D):
    (B, heads, T, head_dim), ablated heads replaced for an ``AblatedAttention``."""
    q, k, v = attention.qkv_heads(x)
    out = attention.weights(q, k) @ v  # (B, heads, T, head_dim)
    return attention.ablate(out) if isinstance(attention, AblatedAttention) else out


@torch.no_grad()
def head_means(model: VisionTransformer, pixels: Tensor, batch_size: int = BATCH) -> Tensor:
    """Every head's mean output over reference images, per token position: the "mean" replacement.

    Args:
        model: the (unablated) ViT.
        pixels: (M, C, H, W) normalised reference images (e.g. evenly strided test images).
        batch_size: images per forward pass.

    Returns:
        (depth, heads, T, head_dim) float32 on the model's device.
    """
    total = None
    for start in range(0, len(pixels), batch_size):
        x = model.add_tokens(model.patch_embed(on_weights(pixels[start : start + batch_size], model)))  # (b, T, D)
        sums = []
        for block in model.blocks:
            sums.append(head_outputs(block.attn, block.norm1(x)).float().sum(dim=0))  # (heads, T, head_dim)
            x = block(x)
        batch = torch.stack(sums)  # (depth, heads, T, head_dim)
        total = batch if total is None else total + batch
    if total is None:
        raise ValueError("head_means needs at least one reference image.")
    return total / len(pixels)


MEAN_REFERENCE_IMAGES = 256  # test images whose mean head outputs "mean" ablation puts in a head's place


def reference_means(model: VisionTransformer, data: ImageSet, count: int = MEAN_REFERENCE_IMAGES) -> Tensor:
    """``head_means`` over ``count`` images of ``data`` at even strides: (depth, heads, T, head_dim)."""
    subset = spread_subset(data, count)
    return head_means(model, preprocess_batch(subset.images, model.config.preprocess, model.config.in_chans))


@torch.no_grad()
def switched_off(model: VisionTransformer, pixels: Tensor, ablation: Ablation) -> dict[str, np.ndarray]:
    """One image (``pixels``, (1, C, H, W)) through ``model`` with ``ablation`` applied: its class
    probabilities, and its last layer's [CLS] attention (mean of heads) and rollout.

    Returns:
        "probs" (K,), "cls_attention" and "rollout" (grid_h, grid_w), float32 on the CPU.
    """
    trace = ablated(model, ablation).explain(on_weights(pixels, model))
    readout = analysis.readout_attention(trace, -1)[0].float()  # (heads, grid_h, grid_w)
    return {
        "probs": trace.logits[0].float().softmax(dim=-1).cpu().numpy(),
        "cls_attention": (readout.mean(dim=0) if readout.dim() == 3 else readout).cpu().numpy(),
        "rollout": analysis.rollout_map(trace)[0].float().cpu().numpy(),
    }


def forward_from(model: nn.Module, hidden: Tensor, layer: int) -> Tensor:
    """The logits of a residual stream (B, T, D) entering block ``layer``: the rest of the forward
    pass. From layer 0 with the embedded tokens it is ``model.forward_one_view(pixels)``, exactly (the
    tour's one pass, also for a ViT that averages its mirror image in)."""
    x = hidden
    for block in model.blocks[layer:]:
        x = block(x)
    return model.forward_head(model.norm(x))


@torch.no_grad()
def streams(model: VisionTransformer, pixels: Tensor) -> list[Tensor]:
    """The residual stream entering every block, depth + 1 entries of (B, T, D) (the last leaves
    the last block): ``trace.hidden_states`` by the fast path, without the attention maps."""
    x = model.add_tokens(model.patch_embed(on_weights(pixels, model)))
    hidden = [x]
    for block in model.blocks:
        x = block(x)
        hidden.append(x)
    return hidden


@torch.no_grad()
def accuracy_grid(
    model: VisionTransformer,
    data: ImageSet,
    modes: Sequence[str] = MODES,
    batch_size: int = BATCH,
    progress: Progress | None = None,
) -> dict[str, Any]:
    """The test accuracy with each head ablated alone, and with each layer skipped alone.

    An ablation of layer l changes nothing before block l, so each batch's clean streams are
    computed once and every ablated model runs only from block l on (``forward_from``). The means
    of "mean" ablation are taken over the same images (``head_means``).

    Returns:
        {"images": n, "accuracy": the clean accuracy, "head_accuracy": {mode: depth x heads},
        "head_drop": {mode: depth x heads, the clean accuracy minus the ablated one},
        "layer_accuracy": [depth], "layer_drop": [depth]}.
    """
    check_classes(model, data)
    model.eval()
    config = model.config
    depth, num_heads = config.depth, config.num_heads

    def pixels_of(start: int) -> Tensor:
        return preprocess_batch(data.images[start : start + batch_size], config.preprocess, config.in_chans)

    starts = range(0, len(data), batch_size)
    steps = len(starts) * (2 if "mean" in modes else 1)
    done = 0
    means = None
    if "mean" in modes:  # a first pass: every head's mean output over these images
        total = 0.0
        for start in starts:
            pixels = pixels_of(start)
            total = total + head_means(model, pixels, batch_size) * len(pixels)
            done += 1
            if progress is not None:
                progress(done, steps)
        means = total / len(data)
    # (mode, layer, head) for a head ablated alone, ("skip", layer, -1) for a layer skipped whole
    variants = {
        (mode, layer, head): ablated(model, Ablation.of([(layer, head)], mode=mode, means=means))
        for mode in modes
        for layer in range(depth)
        for head in range(num_heads)
    }
    variants.update({("skip", layer, -1): ablated(model, Ablation.of(layers=[layer])) for layer in range(depth)})
    right = dict.fromkeys(variants, 0)
    clean = 0
    for start in starts:
        labels = data.labels[start : start + batch_size]
        hidden = streams(model, pixels_of(start))
        clean += _correct(model.forward_head(model.norm(hidden[-1])), labels)
        for (mode, layer, head), variant in variants.items():
            right[(mode, layer, head)] += _correct(forward_from(variant, hidden[layer], layer), labels)
        done += 1
        if progress is not None:
            progress(done, steps)
    n = len(data)
    clean = clean / n
    heads = {
        mode: [[right[(mode, layer, head)] / n for head in range(num_heads)] for layer in range(depth)]
        for mode in modes
    }
    layers = [right[("skip", layer, -1)] / n for layer in range(depth)]
    return {
        "images": n,
        "accuracy": clean,
        "head_accuracy": heads,
        "head_drop": {mode: [[round(clean - a, 6) for a in row] for row in grid] for mode, grid in heads.items()},
        "layer_accuracy": layers,
        "layer_drop": [round(clean - a, 6) for a in layers],
    }


def _correct(logits: Tensor, labels: Tensor) -> int:
    return int((logits.argmax(dim=-1).cpu() == labels).sum())


def ablation_path(weights: Path) -> Path:
    """Where the shipped head-ablation grid of the weights file ``weights`` sits: beside it."""
    return shipped_path(weights, ABLATION_SUFFIX)


def save(grid: dict[str, Any], path: Path, model: VisionTransformer, data: ImageSet, settings: dict[str, Any]) -> None:
    """Write ``accuracy_grid``'s result with what makes it stale (``evaluate.save_table``)."""
    save_table(grid, path, model, data, settings)


def read_stored(path: Path | None, model: VisionTransformer) -> dict[str, Any] | None:
    """The stored grid at ``path`` when these weights made it (``evaluate.read_table``)."""
    return read_table(path, model)


def main(argv: list[str] | None = None) -> int:
    parser = commandline.analysis_parser("vitviz.analyses.ablation", __doc__, images=None, out="the grid")
    parser.add_argument("--mode", choices=[*MODES, "both"], default="both")
    parser.add_argument("--batch-size", type=int, default=BATCH)
    args = commandline.parse(parser, argv)
    try:
        model, spec = zoo.load(args.model, device="cpu")
        if not isinstance(model, VisionTransformer):
            raise ValueError(f"{spec.name} is not a ViT: head ablation needs attention heads.")
        split = load_split(args.data, "test")
        data = spread_subset(split, args.images)
        bar, advance = commandline.progress("ablation", "batch", args.json)
        started = time.perf_counter()
        modes = MODES if args.mode == "both" else (args.mode,)
        grid = accuracy_grid(model, data, modes, args.batch_size, progress=advance)
        bar.close()
    except (zoo.ModelLoadError, FileNotFoundError, ValueError) as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    if args.out is not None:
        choice = (
            "the whole test split" if len(data) == len(split) else "at even strides (vitviz.models.data.spread_subset)"
        )
        settings = {
            "model": spec.name,
            "choice": f"{len(data)} test images, {choice}",
            "mean_over": "the same test images, per token position",
            "seconds": round(time.perf_counter() - started, 1),
            "threads": torch.get_num_threads(),
        }
        save(grid, args.out, model, data, settings)
    # layers and heads counted from 1, as people count them (the code's blocks[0] is layer 1)
    print(f"clean accuracy {grid['accuracy']:.4f} on {grid['images']} images; drop with each head ablated alone:")
    for mode, rows in grid["head_drop"].items():
        print(f"  {mode} (heads 1 to {len(rows[0])}):")
        for layer, row in enumerate(rows, 1):
            print(f"    layer {layer}: " + "  ".join(f"{d:+.4f}" for d in row))
    skipped = "  ".join(f"{d:+.4f}" for d in grid["layer_drop"])
    print(f"  whole layer skipped (layers 1 to {len(grid['layer_drop'])}): {skipped}")
    if args.json:
        print(json.dumps(grid))
    return 0


if __name__ == "__main__":
    sys.exit(main())
