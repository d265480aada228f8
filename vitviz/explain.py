"""Trace one image through a ViT and print the top-5 classes and every tensor's shape.

    python -m vitviz.explain photo.jpg [--model NAME] [--device cpu]

The table is the one people build by hand when they first read the paper:
(1,3,224,224) -> (1,768,14,14) -> (1,196,768) -> (1,197,768) -> ... -> (1,1000).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import torch

from vitviz import zoo
from vitviz.config import ViTConfig
from vitviz.data import ImageError, image_notes, load_image, to_tensor
from vitviz.model import VisionTransformer
from vitviz.trace import Trace


def shape_table(model: VisionTransformer, trace: Trace) -> list[tuple[str, tuple[int, ...]]]:
    """(step, shape) rows in the order the data flows, the conv output included."""
    config = model.config
    batch = trace.pixels.shape[0]
    grid_h, grid_w = trace.grid_size
    rows: list[tuple[str, tuple[int, ...]]] = [("input image (preprocessed)", tuple(trace.pixels.shape))]
    if trace.features is not None:
        rows.append((f"patch_embed.backbone: {resnet_name(config)} feature map", tuple(trace.features.shape)))
    what = "feature-map cells" if config.is_hybrid else "raw pixels"
    rows += [
        (
            f"patch_embed.proj: Conv2d(k={config.patch_size}, s={config.patch_size})",
            (batch, config.embed_dim, grid_h, grid_w),
        ),
        (f"patches: {what}, (c p1 p2) order", tuple(trace.patches.shape)),
        ("patch tokens: flatten(2).transpose(1, 2)", tuple(trace.patch_tokens.shape)),
        (("[CLS] prepended + " if config.class_token else "") + "pos_embed added", tuple(trace.tokens.shape)),
    ]
    for i in range(trace.depth):
        rows.append((f"blocks.{i}.attn: softmax(QK^T/sqrt(d))", tuple(trace.attentions[i].shape)))
        rows.append((f"blocks.{i} output", tuple(trace.hidden_states[i + 1].shape)))
    pool = "[CLS] token" if config.global_pool == "token" else "mean of patch tokens"
    rows.append((f"norm, then {pool} (pre_logits)", tuple(trace.pre_logits.shape)))
    rows.append(("head: logits", tuple(trace.logits.shape)))
    return rows


def pipeline(model: VisionTransformer, trace: Trace) -> list[tuple[str, str, tuple[int, ...]]]:
    """The forward pass condensed to one row per kind of step: (step id, code, shape).

    Step ids are stable names ("input", "backbone" for a hybrid's ResNet, "conv", "patches",
    "tokens", "sequence", "attention", "block", "pre_logits", "logits") that the app
    translates into an explanation.
    """
    config = model.config
    batch = trace.pixels.shape[0]
    grid_h, grid_w = trace.grid_size
    last = trace.depth - 1
    stem = (
        []
        if trace.features is None
        else [("backbone", f"patch_embed.backbone  {resnet_name(config)}", tuple(trace.features.shape))]
    )
    return [
        ("input", "pixels", tuple(trace.pixels.shape)),
        *stem,
        ("conv", f"patch_embed.proj  Conv2d(k=s={config.patch_size})", (batch, config.embed_dim, grid_h, grid_w)),
        ("patches", "patchify  (c p1 p2)", tuple(trace.patches.shape)),
        ("tokens", "flatten(2).transpose(1, 2)", tuple(trace.patch_tokens.shape)),
        ("sequence", ("cat([CLS], x) + " if config.class_token else "x + ") + "pos_embed", tuple(trace.tokens.shape)),
        ("attention", f"blocks[0..{last}].attn  softmax(QK^T/sqrt(d))", tuple(trace.attentions[0].shape)),
        ("block", f"blocks[0..{last}]  x + MHSA(LN(x)); x + MLP(LN(x))", tuple(trace.hidden_states[-1].shape)),
        (
            "pre_logits",
            "norm(x)[:, 0]" if config.global_pool == "token" else "norm(x[:, 1:].mean(1))",
            tuple(trace.pre_logits.shape),
        ),
        ("logits", "head  Linear", tuple(trace.logits.shape)),
    ]


def resnet_name(config: ViTConfig) -> str:
    """The CNN of a hybrid ViT in timm's words: "ResNet-26 (2, 2, 2, 2)", or "ResNet stem"."""
    layers = config.hybrid_layers or ()
    if not layers:
        return "ResNet stem (7x7 conv, max pool)"
    return f"ResNet-{3 * sum(layers) + 2} {tuple(layers)}"


def top_k(model: VisionTransformer, logits: torch.Tensor, k: int = 5) -> list[tuple[str, float]]:
    """(class name, probability) of the k most likely classes of the first image."""
    probs = logits[0].float().softmax(dim=-1)
    values, indices = probs.topk(min(k, probs.numel()))
    names = model.config.class_names
    return [
        (names[i] if names else f"class {i}", float(v)) for v, i in zip(values.tolist(), indices.tolist(), strict=True)
    ]


@dataclass(frozen=True)
class Verdict:
    """The prediction of one image measured against its known class (a labelled test image)."""

    true_class: str
    predicted: str
    correct: bool
    rank: int  # 1-based rank of the true class among all num_classes
    probability: float  # softmax probability of the true class
    num_classes: int


def verdict(probs: torch.Tensor, class_names: Sequence[str], true_class: str | None) -> Verdict | None:
    """Compare one image's class probabilities (K,) with its true class; None when the class is
    unknown or not one of the model's."""
    if true_class is None or true_class not in class_names:
        return None
    target = list(class_names).index(true_class)
    predicted = int(probs.argmax())
    rank = 1 + int((probs > probs[target]).sum())
    return Verdict(true_class, class_names[predicted], predicted == target, rank, float(probs[target]), len(probs))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m vitviz.explain", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("image", help="an image file (JPEG, PNG, WebP, ...)")
    parser.add_argument(
        "--model", default=zoo.default_name(), help="registry name, timm:<name>, hf:<repo id> or a path"
    )
    parser.add_argument("--device", default=None)
    args = parser.parse_args(argv)
    try:
        image = load_image(Path(args.image).read_bytes())
        model, spec = zoo.load(args.model, device=args.device)
    except FileNotFoundError:
        print(f"error: there is no file {args.image}.", file=sys.stderr)
        return 2
    except (ImageError, zoo.ModelLoadError) as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    for note in image_notes(image):
        print(f"note: {note}")
    device = next(model.parameters()).device
    pixels = to_tensor(image, model.config.preprocess, model.config.in_chans).to(device)
    with torch.no_grad():
        trace = model.explain(pixels)
    print(f"model: {spec.name}{'' if spec.trained else '  (UNTRAINED: random weights)'}")
    print(f"image: {args.image} ({image.width}x{image.height})\n")
    print("top-5:")
    for name, prob in top_k(model, trace.logits):
        print(f"  {prob:7.2%}  {name}")
    print("\nshapes:")
    rows = shape_table(model, trace)
    width = max(len(step) for step, _ in rows)
    for step, shape in rows:
        print(f"  {step:<{width}}  ({','.join(map(str, shape))})")
    print(
        "\n"
        + " -> ".join(f"({','.join(map(str, shape))})" for _, shape in rows[:5])
        + " -> ... -> "
        + f"({','.join(map(str, rows[-1][1]))})"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
