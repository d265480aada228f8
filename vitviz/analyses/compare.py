"""ViT against CNN on the same image: where each looked, and what each needs.

Attribution comes from Captum (PyTorch's attribution library) rather than hooks of our own:
``gradcam`` is Captum's LayerGradCam on a CNN's last feature map, and ``integrated_gradients``
is Captum's IntegratedGradients, which needs nothing of a model but its gradient, so it reads a
ViT and a CNN alike. The ViT's own maps (attention rollout, gradient-weighted rollout) live in
``vitviz.analyses.analysis``.

The experiments change the input or the model's position information, never a cached model:
``shuffle_patches`` and ``shift_image`` make new inputs, ``logits_without_position`` runs a ViT
forward with its position embeddings replaced.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np
import torch
import torch.nn.functional as F
from torch import Tensor, nn

from vitviz.analyses.analysis import grad_rollout, occlude, rollout_map
from vitviz.models.cnn import ConvNet
from vitviz.models.config import check_pixels
from vitviz.models.model import VisionTransformer, explained_pass, on_weights
from vitviz.models.patches import grid_size, patchify, unpatchify
from vitviz.models.trace import Trace


def _one_image(pixels: Tensor) -> Tensor:
    if pixels.dim() == 3:
        pixels = pixels[None]
    if pixels.dim() != 4 or pixels.shape[0] != 1:
        raise ValueError(f"Expected one image, (1, C, H, W) or (C, H, W), got {tuple(pixels.shape)}.")
    return pixels


def gradcam(model: ConvNet, pixels: Tensor, class_index: int) -> Tensor:
    """Grad-CAM (Selvaraju et al. 2017) of one class on the CNN's last feature map.

    A is the last group's output, the map the head pools (what jacobgil's pytorch-grad-cam reads
    from a ResNet's last block). Each channel k of A gets the weight alpha_k, the mean over positions
    of d logit / d A_k; the map is relu(sum_k alpha_k A_k), upsampled (bilinear) to the input.
    A CNN that averages the logits of the image and its mirror image (``config.test_flip``)
    looks at two views: the map is the mean of both views' maps, the mirror's flipped back.

    Args:
        model: a ``ConvNet`` in eval mode.
        pixels: (1, C, H, W) or (C, H, W), the normalised input.
        class_index: the class to explain.

    Returns:
        (H, W) float on the CPU, >= 0, in the units of the feature map (not normalised).
    """
    return gradcam_and_logits(model, pixels, class_index)[0]


def gradcam_and_logits(model: ConvNet, pixels: Tensor, class_index: int) -> tuple[Tensor, Tensor]:
    """``gradcam`` and the logits (K,) of the same forward pass (the mean of both views' for a
    mirror-averaging CNN): what ``model(pixels)[0]`` answers, at no extra pass."""
    maps, answer = gradcam_maps(model, pixels, class_index)
    return gradcam_from_maps(maps, tuple(pixels.shape[-2:]), model.config.test_flip), answer


def gradcam_maps(model: ConvNet, pixels: Tensor, class_index: int) -> tuple[Tensor, Tensor]:
    """Grad-CAM of every view on the last feature map, before it is upsampled: (V, h, w) on the
    model's device (V = 2 for a mirror-averaging CNN, the mirror's map not yet flipped back), and
    the logits (K,) on the CPU.

    No hooks and no copy of the model: the app shares one model among all its sessions, so the
    last group's map comes from ``forward_features`` (without gradients: Grad-CAM needs none
    below it) and only the head runs with them, d logit / d A through the pooling and one Linear.
    The model's parameters get no ``.grad``.
    """
    pixels = on_weights(_one_image(pixels).detach(), model)
    views = torch.cat([pixels, pixels.flip(-1)]) if model.config.test_flip else pixels  # (V, C, H, W), one batch
    with torch.no_grad():
        features = model.forward_features(views)  # (V, K_c, h, w)
    features.requires_grad_(True)
    with torch.enable_grad():
        logits = model.forward_head(features)  # (V, K)
        # each view's logit depends on its own map only: one backward gives every view's gradient
        (grad,) = torch.autograd.grad(logits[:, class_index].sum(), features)
    alpha = grad.mean(dim=(2, 3), keepdim=True)  # (V, K_c, 1, 1)
    cams = F.relu((alpha * features.detach()).sum(dim=1))  # (V, h, w)
    answer = logits.detach().mean(dim=0) if model.config.test_flip else logits.detach()[0]  # both answers averaged
    return cams, answer.float().cpu()


def gradcam_from_maps(maps: Tensor, size: tuple[int, int], mirrored: bool) -> Tensor:
    """``gradcam_maps``' maps (V, h, w) upsampled (bilinear) to the input's ``size`` (H, W), the
    mirror's (``mirrored``: the second view) flipped back and averaged with the image's: (H, W)
    float on the CPU."""
    cams = F.interpolate(maps[:, None], size=size, mode="bilinear")[:, 0]  # (V, H, W)
    cam = (cams[0] + cams[1].flip(-1)) / 2 if mirrored else cams[0]
    return cam.float().cpu()


IG_STEPS = 32  # integrated gradients' steps from the baseline to the image (page 8's toggle says it)


def integrated_gradients(model: nn.Module, pixels: Tensor, class_index: int, steps: int = IG_STEPS) -> Tensor:
    """Integrated gradients (Sundararajan et al. 2017) of one class, from a plain image of the
    dataset's mean colour.

    That baseline is the all-zero normalised input (Captum's default), not a black image. The attribution of
    every pixel is summed over the channels and taken in absolute value: how much the pixel
    mattered, whichever way.

    Returns:
        (H, W) float on the CPU, >= 0.
    """
    from captum.attr import IntegratedGradients

    pixels = on_weights(_one_image(pixels).detach(), model)
    attribution = IntegratedGradients(explained_pass(model)).attribute(
        pixels, target=class_index, n_steps=steps, internal_batch_size=steps
    )
    return attribution[0].sum(dim=0).abs().detach().float().cpu()  # (H, W)


def shuffle_patches(pixels: Tensor, patch_size: int, permutation: Tensor) -> Tensor:
    """The image with its P x P patches moved: patch ``permutation[i]`` goes to position i.

    Args:
        pixels: (B, C, H, W).
        patch_size: P; H and W must be multiples of it.
        permutation: (N,) long, a permutation of the N = (H/P)(W/P) patches.
    """
    grid = grid_size(tuple(pixels.shape[-2:]), patch_size)
    patches = patchify(pixels, patch_size)  # (B, N, C*P*P)
    if sorted(permutation.tolist()) != list(range(patches.shape[1])):
        raise ValueError(f"permutation must reorder all {patches.shape[1]} patches.")
    return unpatchify(patches[:, permutation], patch_size, grid, pixels.shape[1])


def shift_image(pixels: Tensor, dx: int, dy: int, mode: Literal["circular", "pad"] = "circular") -> Tensor:
    """The image moved ``dx`` pixels right and ``dy`` down: wrapped around ("circular") or with
    the uncovered border filled with 0, the dataset's mean colour ("pad")."""
    if mode == "circular":
        return torch.roll(pixels, shifts=(dy, dx), dims=(-2, -1))
    if mode != "pad":
        raise ValueError(f'mode must be "circular" or "pad", not {mode!r}.')
    height, width = pixels.shape[-2:]
    padded = F.pad(pixels, (max(dx, 0), max(-dx, 0), max(dy, 0), max(-dy, 0)))
    top, left = max(-dy, 0), max(-dx, 0)
    return padded[..., top : top + height, left : left + width]


@torch.no_grad()
def logits_without_position(model: VisionTransformer, pixels: Tensor, mode: Literal["zero", "mean"] = "zero") -> Tensor:
    """The ViT's logits with its position embeddings replaced, the model itself left as it is.

    "zero" removes them; "mean" gives every token the average position embedding, so the tokens
    keep the embeddings' overall offset but lose where they are.

    Returns:
        (B, num_classes) logits.
    """
    if mode not in ("zero", "mean"):
        raise ValueError(f'mode must be "zero" or "mean", not {mode!r}.')
    check_pixels(model.config, pixels)
    x = model.patch_embed(pixels)  # (B, N, D)
    if model.cls_token is not None:
        x = torch.cat([model.cls_token.expand(x.shape[0], -1, -1), x], dim=1)  # (B, T, D)
    if mode == "mean":
        x = x + model.pos_embed.mean(dim=1, keepdim=True)  # (1, 1, D): the same for every token
    for block in model.blocks:
        x = block(x)
    return model.forward_head(model.norm(x))


EXPERIMENTS = ("shuffle", "shift", "no_position", "hide")
# page 8's settings until a visitor moves them: the shift in pixels and the shuffle's seed (the
# page's widgets and the work done ahead of the page both start from these)
DEFAULT_SHIFT = 2
DEFAULT_SEED = 0


def comparison(
    vit: VisionTransformer,
    vit_pixels: Tensor,
    trace: Trace,
    cnn: nn.Module,
    cnn_pixels: Tensor,
    class_index: int,
    with_ig: bool,
) -> dict[str, np.ndarray]:
    """What page 8 sets side by side for one image and class: the CNN's logits and both models' maps.

    Args:
        vit_pixels, cnn_pixels: (1, C, H, W) each model's input, on its weights' device.
        trace: the ViT's trace of ``vit_pixels`` (its rollout).

    Returns:
        "cnn_logits" (K,), "rollout" and "grad_rollout" (grid_h, grid_w), "gradcam" (H, W) of
        the CNN's input, and with ``with_ig`` "ig_vit" and "ig_cnn" (the inputs' H, W).
    """
    gradcam_map, cnn_logits = gradcam_and_logits(cnn, cnn_pixels, class_index)  # one pass for both
    arrays = {
        "cnn_logits": cnn_logits.numpy(),
        "rollout": rollout_map(trace)[0].float().cpu().numpy(),
        "grad_rollout": grad_rollout(vit, vit_pixels, class_index).numpy(),
        "gradcam": gradcam_map.numpy(),
    }
    if with_ig:
        arrays["ig_vit"] = integrated_gradients(vit, vit_pixels, class_index).numpy()
        arrays["ig_cnn"] = integrated_gradients(cnn, cnn_pixels, class_index).numpy()
    return arrays


def explained_class(names: Sequence[str], logits: Tensor, true_name: str | None) -> int:
    """The class the comparison explains first: the image's true class where the model knows it,
    else the model's answer (``logits``: (K,))."""
    return list(names).index(true_name) if true_name in names else int(logits.argmax())


@dataclass
class Experiment:
    """Both models' logits after one experiment, and the ViT's altered input to show.

    Attributes:
        vit_logits: (1, K).
        cnn_logits: (1, K), or None where the experiment does not apply to the CNN (it has no
            position embeddings) or its input cannot be cut into the ViT's grid.
        vit_input: (1, C, H, W) the input the ViT saw, normalised.
    """

    vit_logits: Tensor
    cnn_logits: Tensor | None
    vit_input: Tensor


@torch.no_grad()
def run_experiment(
    kind: str,
    vit: VisionTransformer,
    vit_pixels: Tensor,
    cnn: ConvNet,
    cnn_pixels: Tensor,
    shift: int = 2,
    seed: int = 0,
    hidden: Sequence[int] = (),
) -> Experiment:
    """One of the experiments a class can run with a click, on both models at once.

    - "shuffle": the ViT's patch grid in a random order (``seed``), the same permutation for the
      CNN's input cut into the same grid;
    - "shift": both inputs moved ``shift`` pixels right and down, wrapping round;
    - "no_position": the ViT without its position embeddings (the CNN has none to remove);
    - "hide": the patches ``hidden`` (indices on the ViT's grid) set to 0, the dataset's mean
      colour, in both inputs (the CNN's cut into the same grid).

    The ViT's logits are its one pass (``explained_pass``), as the page's bars before the experiment
    are; the CNN's are its answer, as its Grad-CAM. Inputs go to each model's device; what comes
    back is on the CPU.
    """
    vit_pixels, cnn_pixels = on_weights(vit_pixels, vit), on_weights(cnn_pixels, cnn)
    outcome = _experiment(kind, vit, vit_pixels, cnn, cnn_pixels, shift, seed, hidden)
    return Experiment(
        outcome.vit_logits.float().cpu(),
        None if outcome.cnn_logits is None else outcome.cnn_logits.float().cpu(),
        outcome.vit_input.cpu(),
    )


def shuffle_order(grid: tuple[int, int], seed: int) -> Tensor:
    """The "shuffle" experiment's order of the patches: a random permutation fixed by ``seed``."""
    return torch.randperm(grid[0] * grid[1], generator=torch.Generator().manual_seed(seed))


def shuffled_input(vit: VisionTransformer, vit_pixels: Tensor, seed: int) -> Tensor:
    """The input the ViT sees in the "shuffle" experiment (``run_experiment``): its patch grid in
    the order ``shuffle_order`` gives, on the CPU."""
    vit_pixels = on_weights(vit_pixels, vit)
    patch = vit.config.token_size
    grid = grid_size(tuple(vit_pixels.shape[-2:]), patch)
    return shuffle_patches(vit_pixels, patch, shuffle_order(grid, seed)).cpu()


def _same_grid(cnn_pixels: Tensor, grid: tuple[int, int]) -> int | None:
    """The patch side that cuts the CNN's input into the ViT's grid, or None when none does."""
    (height, width), (grid_h, grid_w) = cnn_pixels.shape[-2:], grid
    patch = height // grid_h
    return patch if patch * grid_h == height and patch * grid_w == width else None


def _experiment(
    kind: str,
    vit: VisionTransformer,
    vit_pixels: Tensor,
    cnn: ConvNet,
    cnn_pixels: Tensor,
    shift: int,
    seed: int,
    hidden: Sequence[int],
) -> Experiment:
    patch = vit.config.token_size  # pixels per token
    grid = grid_size(tuple(vit_pixels.shape[-2:]), patch)
    one_pass = explained_pass(vit)  # what the page's maps and bars explain
    cnn_patch = _same_grid(cnn_pixels, grid)
    if kind == "shuffle":
        permutation = shuffle_order(grid, seed)
        vit_input = shuffle_patches(vit_pixels, patch, permutation)
        cnn_logits = cnn(shuffle_patches(cnn_pixels, cnn_patch, permutation)) if cnn_patch else None
        return Experiment(one_pass(vit_input), cnn_logits, vit_input)
    if kind == "hide":
        mask = torch.zeros(1, grid[0] * grid[1], dtype=torch.bool)
        mask[0, list(hidden)] = True
        vit_input = occlude(vit_pixels, mask, patch)
        cnn_logits = cnn(occlude(cnn_pixels, mask, cnn_patch)) if cnn_patch else None
        return Experiment(one_pass(vit_input), cnn_logits, vit_input)
    if kind == "shift":
        vit_input = shift_image(vit_pixels, shift, shift)
        return Experiment(one_pass(vit_input), cnn(shift_image(cnn_pixels, shift, shift)), vit_input)
    if kind == "no_position":
        return Experiment(logits_without_position(vit, vit_pixels, "zero"), None, vit_pixels)
    raise ValueError(f"Unknown experiment {kind!r}: choose one of {', '.join(EXPERIMENTS)}.")
