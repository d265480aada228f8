"""Trace one image through a ViT and print the top-5 classes and every tensor's shape.

    python -m vitviz explain photo.jpg [--model NAME] [--device cpu]

The table is the one people build by hand when they first read the paper:
(1,3,224,224) -> (1,768,14,14) -> (1,196,768) -> (1,197,768) -> ... -> (1,1000).
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from pathlib import Path

import torch

from vitviz import commandline
from vitviz.models import zoo
from vitviz.models.data import ImageError, image_notes, load_image, to_tensor
from vitviz.models.prediction import top_k
from vitviz.models.trace import forward_steps

LISTED = 20  # classes named one by one; more are counted


def known_classes(names: Sequence[str]) -> str:
    """What the model can answer: a photo of anything else still gets one of these, with a
    probability that says nothing about whether the photo shows it."""
    listed = f": {', '.join(names)}" if len(names) <= LISTED else f" (the first: {', '.join(names[:5])} ...)"
    return (
        f"The model knows only these {len(names)} classes{listed}. It answers with one of them whatever the "
        "image shows, so a high probability for a photo of something else means nothing."
    )


def main(argv: list[str] | None = None) -> int:
    parser = commandline.parser("vitviz.models.explain", __doc__)
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
    for name, prob in top_k(model.config.class_names, trace.logits):
        print(f"  {prob:7.2%}  {name}")
    print(f"\n{known_classes(model.config.class_names)}")
    print("\nshapes:")
    rows = [(code, shape) for _, code, shape in forward_steps(model.config, trace, per_block=True)]
    width = max(len(code) for code, _ in rows)
    for code, shape in rows:
        print(f"  {code:<{width}}  ({','.join(map(str, shape))})")
    print(
        "\n"
        + " -> ".join(f"({','.join(map(str, shape))})" for _, shape in rows[:5])
        + " -> ... -> "
        + f"({','.join(map(str, rows[-1][1]))})"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
