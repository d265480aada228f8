"""Which explanation can you trust? Deletion and insertion curves for every attribution.

    python -m vitviz faithfulness --model cifar10-vit --data ../shared/data/cifar10-jpeg --images 500 --json

An attribution map ranks the patches of an image. If the ranking is faithful, the model's answer
depends on the top patches: removing them first (deletion) makes the probability of the class
the model predicts on the whole image fall fast, and revealing them first on an image with every
patch removed (insertion) makes it rise fast (Petsiuk, Das & Saenko, "RISE: Randomized Input
Sampling for Explanation of Black-box Models", BMVC 2018). A *removed* patch becomes the
dataset's mean colour, 0 after normalisation, as the occlusion step of the tour removes them
(``analysis.occlude``). The area under a curve is its mean over the ``steps + 1`` evenly spaced
points (the reading of ``analysis.occlusion_reading``): low for deletion and high for insertion
is faithful. Every probability is the one the maps explain (``explained_pass``): a ViT's one pass,
as the tour traces it, even where the model answers elsewhere with the mean of the image and its
mirror image; a CNN's answer, as its Grad-CAM.

The rankings, each from what the app already computes:

- "attention": the last block's attention of the readout token ([CLS]), mean of the heads
  (``analysis.readout_attention``);
- "rollout": attention rollout (``analysis.rollout_map``);
- "gradient_rollout": gradient-weighted rollout for the class (``analysis.grad_rollout``);
- "integrated_gradients": integrated gradients from the mean-colour baseline, summed per patch
  (``compare.integrated_gradients``);
- "gradcam" (a CNN's): Grad-CAM summed per patch of a grid like the ViT's (``compare.gradcam``);
- "occlusion": each patch removed alone, the drop of the probability;
- "random": several seeded random orders; their mean curve, and the spread of their areas,
  are what "no better than chance" is measured against.

Nothing here talks to Streamlit or writes sentences: ``read`` returns keys and numbers, and
``sentences`` the i18n keys ("trust.*") and values that ``vitviz.analyses.claims.text`` writes in a language.
"""

from __future__ import annotations

import json
import logging
import statistics
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch
from torch import Tensor, nn

from vitviz import commandline
from vitviz.analyses import analysis, compare
from vitviz.analyses.claims import Claim
from vitviz.analyses.evaluate import check_classes, read_table, save_table, shipped_path
from vitviz.models import zoo
from vitviz.models.cnn import ConvNet
from vitviz.models.data import ImageSet, load_split, preprocess_batch, spread_subset
from vitviz.models.model import VisionTransformer, explained_pass, on_weights
from vitviz.models.trace import Trace

log = logging.getLogger(__name__)

Progress = Callable[[int, int], None]

RANDOM = "random"
VIT_METHODS = ("occlusion", "attention", "rollout", "gradient_rollout", "integrated_gradients")
CNN_METHODS = ("occlusion", "gradcam", "integrated_gradients")
ANY_MODEL_METHODS = ("occlusion", "integrated_gradients")  # what needs nothing but logits and gradients
# 8 steps remove 8 of the CIFAR ViT's 64 patches at a time: 2 x 7 images per ranking besides the
# full and the blank image, which every curve shares, so 13 rankings (8 of them the random orders
# that give the chance band its width) and the 64 single-patch images of "occlusion" make about 250
# images, one image's explanation within a 2 s budget on two CPU cores (docs/trust.md).
STEPS = 8
RANDOM_ORDERS = 8
IG_STEPS = compare.IG_STEPS  # the ViT-vs-CNN page's integrated gradients, so the app's cached maps can be reused
CNN_GRID = 8  # a CNN has no patches: its input is cut into about 8 x 8 squares, like the CIFAR ViT's
BATCH = 128  # images per forward pass: the fastest batch on 1-2 CPU threads for the CIFAR ViT
FILL = 0.0  # a removed patch in normalised space: the dataset's mean colour
FAITHFULNESS_SUFFIX = ".faithfulness.json"

