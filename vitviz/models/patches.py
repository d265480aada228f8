"""Cutting an image into patches, and the five equivalent ways to embed them.

The ViT paper writes the patch embedding as x_p E: flatten every P x P patch into a vector of
P*P*C numbers and multiply by a (P*P*C, D) matrix. Implementations write it as a Conv2d with
kernel = stride = P. With patches flattened in (c p1 p2) order, the Conv2d weight of shape
(D, C, P, P) is exactly the Linear weight ``weight.reshape(D, -1)``. Every route below takes
that same Conv2d weight and bias and returns the same (B, N, D) tokens.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from einops import rearrange
from torch import Tensor


def grid_size(image_size: tuple[int, int], patch_size: int) -> tuple[int, int]:
    """(grid_h, grid_w) for an image of (height, width); raises if it does not divide."""
    height, width = image_size
    if height % patch_size or width % patch_size:
        raise ValueError(f"A {height}x{width} image does not divide into whole {patch_size}x{patch_size} patches.")
    return (height // patch_size, width // patch_size)


def num_patches(image_size: tuple[int, int], patch_size: int) -> int:
    """N = H * W / P^2."""
    grid_h, grid_w = grid_size(image_size, patch_size)
    return grid_h * grid_w


def patch_number(row: int, col: int, grid: tuple[int, int]) -> int:
    """The patch at 0-based (row, col) as a person counts it: 1 to grid_h * grid_w in reading
    order, so on a grid_w-wide grid patch ``grid_w + 1`` sits below patch 1 (README, "One numbering")."""
    grid_h, grid_w = grid
    if not (0 <= row < grid_h and 0 <= col < grid_w):
        raise IndexError(f"({row}, {col}) is outside a {grid_h} x {grid_w} grid")
    return row * grid_w + col + 1


def patchify(pixels: Tensor, patch_size: int) -> Tensor:
    """(B, C, H, W) -> (B, N, C*P*P), patches in row-major grid order, each in (c p1 p2) order."""
    grid_size(tuple(pixels.shape[-2:]), patch_size)
    return rearrange(pixels, "b c (gh p1) (gw p2) -> b (gh gw) (c p1 p2)", p1=patch_size, p2=patch_size)


def unpatchify(patches: Tensor, patch_size: int, grid: tuple[int, int], in_chans: int = 3) -> Tensor:
    """(B, N, C*P*P) -> (B, C, H, W); the inverse of patchify."""
    grid_h, grid_w = grid
    return rearrange(
        patches,
        "b (gh gw) (c p1 p2) -> b c (gh p1) (gw p2)",
        gh=grid_h,
        gw=grid_w,
        c=in_chans,
        p1=patch_size,
        p2=patch_size,
    )


def embed_conv2d(pixels: Tensor, weight: Tensor, bias: Tensor | None) -> Tensor:
    """Route 1, what the model runs: Conv2d with kernel = stride = P."""
    patch_size = weight.shape[-1]
    x = F.conv2d(pixels, weight, bias, stride=patch_size)  # (B, D, grid_h, grid_w)
    return rearrange(x, "b d gh gw -> b (gh gw) d")  # (B, N, D)


def embed_linear(pixels: Tensor, weight: Tensor, bias: Tensor | None) -> Tensor:
    """Route 2, the paper's x_p E: einops patchify, then one Linear with weight.reshape(D, -1)."""
    patches = patchify(pixels, weight.shape[-1])  # (B, N, C*P*P)
    return F.linear(patches, weight.reshape(weight.shape[0], -1), bias)  # (B, N, D)


def embed_unfold(pixels: Tensor, weight: Tensor, bias: Tensor | None) -> Tensor:
    """Route 3: Tensor.unfold along height then width, then the same Linear."""
    p = weight.shape[-1]
    batch, chans = pixels.shape[:2]
    x = pixels.unfold(2, p, p).unfold(3, p, p)  # (B, C, grid_h, grid_w, P, P)
    x = x.permute(0, 2, 3, 1, 4, 5)  # (B, grid_h, grid_w, C, P, P)
    patches = x.reshape(batch, -1, chans * p * p)  # (B, N, C*P*P)
    return F.linear(patches, weight.reshape(weight.shape[0], -1), bias)


