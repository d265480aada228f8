"""Step 2: the image cut into a P x P patch grid: N = H W / P^2 patches."""

from __future__ import annotations

import numpy as np
from PIL import Image

from vitviz.analyses import claims
from vitviz.models.config import Preprocess
from vitviz.models.data import denormalize, resize_and_crop
from vitviz.models.patches import patch_arithmetic, patch_tiles, patchify
from vitviz.models.trace import resnet_name
from vitviz.render import plots
from vitviz.steps.blocks import (
    Choices,
    Control,
    Controls,
    Download,
    Figure,
    Figures,
    Heading,
    Metrics,
    Step,
    Text,
    shape_text,
)
from vitviz.steps.subject import Subject

CONCEPT_SIZES = (32, 64, 224, 384, 512)  # the "try it" figure's image sides, in pixels
CONCEPT_PATCHES = (2, 4, 8, 14, 16, 32, 64)
CONCEPT_MOST = 4096  # patches the "try it" figure still draws


def describe(subject: Subject, choices: Choices) -> Step:
    """The patch grid of the subject's image, its patches in reading order, and a figure to try
    other image and patch sizes (``concept_size``, ``concept_p``)."""
    tr, config, trace = subject.tr, subject.config, subject.trace
    p, square = config.patch_size, config.token_size  # pixels per token: P, or P x the ResNet's stride
    height, width = config.image_size
    grid_h, grid_w = trace.grid_size
    count = grid_h * grid_w
    blocks: list = []
    if config.is_hybrid:
        features = tuple(trace.features.shape[1:])
        blocks.append(
            Text(
                tr(
                    "patches.hybrid",
                    resnet=resnet_name(config),
                    height=height,
                    width=width,
                    p=p,
                    s=square,
                    features=features,
                    dim=config.patch_dim,
                ),
                role="info",
            )
        )
    vector = f"{config.patch_dim}" if config.is_hybrid else f"{p} x {p} x {config.in_chans} = {config.patch_dim}"
    metrics = [
        (tr("patches.image_size"), f"{height} x {width}"),
        (tr("patches.patch_size"), f"{p} x {p}"),
        (tr("patches.count"), f"{grid_h} x {grid_w} = {count}"),
        (tr("patches.vector"), vector),
    ]
    if config.is_hybrid:
        metrics += [
            (tr("patches.feature_map"), " x ".join(map(str, trace.features.shape[1:]))),
            (tr("patches.token_pixels"), f"{square} x {square}"),
        ]
    blocks.append(Metrics(tuple(metrics)))

    model_input = denormalize(trace.pixels[0], config.preprocess)
    squares = patchify(trace.pixels, square)[0]  # (N, C*s*s): of a hybrid, the squares its tokens stand for
    tiles = patch_tiles(squares, square, config.in_chans, config.preprocess.mean, config.preprocess.std).numpy()
    grid = plots.patch_grid(model_input, square, title=tr("patches.grid"), numbers=count <= 64)
    gallery = plots.patch_gallery(
        tiles, (grid_h, grid_w), title=tr("patches.hybrid_gallery" if config.is_hybrid else "patches.gallery")
    )
    cut = claims.patch_grid((height, width), square, (grid_h, grid_w), config.patch_dim, config.is_hybrid)
    blocks.append(
        Figures(
            (
                Figure("patches_grid", grid, subject.says(cut)),
                Figure("patches_gallery", gallery, subject.says(claims.patch_order(count, grid_w))),
            )
        )
    )

    blocks += [Heading(tr("patches.concept")), Text(tr("patches.concept_intro"))]
    size = choices.get("concept_size")
    size = size if size in CONCEPT_SIZES else CONCEPT_SIZES[-1]
    sides = tuple(q for q in CONCEPT_PATCHES if size % q == 0)
    concept_p = choices.get("concept_p")
    concept_p = concept_p if concept_p in sides else (16 if 16 in sides else sides[-1])
    blocks.append(
        Controls(
            (
                Control(
                    "concept_size",
                    "slider",
                    tr("patches.concept_size"),
                    CONCEPT_SIZES,
                    size,
                    f"{tr('patches.concept_size')}: {size}",
                ),
                Control(
                    "concept_p",
                    "slider",
                    tr("patches.concept_p"),
                    sides,
                    concept_p,
                    f"{tr('patches.concept_p')}: {concept_p}",
                ),
            )
        )
    )
    facts = patch_arithmetic((size, size), concept_p, config.in_chans)
    tokens = facts["num_patches"] + 1
    blocks.append(
        Metrics(
            (
                (tr("patches.count"), f"{facts['grid_h']} x {facts['grid_w']} = {facts['num_patches']}"),
                (tr("patches.vector"), f"{concept_p} x {concept_p} x {config.in_chans} = {facts['patch_dim']}"),
                (tr("patches.tokens"), f"{facts['num_patches']} + 1 = {tokens}"),
            )
        )
    )
    cost = claims.attention_pairs(tokens)
    if facts["num_patches"] <= CONCEPT_MOST:
        resized = np.asarray(
            resize_and_crop(Image.fromarray(subject.image), Preprocess(resize=size, crop=(size, size)))
        )
        title = tr(
            "patches.concept_title", size=size, p=concept_p, grid=facts["grid_h"], n=facts["num_patches"]
        )  # on a slide, the figure and its takeaway are all a class sees of this block
        concept = plots.patch_grid(resized, concept_p, title=title, height=420, clickable=False)
        blocks.append(Figure("patches_concept", concept, subject.says(cost)))
    else:
        blocks.append(Text(subject.says(cost), role="caption"))
    blocks.append(
        Download("download.npz", "patches.npz", "patches_npz", {"patches": trace.patches[0].numpy(), "tiles": tiles})
    )
    return Step(tr("page.patches"), tr("patches.intro"), tuple(blocks), shape=shape_text(trace.patches.shape))