# The verdict of a ranking against the random orders: its margin (insertion area minus deletion
# area) above every random order's, inside their range, or below every one.
BETTER, CHANCE, WORSE = "better", "chance", "worse"


# ---------------------------------------------------------------------------------------------
# Patches and rankings
# ---------------------------------------------------------------------------------------------


def methods_for(model: nn.Module) -> tuple[str, ...]:
    """The rankings that apply to ``model``, "random" first: a ViT's five, a CNN's three (Grad-CAM
    instead of the attention maps), or for any other classifier occlusion and integrated gradients."""
    if isinstance(model, VisionTransformer):
        return (RANDOM, *VIT_METHODS)
    if isinstance(model, ConvNet):
        return (RANDOM, *CNN_METHODS)
    return (RANDOM, *ANY_MODEL_METHODS)


def patch_size_for(model: nn.Module, image_size: tuple[int, int]) -> int:
    """The side in pixels of the squares that are removed: a ViT's own token size (its patches);
    for any other model about ``CNN_GRID`` squares down the shorter side (4 px for 32 x 32 inputs,
    the CIFAR ViT's patch)."""
    config = getattr(model, "config", None)
    if isinstance(model, VisionTransformer) and config is not None:
        return config.token_size
    return max(1, round(min(image_size) / CNN_GRID))


def per_patch(values: Tensor, patch_size: int) -> Tensor:
    """Sum a pixel map over every patch: (H, W) -> (N,) in row-major patch order.

    Pixels past the last whole patch (an image side that is not a multiple of ``patch_size``)
    are left out, as ``analysis.occlude`` leaves them in place.
    """
    height, width = values.shape[-2:]
    grid_h, grid_w = height // patch_size, width // patch_size
    cropped = values[..., : grid_h * patch_size, : grid_w * patch_size]
    blocks = cropped.reshape(grid_h, patch_size, grid_w, patch_size)  # (grid_h, P, grid_w, P)
    return blocks.sum(dim=(1, 3)).flatten()  # (N,)


def ranking(scores: Tensor) -> Tensor:
    """(N,) scores -> (N,) the patches, highest score first; ties keep the lower patch index first."""
    return torch.sort(scores.float().cpu(), descending=True, stable=True).indices


def random_orders(num_patches: int, count: int, seed: int) -> Tensor:
    """(count, N): ``count`` random permutations, fixed by ``seed``."""
    generator = torch.Generator().manual_seed(seed)
    return torch.stack([torch.randperm(num_patches, generator=generator) for _ in range(count)])


def _patch_map(values: Tensor, patch_size: int, num_patches: int) -> Tensor:
    """A map given per patch ((grid_h, grid_w) or (N,)) or per pixel ((H, W)) as (N,) per patch."""
    values = values.detach().float().cpu()
    if values.numel() == num_patches:
        return values.flatten()
    return per_patch(values, patch_size)


def method_scores(
    model: nn.Module,
    pixels: Tensor,
    method: str,
    target: int,
    patch_size: int,
    trace: Trace | None = None,
) -> Tensor:
    """One attribution method's score of every patch, (N,) on the CPU; higher = ranked first.

    Covers every method but "occlusion" and "random", which ``faithfulness`` computes from its
    batched forward passes.

    Args:
        model: the classifier in eval mode.
        pixels: (1, C, H, W) normalised.
        method: one of ``methods_for(model)``.
        target: the class explained.
        patch_size: the side of a patch in pixels (``patch_size_for``).
        trace: ``model.explain(pixels)`` for a ViT, if already at hand.
    """
    if method in ("attention", "rollout"):
        if trace is None:
            with torch.no_grad():
                trace = model.explain(pixels)
        if method == "attention":
            maps = analysis.readout_attention(trace, -1)  # (1, heads, grid_h, grid_w)
            return analysis.select_head(maps, None)[0].flatten().float().cpu()  # mean of the heads
        return analysis.rollout_map(trace)[0].flatten().float().cpu()
    if method == "gradient_rollout":
        return analysis.grad_rollout(model, pixels, target).flatten()
    if method == "integrated_gradients":
        return per_patch(compare.integrated_gradients(model, pixels, target, steps=IG_STEPS), patch_size)
    if method == "gradcam":
        return per_patch(compare.gradcam(model, pixels, target), patch_size)
    raise ValueError(f"Unknown attribution {method!r}: choose one of {', '.join(methods_for(model))}.")