def embed_view_permute(pixels: Tensor, weight: Tensor, bias: Tensor | None) -> Tensor:
    """Route 4: view + permute + reshape, the einops pattern written by hand."""
    p = weight.shape[-1]
    batch, chans, height, width = pixels.shape
    grid_h, grid_w = grid_size((height, width), p)
    x = pixels.view(batch, chans, grid_h, p, grid_w, p)  # (B, C, grid_h, P, grid_w, P)
    x = x.permute(0, 2, 4, 1, 3, 5)  # (B, grid_h, grid_w, C, P, P)
    patches = x.reshape(batch, grid_h * grid_w, chans * p * p)  # (B, N, C*P*P)
    return F.linear(patches, weight.reshape(weight.shape[0], -1), bias)


def embed_loop(pixels: Tensor, weight: Tensor, bias: Tensor | None) -> Tensor:
    """Route 5: a plain loop over the grid, one patch at a time (slow, but nothing hidden)."""
    p = weight.shape[-1]
    grid_h, grid_w = grid_size(tuple(pixels.shape[-2:]), p)
    flat_weight = weight.reshape(weight.shape[0], -1)  # (D, C*P*P)
    tokens = []
    for row in range(grid_h):
        for col in range(grid_w):
            patch = pixels[:, :, row * p : (row + 1) * p, col * p : (col + 1) * p]  # (B, C, P, P)
            token = patch.reshape(patch.shape[0], -1) @ flat_weight.T  # (B, D)
            tokens.append(token if bias is None else token + bias)
    return torch.stack(tokens, dim=1)  # (B, N, D)


ROUTES = {
    "conv2d": embed_conv2d,
    "linear": embed_linear,
    "unfold": embed_unfold,
    "view_permute": embed_view_permute,
    "loop": embed_loop,
}

ROUTE_TOLERANCE = 1e-4  # float32 rounding differs between routes, by far less than this


@torch.no_grad()
def compare_routes(pixels: Tensor, weight: Tensor, bias: Tensor | None) -> dict[str, float]:
    """Run every route in ROUTES on the same image and weights; compare each with Conv2d.

    Args:
        pixels: (B, C, H, W), e.g. ``trace.pixels``.
        weight: (D, C, P, P), e.g. ``model.patch_embed.proj.weight``.
        bias: (D,) or None.

    Returns:
        route name -> max |tokens(route) - tokens(conv2d)| over every patch and channel
        (0.0 for "conv2d" itself). All below ``ROUTE_TOLERANCE`` means the routes agree.
    """
    pixels = pixels.contiguous()
    weight = weight.detach().to(pixels)
    bias = None if bias is None else bias.detach().to(pixels)
    reference = embed_conv2d(pixels, weight, bias)  # (B, N, D)
    return {name: float((route(pixels, weight, bias) - reference).abs().max()) for name, route in ROUTES.items()}


def patch_boxes(grid: tuple[int, int], patch_size: int) -> list[tuple[int, int, int, int]]:
    """(top, left, bottom, right) pixel box of every patch, in token order."""
    grid_h, grid_w = grid
    return [
        (row * patch_size, col * patch_size, (row + 1) * patch_size, (col + 1) * patch_size)
        for row in range(grid_h)
        for col in range(grid_w)
    ]


def patch_tiles(
    patches: Tensor, patch_size: int, in_chans: int, mean: tuple[float, ...], std: tuple[float, ...]
) -> Tensor:
    """Flattened normalised patches (N, C*P*P) -> displayable tiles (N, P, P, C) in [0, 1]."""
    tiles = rearrange(patches, "n (c p1 p2) -> n p1 p2 c", c=in_chans, p1=patch_size, p2=patch_size)
    return (tiles * torch.tensor(std) + torch.tensor(mean)).clamp(0, 1)


def patch_arithmetic(image_size: tuple[int, int], patch_size: int, in_chans: int = 3) -> dict[str, int]:
    """The numbers a student computes by hand: grid, N = H W / P^2 and the vector size P*P*C."""
    grid_h, grid_w = grid_size(image_size, patch_size)
    return {
        "grid_h": grid_h,
        "grid_w": grid_w,
        "num_patches": grid_h * grid_w,
        "patch_dim": patch_size * patch_size * in_chans,
    }