# ---------------------------------------------------------------------------------------------
# Curves
# ---------------------------------------------------------------------------------------------


@torch.no_grad()
def probabilities(
    model: nn.Module,
    pixels: Tensor,
    hidden: Tensor,
    patch_size: int,
    target: int | None = None,
    batch_size: int = BATCH,
) -> Tensor:
    """The probability of one class for copies of an image with some patches removed.

    Identical masks (every curve's full and blank image, the first steps two rankings share) go
    through the model once, by the pass its maps explain (``explained_pass``).

    Args:
        model: the classifier in eval mode.
        pixels: (1, C, H, W) normalised.
        hidden: (M, N) bool, True = the patch is removed (set to ``FILL``).
        patch_size: side of a patch in pixels.
        target: the class to follow; None: all classes.
        batch_size: images per forward pass.

    Returns:
        (M,) float on the CPU, or (M, K) for ``target=None``.
    """
    unique, inverse = torch.unique(hidden.cpu(), dim=0, return_inverse=True)  # (U, N), (M,)
    pixels = on_weights(pixels, model)
    explained = explained_pass(model)
    probs = []
    for start in range(0, len(unique), batch_size):
        images = analysis.occlude(pixels, unique[start : start + batch_size], patch_size, FILL)  # (b, C, H, W)
        probs.append(explained(images).float().softmax(dim=-1).cpu())  # (b, K)
    table = torch.cat(probs)  # (U, K)
    table = table if target is None else table[:, target]
    return table[inverse]


def curve_masks(orders: Tensor, steps: int) -> tuple[Tensor, Tensor]:
    """The removed patches of every step of the deletion and the insertion curve of each order.

    Returns:
        deletion, insertion: each (R, steps + 1, N) bool. Deletion step s removes the first
        ``analysis.occlusion_counts(N, steps)[s]`` patches of the order; insertion step s shows
        that many and removes the rest, so it starts from the blank image and ends at the full one.
    """
    deletion = torch.stack([analysis.occlusion_masks(order, steps) for order in orders])  # (R, S+1, N)
    return deletion, ~deletion


@dataclass(frozen=True)
class MethodCurves:
    """One ranking of the patches and what removing or revealing them in that order does.

    Attributes:
        method: its name ("rollout", "random", ...).
        scores: (N,) the attribution of every patch (higher first); None for "random".
        orders: (R, N) the patches, first removed first; R = 1 except for "random".
        deletion: (R, S + 1) the target's probability as the first patches are removed.
        insertion: (R, S + 1) the same as the first patches are revealed on the blank image.
    """

    method: str
    scores: Tensor | None
    orders: Tensor
    deletion: Tensor
    insertion: Tensor

    @property
    def order(self) -> Tensor:
        """(N,): the ranking (the first random order for "random")."""
        return self.orders[0]

    @property
    def deletion_curve(self) -> Tensor:
        """(S + 1,): the mean over the orders."""
        return self.deletion.mean(dim=0)

    @property
    def insertion_curve(self) -> Tensor:
        return self.insertion.mean(dim=0)

    @property
    def deletion_aucs(self) -> Tensor:
        """(R,): the area under each order's deletion curve, its mean over the evenly spaced steps."""
        return self.deletion.mean(dim=-1)

    @property
    def insertion_aucs(self) -> Tensor:
        return self.insertion.mean(dim=-1)

    @property
    def deletion_auc(self) -> float:
        return float(self.deletion_aucs.mean())

    @property
    def insertion_auc(self) -> float:
        return float(self.insertion_aucs.mean())

    @property
    def margins(self) -> Tensor:
        """(R,): insertion area minus deletion area of each order; higher is more faithful."""
        return self.insertion_aucs - self.deletion_aucs

    @property
    def margin(self) -> float:
        return float(self.margins.mean())


@dataclass(frozen=True)
class Faithfulness:
    """Deletion and insertion curves of every ranking for one image.

    Attributes:
        target: the class followed, the model's answer on the whole image (unless one was given).
        probability: its probability on the whole image.
        blank_probability: its probability with every patch removed.
        counts: (S + 1,) patches removed (deletion) or revealed (insertion) at each step.
        patch_size: the side of a removed square in pixels.
        grid_size: (grid_h, grid_w) of those squares.
        methods: method name -> its curves, "random" first.
    """

    target: int
    probability: float
    blank_probability: float
    counts: Tensor
    patch_size: int
    grid_size: tuple[int, int]
    methods: dict[str, MethodCurves]

    @property
    def fractions(self) -> Tensor:
        """(S + 1,): the share of the patches removed (or revealed) at each step, for an x axis."""
        return self.counts.float() / self.counts[-1].clamp_min(1)


def faithfulness(
    model: nn.Module,
    pixels: Tensor,
    *,
    methods: Sequence[str] | None = None,
    target: int | None = None,
    steps: int = STEPS,
    num_random: int = RANDOM_ORDERS,
    seed: int = 0,
    patch_size: int | None = None,
    trace: Trace | None = None,
    maps: Mapping[str, Tensor] | None = None,
    batch_size: int = BATCH,
) -> Faithfulness:
    """Deletion and insertion curves of every ranking of one image's patches.

    Two rounds of batched forward passes: the whole image and every patch removed alone (the
    "occlusion" scores), then every step of every curve (masks shared between curves run once).

    Args:
        model: a classifier in eval mode (a ViT, a ``ConvNet``, or any module from (B, C, H, W)
            pixels to (B, K) logits); its parameters are not changed.
        pixels: (1, C, H, W) normalised, on any device.
        methods: the rankings (default ``methods_for(model)``); "random" is always added.
        target: the class to follow; None: the model's answer on the whole image.
        steps: points per curve minus one (clipped to the number of patches).
        num_random: random orders (seeds ``seed``, ...).
        seed: of the random orders.
        patch_size: the side of a removed square; default ``patch_size_for``.
        trace: ``model.explain(pixels)`` of a ViT, when at hand (the app's cached trace).
        maps: method -> a map already computed for ``target`` (per patch (grid_h, grid_w) or per
            pixel (H, W), e.g. the app's cached gradient rollout or integrated gradients).
        batch_size: images per forward pass.

    Returns:
        A ``Faithfulness`` with one ``MethodCurves`` per ranking.
    """
    if pixels.dim() == 3:
        pixels = pixels[None]
    if pixels.dim() != 4 or pixels.shape[0] != 1:
        raise ValueError(f"faithfulness takes one image, (1, C, H, W), got {tuple(pixels.shape)}.")
    if num_random < 1:
        raise ValueError(f"num_random must be at least 1, not {num_random}.")
    allowed = methods_for(model)
    wanted = [m for m in (methods if methods is not None else allowed) if m != RANDOM]
    unknown = [m for m in wanted if m not in allowed]
    if unknown:
        raise ValueError(f"{', '.join(unknown)} cannot rank this model's patches: choose from {', '.join(allowed)}.")
    pixels = on_weights(pixels, model)  # every ranking's pass runs where the weights are
    height, width = pixels.shape[-2:]
    patch_size = patch_size or patch_size_for(model, (height, width))
    grid_size = (height // patch_size, width // patch_size)
    num_patches = grid_size[0] * grid_size[1]
    steps = max(1, min(steps, num_patches))

    # Round 1: the whole image, then each patch removed alone (the occlusion ranking's scores).
    alone = torch.eye(num_patches, dtype=torch.bool)[: num_patches if "occlusion" in wanted else 0]  # (N or 0, N)
    first = torch.cat([torch.zeros(1, num_patches, dtype=torch.bool), alone])  # (1 (+ N), N)
    probs = probabilities(model, pixels, first, patch_size, None, batch_size)  # (1 (+ N), K)
    if target is None:
        target = int(probs[0].argmax())
    scores: dict[str, Tensor | None] = {RANDOM: None}
    for method in wanted:
        if method == "occlusion":
            scores[method] = probs[0, target] - probs[1:, target]  # the drop when the patch alone is removed
        elif maps is not None and method in maps:
            scores[method] = _patch_map(torch.as_tensor(maps[method]), patch_size, num_patches)
        else:
            scores[method] = method_scores(model, pixels, method, target, patch_size, trace)

    # Round 2: every step of every curve, in one pool of masks.
    orders = {RANDOM: random_orders(num_patches, num_random, seed)}
    orders.update({m: ranking(s)[None] for m, s in scores.items() if s is not None})  # each (1, N)
    all_orders = torch.cat(list(orders.values()))  # (R + methods, N)
    deletion, insertion = curve_masks(all_orders, steps)  # each (R', S+1, N)
    hidden = torch.cat([deletion, insertion]).reshape(-1, num_patches)
    curves = probabilities(model, pixels, hidden, patch_size, target, batch_size)
    curves = curves.reshape(2, len(all_orders), steps + 1)  # (deletion / insertion, R', S+1)
    results, start = {}, 0
    for method, method_orders in orders.items():
        stop = start + len(method_orders)
        results[method] = MethodCurves(
            method, scores[method], method_orders, curves[0, start:stop], curves[1, start:stop]
        )
        start = stop
    return Faithfulness(
        target=target,
        probability=float(probs[0, target]),
        blank_probability=float(curves[0, 0, -1]),
        counts=analysis.occlusion_counts(num_patches, steps),
        patch_size=patch_size,
        grid_size=grid_size,
        methods=results,
    )


# ---------------------------------------------------------------------------------------------
# Reading the curves
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Reading:
    """Which ranking the model's answer follows best, and which do no better than chance.

    A ranking's *margin* is its insertion area minus its deletion area: high when revealing its
    top patches restores the answer fast and removing them destroys it fast. The random orders
    give a band of margins; a ranking is "better" than chance above every random order's margin,
    "worse" below every one, else "chance".

    Attributes:
        best: the ranking with the highest margin (ties: the first in the result's order).
        best_deletion: the ranking with the lowest deletion area.
        best_insertion: the ranking with the highest insertion area.
        margins: ranking -> its margin; "random" -> the mean over its orders.
        deletion, insertion: ranking -> its area.
        chance_low, chance_high: the lowest and highest margin of the random orders.
        verdicts: ranking (not "random") -> "better", "chance" or "worse".
        orders: how many random orders made the band.
    """

    best: str
    best_deletion: str
    best_insertion: str
    margins: dict[str, float]
    deletion: dict[str, float]
    insertion: dict[str, float]
    chance_low: float
    chance_high: float
    verdicts: dict[str, str]
    orders: int

    def with_verdict(self, verdict: str) -> list[str]:
        """The rankings with this verdict, in the result's order."""
        return [method for method, said in self.verdicts.items() if said == verdict]


def read(result: Faithfulness) -> Reading:
    """Read one image's curves into keys and numbers (``sentences`` turns them into i18n keys).

    Raises:
        ValueError: the result holds no ranking besides the random orders.
    """
    ranked = {m: c for m, c in result.methods.items() if m != RANDOM}
    if not ranked:
        raise ValueError("There is no ranking to read besides the random orders: ask for at least one method.")
    band = result.methods[RANDOM].margins
    low, high = float(band.min()), float(band.max())
    margins = {m: c.margin for m, c in result.methods.items()}
    verdicts = {m: BETTER if margins[m] > high else WORSE if margins[m] < low else CHANCE for m in ranked}
    return Reading(
        best=max(ranked, key=lambda m: margins[m]),
        best_deletion=min(ranked, key=lambda m: ranked[m].deletion_auc),
        best_insertion=max(ranked, key=lambda m: ranked[m].insertion_auc),
        margins=margins,
        deletion={m: c.deletion_auc for m, c in result.methods.items()},
        insertion={m: c.insertion_auc for m, c in result.methods.items()},
        chance_low=low,
        chance_high=high,
        verdicts=verdicts,
        orders=len(band),
    )


def sentences(reading: Reading) -> list[Claim]:
    """What one image's curves say, as i18n keys ("trust.*") and the values that fill them
    (``claims.text(sentences(reading), lang)`` writes them): which ranking the answer follows best,
    then which rankings do no better than the random orders, or worse.

    A ranking is best by its margin; when the lowest deletion area and the highest insertion area
    belong to other rankings, the sentence names them too.
    """
    best = reading.best
    values = {
        "method": _method(best),
        "margin": reading.margins[best],
        "deletion": reading.deletion[best],
        "insertion": reading.insertion[best],
        "deletion_method": _method(reading.best_deletion),
        "insertion_method": _method(reading.best_insertion),
    }
    if reading.best_deletion == best and reading.best_insertion == best:
        said = [Claim("trust.best_both", values)]
    elif reading.best_deletion == best:  # its top patches removed hurt most; another's revealed restore faster
        said = [Claim("trust.best_deletion", values)]
    elif reading.best_insertion == best:
        said = [Claim("trust.best_insertion", values)]
    else:
        said = [Claim("trust.best_split", values)]
    band = {"orders": reading.orders, "low": reading.chance_low, "high": reading.chance_high}
    better, chance, worse = (reading.with_verdict(v) for v in (BETTER, CHANCE, WORSE))
    if not better:
        said.append(Claim("trust.none_better", band))
    elif len(better) == len(reading.verdicts):
        said.append(Claim("trust.all_better", band))
    if chance:
        said.append(Claim("trust.chance", {**band, "methods": tuple(_method(m) for m in chance)}))
    if worse:
        said.append(Claim("trust.worse", {**band, "methods": tuple(_method(m) for m in worse)}))
    return said


def _method(name: str) -> Claim:
    """A ranking's name in the reader's language ("rollout" -> "attention rollout")."""
    return Claim(f"trust.method.{name}")


# ---------------------------------------------------------------------------------------------
# Over a test set, and the shipped file
# ---------------------------------------------------------------------------------------------


def faithfulness_path(weights: Path) -> Path:
    """Where the shipped faithfulness table of the weights file ``weights`` sits: beside it."""
    return shipped_path(weights, FAITHFULNESS_SUFFIX)


def over_images(
    model: nn.Module,
    data: ImageSet,
    *,
    steps: int = STEPS,
    num_random: int = RANDOM_ORDERS,
    seed: int = 0,
    patch_size: int | None = None,
    progress: Progress | None = None,
) -> dict[str, Any]:
    """The deletion and insertion areas of every ranking over a set of images.

    Image i's random orders use the seed ``seed + i``, so the random band varies across images.

    Returns:
        {"images": n, "methods": {method: {"deletion_auc", "deletion_auc_std", "insertion_auc",
        "insertion_auc_std", ...}}, "curves": {method: {"deletion": [...], "insertion": [...]}},
        "counts": [...]}: means and standard deviations across the images (population std);
        "random" adds "deletion_auc_orders_std" and "insertion_auc_orders_std" (the spread across
        its orders, averaged over the images); every other ranking adds "beats_random" and
        "below_random", the share of images whose verdict (``read``) is "better" or "worse".
    """
    check_classes(model, data)
    model.eval()
    results = []
    for i in range(len(data)):
        pixels = preprocess_batch(data.images[i : i + 1], model.config.preprocess, model.config.in_chans)
        results.append(
            faithfulness(model, pixels, steps=steps, num_random=num_random, seed=seed + i, patch_size=patch_size)
        )
        if progress is not None:
            progress(i + 1, len(data))
    return summarise(results)


def summarise(results: Sequence[Faithfulness]) -> dict[str, Any]:
    """The table of ``over_images`` from one ``Faithfulness`` per image."""
    if not results:
        raise ValueError("There are no images to summarise: give at least one.")
    n = len(results)
    readings = [read(result) for result in results]
    table: dict[str, dict[str, float]] = {}
    curves: dict[str, dict[str, list[float]]] = {}
    for method in results[0].methods:
        per_image = [result.methods[method] for result in results]
        deletion = [curve.deletion_auc for curve in per_image]
        insertion = [curve.insertion_auc for curve in per_image]
        row = {
            "deletion_auc": statistics.fmean(deletion),
            "deletion_auc_std": statistics.pstdev(deletion),
            "insertion_auc": statistics.fmean(insertion),
            "insertion_auc_std": statistics.pstdev(insertion),
        }
        if method == RANDOM:  # the spread of one image's random orders, averaged over the images
            row["deletion_auc_orders_std"] = statistics.fmean(
                float(c.deletion_aucs.std(unbiased=False)) for c in per_image
            )
            row["insertion_auc_orders_std"] = statistics.fmean(
                float(c.insertion_aucs.std(unbiased=False)) for c in per_image
            )
        else:
            verdicts = [reading.verdicts[method] for reading in readings]
            row["beats_random"] = verdicts.count(BETTER) / n
            row["below_random"] = verdicts.count(WORSE) / n
        table[method] = {key: round(value, 4) for key, value in row.items()}
        mean_deletion = sum(curve.deletion_curve for curve in per_image)  # (S + 1,), then divided by n
        mean_insertion = sum(curve.insertion_curve for curve in per_image)
        curves[method] = {
            "deletion": [round(float(v) / n, 4) for v in mean_deletion],
            "insertion": [round(float(v) / n, 4) for v in mean_insertion],
        }
    return {"images": n, "methods": table, "curves": curves, "counts": results[0].counts.tolist()}


def save(summary: dict[str, Any], path: Path, model: nn.Module, data: ImageSet, settings: dict[str, Any]) -> None:
    """Write the table of ``over_images`` with what makes it stale (``evaluate.save_table``) and
    what a removed patch became."""
    save_table(summary, path, model, data, {"removed": "the dataset's mean colour (0 after normalisation)", **settings})


def read_stored(path: Path | None, model: nn.Module) -> dict[str, Any] | None:
    """The stored table at ``path`` when these weights made it (``evaluate.read_table``)."""
    return read_table(path, model)


def main(argv: list[str] | None = None) -> int:
    parser = commandline.analysis_parser("vitviz.analyses.faithfulness", __doc__, images=500, out="the table")
    parser.add_argument("--steps", type=int, default=STEPS)
    parser.add_argument("--random-orders", type=int, default=RANDOM_ORDERS)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--patch-size", type=int, default=None, help="a CNN's removed squares (default: about 8 a side)"
    )
    args = commandline.parse(parser, argv)
    try:
        model, spec = zoo.load(args.model, device="cpu")
        data = spread_subset(load_split(args.data, "test"), args.images)
        bar, advance = commandline.progress("faithfulness", "img", args.json, total=len(data))
        started = time.perf_counter()
        summary = over_images(
            model,
            data,
            steps=args.steps,
            num_random=args.random_orders,
            seed=args.seed,
            patch_size=args.patch_size,
            progress=advance,
        )
        bar.close()
    except (zoo.ModelLoadError, FileNotFoundError, ValueError) as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    seconds = time.perf_counter() - started
    if args.out is not None:
        settings = {
            "model": spec.name,
            "choice": f"{len(data)} test images at even strides (vitviz.models.data.spread_subset)",
            "steps": len(summary["counts"]) - 1,
            "random_orders": args.random_orders,
            "seed": args.seed,
            "patch_size": args.patch_size or patch_size_for(model, tuple(model.config.image_size)),
            "seconds": round(seconds, 1),
            "threads": torch.get_num_threads(),
        }
        save(summary, args.out, model, data, settings)
    table = {"images": summary["images"], "methods": summary["methods"]}
    for method, row in table["methods"].items():
        print(
            f"{method:<22} deletion {row['deletion_auc']:.3f} ± {row['deletion_auc_std']:.3f}   "
            f"insertion {row['insertion_auc']:.3f} ± {row['insertion_auc_std']:.3f}"
        )
    if args.json:
        print(json.dumps(table))
    return 0


if __name__ == "__main__":
    sys.exit(main())
