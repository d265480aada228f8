"""What a trained ViT has learned, computed from a Trace: pure functions, tensors in and out.

Every function here answers one question a student can ask about the model, and returns plain
tensors that ``plots.py`` can draw:

- Where does [CLS] (or any token) look?       ``cls_attention``, ``query_attention``
- Where does information flow over all layers? ``attention_rollout``, ``rollout_map``
  (Abnar & Zuidema, "Quantifying Attention Flow in Transformers", ACL 2020)
- How far does each head look?                 ``mean_attention_distance`` (ViT paper, Fig. 7 right)
- What did the position embeddings learn?      ``pos_embed_similarity`` (Fig. 7 centre)
- What do the patch filters look like?         ``patch_embed_components`` (Fig. 7 left)
- When does the model know the answer?         ``logit_lens``, ``class_rank_by_layer``
- One attention step with real numbers.        ``worked_attention``

Token order everywhere is the model's: the prefix tokens first ([CLS] at index 0 when the model
has one), then the patches in row-major grid order, so patch (row, col) is token
``num_prefix_tokens + row * grid_w + col``. Nothing here draws, caches or talks to Streamlit.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Literal

import torch
import torch.nn.functional as F
from torch import Tensor

from vitviz.models.model import (
    VisionTransformer,
    explained_pass,
    flops_per_image,
    on_weights,
    sincos_1d,
    sincos_2d,
)
from vitviz.models.trace import Trace

logger = logging.getLogger(__name__)

HeadFusion = Literal["mean", "max", "min"]
HEAD_FUSIONS = ("mean", "max", "min")


# --------------------------------------------------------------------------------------------
# Grid helpers and token indices
# --------------------------------------------------------------------------------------------


def grid(values: Tensor, grid_size: tuple[int, int]) -> Tensor:
    """Lay one value per patch out on the patch grid, row by row.

    Args:
        values: (..., N) with N = grid_h * grid_w, in token order (patches only).
        grid_size: (grid_h, grid_w).

    Returns:
        (..., grid_h, grid_w): entry [..., row, col] is the value of patch row * grid_w + col,
        so the map sits on the image the way the patches were cut from it.
    """
    grid_h, grid_w = grid_size
    if values.shape[-1] != grid_h * grid_w:
        raise ValueError(
            f"Got {values.shape[-1]} values for a {grid_h}x{grid_w} grid of "
            f"{grid_h * grid_w} patches: pass the patch tokens only, without [CLS]."
        )
    return values.reshape(*values.shape[:-1], grid_h, grid_w)  # (..., grid_h, grid_w)


def upsample_map(values: Tensor, size: tuple[int, int], mode: Literal["nearest", "bilinear"] = "nearest") -> Tensor:
    """Stretch a patch-grid map to the image size, to lay it over the photo.

    Args:
        values: (..., grid_h, grid_w), e.g. the output of ``cls_attention``.
        size: (height, width) of the image in pixels.
        mode: "nearest" shows every patch as a flat square (honest: the model sees patches);
            "bilinear" blends neighbouring patches into a smooth heat map.

    Returns:
        (..., height, width) in the dtype of ``values`` (integers come back as float).
    """
    if mode not in ("nearest", "bilinear"):
        raise ValueError(f'mode must be "nearest" or "bilinear", not {mode!r}.')
    if values.dim() < 2:
        raise ValueError("upsample_map needs a map with at least two dimensions (grid_h, grid_w).")
    lead = values.shape[:-2]
    x = values.reshape(-1, 1, *values.shape[-2:])  # (L, 1, grid_h, grid_w)
    if not x.is_floating_point():
        x = x.float()
    kwargs = {"align_corners": False} if mode == "bilinear" else {}
    x = F.interpolate(x, size=tuple(size), mode=mode, **kwargs)  # (L, 1, height, width)
    return x.reshape(*lead, *x.shape[-2:])  # (..., height, width)


def _check_index(value: int, size: int, what: str) -> int:
    """Python-style index check (negative counts from the end); returns the index in [0, size)."""
    if not -size <= value < size:
        raise ValueError(f"{what} {value} does not exist: choose a number from 0 to {size - 1}.")
    return value % size


def patch_index(row: int, col: int, grid_size: tuple[int, int], num_prefix_tokens: int) -> int:
    """Token index of the patch at (row, col): ``num_prefix_tokens + row * grid_w + col``."""
    grid_h, grid_w = grid_size
    if not (0 <= row < grid_h and 0 <= col < grid_w):
        raise ValueError(
            f"Patch ({row}, {col}) is outside the {grid_h}x{grid_w} grid: rows go from 0 to "
            f"{grid_h - 1} and columns from 0 to {grid_w - 1}."
        )
    return num_prefix_tokens + row * grid_w + col


def token_to_patch(index: int, grid_size: tuple[int, int], num_prefix_tokens: int) -> tuple[int, int] | None:
    """(row, col) of the patch at token ``index``, or None for a prefix token such as [CLS]."""
    grid_h, grid_w = grid_size
    num_tokens = num_prefix_tokens + grid_h * grid_w
    if not 0 <= index < num_tokens:
        raise ValueError(f"Token {index} does not exist: this model has tokens 0 to {num_tokens - 1}.")
    if index < num_prefix_tokens:
        return None
    return divmod(index - num_prefix_tokens, grid_w)


# --------------------------------------------------------------------------------------------
# Attention maps: one query, [CLS] or the readout, per head or fused
# --------------------------------------------------------------------------------------------


def query_attention(trace: Trace, layer: int, query: int, head: int | None = None) -> Tensor:
    """How much one token (the query) attends to every patch, in one block, on the patch grid.

    Args:
        trace: from ``VisionTransformer.explain``.
        layer: block index (negative counts from the end, -1 = last block).
        query: token index in token order: 0 is [CLS] when the model has one, patch k is
            ``k + num_prefix_tokens`` (see ``patch_index``).
        head: one head, or None for all heads.

    Returns:
        (B, grid_h, grid_w) for one head, (B, heads, grid_h, grid_w) when head is None. Entry
        [b, (h,) row, col] is the softmax weight the query gives the patch at (row, col): the
        share of that patch's value vector in the query's new vector. Attention to prefix
        tokens is left out, so a map sums to 1 minus what the query gave to [CLS].
    """
    attention = trace.attentions[_check_index(layer, trace.depth, "Layer")]  # (B, heads, T, T)
    query = _check_index(query, attention.shape[-2], "Token")
    rows = attention[:, :, query, trace.num_prefix_tokens :]  # (B, heads, N)
    if head is not None:
        rows = rows[:, _check_index(head, attention.shape[1], "Head")]  # (B, N)
    return grid(rows, trace.grid_size)


def cls_attention(trace: Trace, layer: int, head: int | None = None) -> Tensor:
    """How much the [CLS] token attends to every patch, in one block, on the patch grid.

    [CLS] is the token the classifier reads, so this map shows which patches feed the answer
    directly in this block (it ignores how earlier blocks mixed the patches; see ``rollout_map``).

    Args:
        trace: from ``VisionTransformer.explain`` of a model with a class token.
        layer: block index (negative counts from the end).
        head: one head, or None for all heads.

    Returns:
        (B, grid_h, grid_w) for one head, (B, heads, grid_h, grid_w) when head is None.

    Raises:
        ValueError: the model has no [CLS] token (it averages the patch tokens instead).
    """
    if trace.num_prefix_tokens == 0:
        raise ValueError(
            "This model has no [CLS] token: it averages its patch tokens instead. Look at the "
            "attention of a patch with query_attention, or at rollout_map for the whole image."
        )
    return query_attention(trace, layer, 0, head)


def readout_attention(trace: Trace, layer: int, head: int | None = None) -> Tensor:
    """Where the token the classifier reads looks, in one block, on the patch grid.

    With a [CLS] token this is ``cls_attention``. A model without one averages its patch
    tokens, so there is no single readout query: the map is then the mean over every patch
    query of its attention to the patches (the same fallback as ``rollout_map``).

    Args:
        trace: from ``VisionTransformer.explain``.
        layer: block index (negative counts from the end).
        head: one head, or None for all heads.

    Returns:
        (B, grid_h, grid_w) for one head, (B, heads, grid_h, grid_w) when head is None.
    """
    if trace.num_prefix_tokens:
        return cls_attention(trace, layer, head)
    attention = trace.attentions[_check_index(layer, trace.depth, "Layer")]  # (B, heads, N, N)
    rows = attention.mean(dim=2)  # (B, heads, N): mean over the patch queries
    if head is not None:
        rows = rows[:, _check_index(head, attention.shape[1], "Head")]  # (B, N)
    return grid(rows, trace.grid_size)


def select_head(maps: Tensor, head: int | None) -> Tensor:
    """One head's map out of (..., heads, grid_h, grid_w), or the mean over heads for None."""
    if head is None:
        return maps.mean(dim=-3)  # (..., grid_h, grid_w)
    return maps[..., _check_index(head, maps.shape[-3], "Head"), :, :]


# --------------------------------------------------------------------------------------------
# Attention rollout, and rollout weighted by a class's gradient
# --------------------------------------------------------------------------------------------


def attention_rollout(
    attentions: Sequence[Tensor],
    head_fusion: HeadFusion = "mean",
    residual: bool = True,
    discard_ratio: float = 0.0,
    start_layer: int = 0,
) -> Tensor:
    """Attention rollout (Abnar & Zuidema 2020): how much each token's final vector draws on
    each input token, following attention through every block.

    Per block: fuse the heads into one (T, T) matrix A, optionally zero each row's weakest
    links, add the identity for the residual connection (A + I: a token also keeps itself),
    renormalise every row to sum 1, then multiply through the blocks with later blocks on the
    left: R = A_L ... A_start.

    Args:
        attentions: depth entries of (B, heads, T, T), e.g. ``trace.attentions``.
        head_fusion: "mean", "max" or "min" over the heads.
        residual: add the identity before renormalising (the paper's 0.5 A + 0.5 I).
        discard_ratio: in [0, 1): in every row of the fused matrix, the lowest
            ``floor(discard_ratio * T)`` weights are set to 0 before the identity is added
            (the strongest weight of a row is always kept). Sharper maps, less faithful.
        start_layer: blocks before this one are skipped.

    Returns:
        (B, T, T) with rows that sum to 1 (or 0 for a row whose every fused weight is 0, which
        only "min" without the residual can produce). Row i says where token i's information
        came from at the input: R[b, 0, k] is the share of input token k in [CLS]'s final vector.
    """
    if head_fusion not in HEAD_FUSIONS:
        raise ValueError(f"head_fusion must be one of {HEAD_FUSIONS}, not {head_fusion!r}.")
    if not 0.0 <= discard_ratio < 1.0:
        raise ValueError(f"discard_ratio must be in [0, 1), not {discard_ratio}.")
    if not attentions:
        raise ValueError("There are no attention maps to roll out: the model has no blocks.")
    if not 0 <= start_layer < len(attentions):
        raise ValueError(f"start_layer {start_layer} does not exist: choose a block from 0 to {len(attentions) - 1}.")
    rollout: Tensor | None = None
    for attention in attentions[start_layer:]:  # each (B, heads, T, T)
        if head_fusion == "mean":
            fused = attention.mean(dim=1)  # (B, T, T)
        elif head_fusion == "max":
            fused = attention.amax(dim=1)
        else:
            fused = attention.amin(dim=1)
        num_tokens = fused.shape[-1]
        num_discard = min(int(discard_ratio * num_tokens), num_tokens - 1)
        if num_discard > 0:
            lowest = fused.topk(num_discard, dim=-1, largest=False).indices  # (B, T, num_discard)
            fused = fused.scatter(-1, lowest, 0.0)
        if residual:
            fused = fused + torch.eye(num_tokens, dtype=fused.dtype, device=fused.device)
        row_sums = fused.sum(dim=-1, keepdim=True).clamp_min(torch.finfo(fused.dtype).tiny)
        fused = fused / row_sums  # (B, T, T), rows sum to 1
        rollout = fused if rollout is None else fused @ rollout  # later blocks on the left
    assert rollout is not None
    return rollout


def rollout_map(
    trace: Trace,
    *,
    head_fusion: HeadFusion = "mean",
    residual: bool = True,
    discard_ratio: float = 0.0,
    start_layer: int = 0,
) -> Tensor:
    """Attention rollout as one map over the image: which patches the prediction draws on.

    With a [CLS] token this is [CLS]'s row of ``attention_rollout``; a model without one pools
    the average of its patch tokens, so the map is the mean of the patch rows. Keyword
    arguments are those of ``attention_rollout``.

    Returns:
        (B, grid_h, grid_w): the share of every input patch in the pooled token. The share of
        [CLS]'s own input vector is left out, so with [CLS] the map sums to less than 1.
    """
    rollout = attention_rollout(
        trace.attentions,
        head_fusion=head_fusion,
        residual=residual,
        discard_ratio=discard_ratio,
        start_layer=start_layer,
    )  # (B, T, T)
    return grid(pooled_row(rollout, trace.num_prefix_tokens), trace.grid_size)


def pooled_row(matrix: Tensor, num_prefix_tokens: int) -> Tensor:
    """What the pooled token reads from every patch: the [CLS] row of a (B, T, T) token-to-token
    matrix, or, without [CLS], the mean of the patch rows. (B, N)."""
    prefix = num_prefix_tokens
    if prefix:
        return matrix[:, 0, prefix:]
    return matrix[:, prefix:, prefix:].mean(dim=1)  # the mean over the patch queries


def grad_rollout(model: VisionTransformer, pixels: Tensor, class_index: int) -> Tensor:
    """Where the model looked for one class: gradient-weighted attention rollout.

    Plain rollout (``rollout_map``) is the same for every class. Following Chefer, Gur & Wolf,
    "Transformer Interpretability Beyond Attention Visualization" (CVPR 2021), each block's
    attention A is weighted by how much it raises the class's logit: relu(dL/dA * A), averaged
    over the heads, keeps the links that push towards the class. These weighted matrices are
    then rolled out like ``attention_rollout`` (identity added for the residual, rows
    renormalised, later blocks on the left), and the readout row is read on the patch grid.

    Only the attention maps get gradients (``torch.autograd.grad``): the model's parameters,
    their ``.grad`` and their ``requires_grad`` flags are left as they were.

    Args:
        model: a classifier, in eval mode (dropout would make the map random).
        pixels: (1, C, H, W) or (C, H, W), the normalised input.
        class_index: the class to explain (negative counts from the end).

    Returns:
        (grid_h, grid_w) float on the CPU: the share of every input patch in the readout token
        ([CLS], or the mean of the patch tokens for a model without one), for this class.
    """
    num_classes = model.config.num_classes
    if num_classes == 0:
        raise ValueError("This model has no classification head, so there is no class to explain.")
    class_index = _check_index(class_index, num_classes, "Class")
    if pixels.dim() == 3:
        pixels = pixels[None]
    if pixels.shape[0] != 1:
        raise ValueError(f"grad_rollout takes one image, got a batch of {pixels.shape[0]}.")
    # A leaf input that needs gradients makes every attention map part of the graph, even when
    # the parameters are frozen; the gradient is taken with respect to the maps only.
    pixels = on_weights(pixels.detach(), model).requires_grad_(True)
    with torch.enable_grad():
        trace = model.explain(pixels)
        # a block that is skipped (vitviz.analyses.ablation) returns an attention map the logits do not use:
        # its gradient is 0, not an error
        grads = torch.autograd.grad(
            trace.logits[0, class_index], trace.attentions, allow_unused=True, materialize_grads=True
        )  # depth x (1, heads, T, T)
    weighted = [
        (grad * attention.detach()).clamp_min(0.0).mean(dim=1, keepdim=True)  # (1, 1, T, T)
        for grad, attention in zip(grads, trace.attentions, strict=True)
    ]
    rollout = attention_rollout(weighted, head_fusion="mean", residual=True)  # (1, T, T)
    row = pooled_row(rollout, trace.num_prefix_tokens)[0]  # (N,)
    return grid(row.float().cpu(), trace.grid_size)  # (grid_h, grid_w)


# --------------------------------------------------------------------------------------------
# Mean attention distance (ViT paper, Fig. 7 right)
# --------------------------------------------------------------------------------------------


def patch_distances(grid_size: tuple[int, int], patch_size: int) -> Tensor:
    """Distance in pixels between the centres of every pair of patches.

    Returns:
        (N, N) float32 in token order (patches only): entry [i, j] is the Euclidean distance
        from the centre of patch i to the centre of patch j; neighbours are ``patch_size`` apart.
    """
    grid_h, grid_w = grid_size
    rows, cols = torch.meshgrid(
        torch.arange(grid_h, dtype=torch.float32),
        torch.arange(grid_w, dtype=torch.float32),
        indexing="ij",
    )  # each (grid_h, grid_w)
    centres = (torch.stack([rows, cols], dim=-1).reshape(-1, 2) + 0.5) * patch_size  # (N, 2)
    return (centres[:, None, :] - centres[None, :, :]).norm(dim=-1)  # (N, N)


def mean_attention_distance(trace: Trace, patch_size: int | None = None) -> Tensor:
    """How far each head looks, in pixels: the ViT paper's "attention distance" (Fig. 7 right).

    For every patch query: take its attention to the patch keys (prefix tokens dropped, the
    rest renormalised to sum 1) and average the pixel distance to each key's centre with those
    weights. Then average over the query patches and the batch.

    Args:
        trace: from ``VisionTransformer.explain``.
        patch_size: side of a patch in pixels; None reads it from ``trace.pixels``.

    Returns:
        (depth, heads): entry [l, h] is the mean distance in pixels over which head h of block
        l gathers information. Small values are local heads (like a convolution's small
        kernel); large values are heads that look across the whole image.
    """
    grid_h, grid_w = trace.grid_size
    if patch_size is None:
        patch_size = trace.pixels.shape[-2] // grid_h
    distances = patch_distances(trace.grid_size, patch_size)  # (N, N)
    prefix = trace.num_prefix_tokens
    per_layer = []
    for attention in trace.attentions:  # each (B, heads, T, T)
        weights = attention[:, :, prefix:, prefix:]  # (B, heads, N, N)
        weights = weights / weights.sum(dim=-1, keepdim=True).clamp_min(1e-12)
        d = distances.to(device=weights.device, dtype=weights.dtype)
        per_query = (weights * d).sum(dim=-1)  # (B, heads, N)
        per_layer.append(per_query.mean(dim=(0, 2)))  # (heads,)
    if not per_layer:
        return torch.zeros(0, 0)
    return torch.stack(per_layer)  # (depth, heads)


def uniform_attention_distance(grid_size: tuple[int, int], patch_size: int) -> float:
    """The mean attention distance a head would have if it attended to every patch equally.

    A reference line for ``mean_attention_distance``: heads below it look nearby, heads above
    it look far; random (untrained) attention sits close to it.
    """
    return float(patch_distances(grid_size, patch_size).mean())


# --------------------------------------------------------------------------------------------
# Learned embeddings (ViT paper, Fig. 7 left and centre) beside hand-made position codes
# --------------------------------------------------------------------------------------------


def pos_embed_similarity(pos_embed: Tensor, grid_size: tuple[int, int], num_prefix_tokens: int) -> Tensor:
    """Cosine similarity between the position embeddings of every pair of patches (Fig. 7 centre).

    Args:
        pos_embed: (1, T, D) or (T, D), e.g. ``model.pos_embed``; the first
            ``num_prefix_tokens`` rows belong to [CLS] and are left out.
        grid_size: (grid_h, grid_w).
        num_prefix_tokens: 1 with a [CLS] token, else 0.

    Returns:
        (grid_h, grid_w, grid_h, grid_w): entry [r1, c1, r2, c2] is the cosine similarity of
        patch (r1, c1)'s embedding with patch (r2, c2)'s, in [-1, 1]. Drawing the tile
        [r1, c1] as an image shows which positions the model thinks are near patch (r1, c1);
        a model that learned 2D structure lights up its row and column.
    """
    table = pos_embed.detach()
    if table.dim() == 3:
        if table.shape[0] != 1:
            raise ValueError(f"pos_embed must be (1, T, D) or (T, D), got {tuple(table.shape)}.")
        table = table[0]  # (T, D)
    if table.dim() != 2:
        raise ValueError(f"pos_embed must be (1, T, D) or (T, D), got {tuple(table.shape)}.")
    grid_h, grid_w = grid_size
    patches = table[num_prefix_tokens:]  # (N, D)
    if patches.shape[0] != grid_h * grid_w:
        raise ValueError(
            f"pos_embed has {patches.shape[0]} patch positions after {num_prefix_tokens} prefix "
            f"token(s), but a {grid_h}x{grid_w} grid has {grid_h * grid_w}."
        )
    unit = F.normalize(patches.float(), dim=-1)  # (N, D), zero rows stay zero
    similarity = unit @ unit.T  # (N, N)
    return similarity.reshape(grid_h, grid_w, grid_h, grid_w)  # (gh, gw, gh, gw)


def patch_embed_components(weight: Tensor, k: int | None = 28) -> tuple[Tensor, Tensor]:
    """Principal components of the patch-embedding filters (ViT paper, Fig. 7 left).

    Each of the D rows of ``weight.reshape(D, -1)`` is one filter, a P x P colour picture the
    model compares every patch with. The rows are centred and decomposed with an SVD; the top
    components are the patterns the filters vary along most (in trained models: smooth blobs,
    edges and stripes, like the first layer of a CNN).

    Args:
        weight: (D, C, P, P), e.g. ``model.patch_embed.proj.weight``.
        k: components wanted; clipped to min(D, C*P*P); None: all of them.

    Returns:
        components: (k, C, P, P), unit-length directions, each signed so that its entry of
            largest magnitude is positive (so the result does not depend on the SVD's sign).
        explained_variance_ratio: (k,), the share of the filters' variance along each
            component, largest first; it sums to 1 when k keeps every component.
    """
    if weight.dim() != 4:
        raise ValueError(f"weight must be (D, C, P, P), got {tuple(weight.shape)}.")
    if k is not None and k < 1:
        raise ValueError(f"k must be at least 1, not {k}.")
    dim, chans, p1, p2 = weight.shape
    filters = weight.detach().reshape(dim, -1).double()  # (D, C*P*P)
    filters = filters - filters.mean(dim=0, keepdim=True)
    _, singular, vh = torch.linalg.svd(filters, full_matrices=False)  # vh: (min(D, CPP), CPP)
    available = vh.shape[0]
    if k is None:
        k = available
    elif k > available:
        logger.debug("Asked for %d components, only %d exist.", k, available)
        k = available
    components = vh[:k]  # (k, C*P*P)
    largest = components.abs().argmax(dim=-1, keepdim=True)  # (k, 1)
    signs = torch.where(components.gather(-1, largest) < 0, -1.0, 1.0).to(components.dtype)
    components = components * signs
    variance = singular.square()  # (min(D, CPP),)
    total = variance.sum()
    ratio = variance[:k] / total if total > 0 else torch.zeros_like(variance[:k])
    out_dtype = weight.dtype if weight.is_floating_point() else torch.float32
    components = components.reshape(k, chans, p1, p2)  # (k, C, P, P)
    return components.to(out_dtype), ratio.to(out_dtype)


def position_similarities(pos_embed: Tensor, grid_size: tuple[int, int], num_prefix_tokens: int) -> dict[str, Tensor]:
    """The model's position-embedding similarity beside two fixed schemes of the same width.

    Args:
        pos_embed: (1, T, D) or (T, D), e.g. ``model.pos_embed``.
        grid_size: (grid_h, grid_w).
        num_prefix_tokens: rows of ``pos_embed`` that belong to [CLS] (left out).

    Returns:
        Three (grid_h, grid_w, grid_h, grid_w) cosine-similarity tables, as
        ``pos_embed_similarity`` computes them:
            "model": the model's own embeddings (learned, or fixed 2D sine-cosine).
            "sincos_1d": the 1D sinusoidal embeddings of "Attention is all you need" over the
                N patches in reading order: neighbours in a row are close, the patch below is
                grid_w steps away.
            "sincos_2d": fixed 2D sine-cosine embeddings (a quarter of the channels each for
                sin/cos of the row and of the column): similarity depends only on the row
                and column offsets.
    """
    grid_h, grid_w = grid_size
    dim = pos_embed.shape[-1]
    return {
        "model": pos_embed_similarity(pos_embed, grid_size, num_prefix_tokens),
        "sincos_1d": pos_embed_similarity(sincos_1d(grid_h * grid_w, dim), grid_size, 0),
        "sincos_2d": pos_embed_similarity(sincos_2d(grid_size, dim), grid_size, 0),
    }


# --------------------------------------------------------------------------------------------
# One attention step with real numbers
# --------------------------------------------------------------------------------------------


@torch.no_grad()
def worked_attention(
    model: VisionTransformer,
    trace: Trace,
    layer: int,
    head: int,
    query: int,
    batch_index: int = 0,
) -> dict[str, Tensor]:
    """Recompute one head's attention for one query token, keeping every number on the way.

    The block's input ``trace.hidden_states[layer]`` goes through ``norm1`` and the qkv
    projection; then scores = K q / sqrt(head_dim), weights = softmax(scores), and
    output = weights @ V. The weights are checked against ``trace.attentions``.

    Args:
        model: the model that made ``trace``.
        trace: from ``model.explain``.
        layer: block index (negative counts from the end).
        head: head index.
        query: token index of the query (0 = [CLS] when present; see ``patch_index``).
        batch_index: which image of the batch.

    Returns:
        A dict of tensors, T = number of tokens:
            "q": (head_dim,) the query vector of the chosen token.
            "k": (T, head_dim) the key vector of every token.
            "v": (T, head_dim) the value vector of every token.
            "scores": (T,) q . k_j / sqrt(head_dim) for every token j.
            "weights": (T,) softmax of the scores; sums to 1; equals the trace's attention row.
            "output": (head_dim,) the weighted sum of the value vectors, this head's share of
                the token's update (before the output projection mixes the heads).
            "scale": () the factor 1 / sqrt(head_dim).

    Raises:
        RuntimeError: the recomputed weights differ from the trace (it came from another
            model, or the model changed since).
    """
    layer = _check_index(layer, trace.depth, "Layer")
    block = model.blocks[layer]
    attn = block.attn
    head = _check_index(head, attn.num_heads, "Head")
    batch_index = _check_index(batch_index, trace.hidden_states[layer].shape[0], "Image")
    hidden = on_weights(trace.hidden_states[layer][batch_index : batch_index + 1], model)  # (1, T, D)
    query = _check_index(query, hidden.shape[1], "Token")
    q, k, v = (t.float().cpu() for t in attn.qkv_heads(block.norm1(hidden)))  # each (1, heads, T, head_dim)
    q_vec = q[0, head, query]  # (head_dim,)
    keys = k[0, head]  # (T, head_dim)
    values = v[0, head]  # (T, head_dim)
    scale = torch.tensor(attn.scale, dtype=q_vec.dtype, device=q_vec.device)
    scores = (keys @ q_vec) * scale  # (T,)
    weights = scores.softmax(dim=-1)  # (T,)
    output = weights @ values  # (head_dim,)
    expected = trace.attentions[layer][batch_index, head, query].to(weights.device)  # (T,)
    # a trace computed in bf16 differs from this float32 recomputation by up to about 1e-2 (the
    # most the app lets bf16 move an attention weight; docs/benchmarks.md); one from another model
    # or image by far more
    atol = 2e-2 if trace.computed_in == "bfloat16" else max(1e-5, 10 * torch.finfo(weights.dtype).eps)
    if not torch.allclose(weights, expected.to(weights.dtype), atol=atol, rtol=1e-3):
        raise RuntimeError(
            "The recomputed attention weights differ from the trace: explain the image again with this model."
        )
    return {
        "q": q_vec,
        "k": keys,
        "v": values,
        "scores": scores,
        "weights": weights,
        "output": output,
        "scale": scale,
    }


def top_keys(
    worked: dict[str, Tensor], grid_size: tuple[int, int], num_prefix_tokens: int, k: int = 8
) -> tuple[list[dict[str, float | int | None]], float]:
    """The keys a query attends to most, for the worked softmax(q K^T / sqrt(d)) V example.

    Args:
        worked: from ``worked_attention`` (needs "scores" and "weights", each (T,)).
        grid_size: (grid_h, grid_w).
        num_prefix_tokens: 1 with a [CLS] token, else 0.
        k: how many keys to keep (clipped to T).

    Returns:
        rows: the k keys with the largest weights, largest first, each a dict with "token"
            (index), "row" and "col" (the patch position, None for [CLS]), "score"
            (q . k / sqrt(d)) and "weight" (its softmax weight).
        other_weight: the total weight of the keys not shown, so the rows' weights plus
            other_weight make 1.
    """
    weights = worked["weights"].detach().double()  # (T,)
    scores = worked["scores"].detach().double()  # (T,)
    k = max(0, min(k, weights.numel()))
    order = weights.topk(k).indices.tolist()  # largest first
    rows: list[dict[str, float | int | None]] = []
    for token in order:
        patch = token_to_patch(token, grid_size, num_prefix_tokens)
        rows.append(
            {
                "token": token,
                "row": None if patch is None else patch[0],
                "col": None if patch is None else patch[1],
                "score": float(scores[token]),
                "weight": float(weights[token]),
            }
        )
    other_weight = float(weights.sum()) - sum(float(row["weight"]) for row in rows)
    return rows, max(other_weight, 0.0)


# --------------------------------------------------------------------------------------------
# Inside one encoder block
# --------------------------------------------------------------------------------------------


BLOCK_STEPS = ("input", "norm1", "qkv", "attention", "attn_proj", "add1", "norm2", "fc1", "gelu", "fc2", "add2")


def block_shapes(model: VisionTransformer, trace: Trace) -> list[tuple[str, tuple[int, ...]]]:
    """The shape of the tensor leaving every step of an encoder block, for this model.

    Returns:
        (step id, shape) in the order the data flows through a block, ids as in
        ``BLOCK_STEPS``: "qkv" is the fused query/key/value projection, "attention" the
        weights softmax(Q K^T / sqrt(d)) of every head, "attn_proj" the heads' outputs merged
        and projected back to D, "add1" / "add2" the two residual additions. The shapes are
        read from the model's own layers, so they are right for any width or MLP ratio.
    """
    if not len(model.blocks):
        raise ValueError("This model has no encoder blocks.")
    batch, tokens, dim = trace.hidden_states[0].shape
    block = model.blocks[0]
    qkv = block.attn.qkv.out_features  # 3 * D
    hidden = block.mlp.fc1.out_features  # mlp_ratio * D
    stream = (batch, tokens, dim)  # the residual stream never changes shape
    shapes = [
        stream,  # input
        stream,  # norm1
        (batch, tokens, qkv),  # qkv
        (batch, block.attn.num_heads, tokens, tokens),  # attention weights
        stream,  # attn_proj
        stream,  # add1
        stream,  # norm2
        (batch, tokens, hidden),  # fc1
        (batch, tokens, hidden),  # gelu
        stream,  # fc2
        stream,  # add2
    ]
    return list(zip(BLOCK_STEPS, shapes, strict=True))


def block_statistics(trace: Trace, token: int | None = None) -> dict[str, Tensor]:
    """How big the residual stream and the two branches of every block are, block by block.

    Block l reads x = ``hidden_states[l]``, adds the attention branch a = ``attn_outputs[l]``
    (mid = x + a), then adds the MLP branch m = ``mlp_outputs[l]`` (mid + m =
    ``hidden_states[l + 1]``). Sizes are L2 norms over the D features of a token.

    Args:
        trace: from ``VisionTransformer.explain``.
        token: one token index (0 = [CLS] when the model has one); None averages over the
            patch tokens (prefix tokens left out). Every statistic is also averaged over the batch.

    Returns:
        A dict of (depth,) float tensors, entry l for block l:
            "residual_norm": ||x||, the stream entering the block.
            "attn_norm": ||a||, the attention branch.
            "mlp_norm": ||m||, the MLP branch.
            "output_norm": ||hidden_states[l + 1]||, the stream leaving the block.
            "attn_ratio": ||a|| / ||x||: 0 when attention leaves the stream as it is.
            "mlp_ratio": ||m|| / ||x + a||: the same for the MLP.
            "cosine": cosine similarity of hidden_states[l] and hidden_states[l + 1]: 1 when
                the block keeps the direction of every token.
        Ratios and cosines are computed per token, then averaged.
    """
    if token is None:
        select = slice(trace.num_prefix_tokens, None)
    else:
        index = _check_index(token, trace.hidden_states[0].shape[1], "Token")
        select = slice(index, index + 1)
    tiny = 1e-12
    rows: dict[str, list[Tensor]] = {
        key: []
        for key in ("residual_norm", "attn_norm", "mlp_norm", "output_norm", "attn_ratio", "mlp_ratio", "cosine")
    }
    for layer in range(trace.depth):
        x = trace.hidden_states[layer][:, select].float()  # (B, n, D)
        a = trace.attn_outputs[layer][:, select].float()
        m = trace.mlp_outputs[layer][:, select].float()
        out = trace.hidden_states[layer + 1][:, select].float()
        x_norm, a_norm, m_norm = x.norm(dim=-1), a.norm(dim=-1), m.norm(dim=-1)  # each (B, n)
        rows["residual_norm"].append(x_norm.mean())
        rows["attn_norm"].append(a_norm.mean())
        rows["mlp_norm"].append(m_norm.mean())
        rows["output_norm"].append(out.norm(dim=-1).mean())
        rows["attn_ratio"].append((a_norm / x_norm.clamp_min(tiny)).mean())
        rows["mlp_ratio"].append((m_norm / (x + a).norm(dim=-1).clamp_min(tiny)).mean())
        rows["cosine"].append(F.cosine_similarity(x, out, dim=-1, eps=tiny).mean())
    return {key: torch.stack(values) if values else torch.zeros(0) for key, values in rows.items()}


@torch.no_grad()
def block_token_norms(model: VisionTransformer, trace: Trace, layer: int, batch_index: int = 0) -> dict[str, Tensor]:
    """The size of every token at every sub-step of one block, recomputing the LayerNorms.

    Args:
        model: the model that made ``trace``.
        trace: from ``model.explain``.
        layer: block index (negative counts from the end).
        batch_index: which image of the batch.

    Returns:
        A dict of (T,) float tensors in token order (L2 norms over D unless said otherwise):
            "input": x = hidden_states[layer], before norm1.
            "norm1": norm1(x), what attention reads.
            "input_std", "norm1_std": the standard deviation over D of x and of norm1(x)
                (LayerNorm makes it 1 before its learned scale).
            "attn": the attention branch a; "mid": x + a.
            "norm2": norm2(x + a), what the MLP reads.
            "mlp": the MLP branch m; "output": x + a + m = hidden_states[layer + 1].
            "attn_ratio": ||a|| / ||x||; "mlp_ratio": ||m|| / ||x + a||.
    """
    layer = _check_index(layer, trace.depth, "Layer")
    batch_index = _check_index(batch_index, trace.hidden_states[layer].shape[0], "Image")
    block = model.blocks[layer]
    x = on_weights(trace.hidden_states[layer][batch_index], block)  # (T, D)
    a = trace.attn_outputs[layer][batch_index].to(x)
    m = trace.mlp_outputs[layer][batch_index].to(x)
    ln1 = block.norm1(x)  # (T, D)
    mid = x + a
    ln2 = block.norm2(mid)
    out = trace.hidden_states[layer + 1][batch_index].to(x)
    tiny = 1e-12
    result = {
        "input": x.norm(dim=-1),
        "norm1": ln1.norm(dim=-1),
        "input_std": x.std(dim=-1, unbiased=False),
        "norm1_std": ln1.std(dim=-1, unbiased=False),
        "attn": a.norm(dim=-1),
        "mid": mid.norm(dim=-1),
        "norm2": ln2.norm(dim=-1),
        "mlp": m.norm(dim=-1),
        "output": out.norm(dim=-1),
        "attn_ratio": a.norm(dim=-1) / x.norm(dim=-1).clamp_min(tiny),
        "mlp_ratio": m.norm(dim=-1) / mid.norm(dim=-1).clamp_min(tiny),
    }
    return {key: value.float().cpu() for key, value in result.items()}


@torch.no_grad()
def mlp_preactivations(model: VisionTransformer, trace: Trace, layer: int, token: int, batch_index: int = 0) -> Tensor:
    """What GELU receives in one block for one token: fc1(norm2(x + a)).

    x = ``hidden_states[layer]`` and a = ``attn_outputs[layer]``, so x + a is the stream the
    MLP reads. ``mlp.fc2(GELU(result))`` is the token's MLP branch ``mlp_outputs[layer]``.

    Returns:
        (mlp_hidden,) float on the CPU: one number per hidden unit of the MLP (4 D in a ViT).
    """
    layer = _check_index(layer, trace.depth, "Layer")
    batch_index = _check_index(batch_index, trace.hidden_states[layer].shape[0], "Image")
    token = _check_index(token, trace.hidden_states[layer].shape[1], "Token")
    block = model.blocks[layer]
    mid = trace.hidden_states[layer][batch_index, token] + trace.attn_outputs[layer][batch_index, token]  # (D,)
    return block.mlp.fc1(block.norm2(on_weights(mid, block))).float().cpu()  # (mlp_hidden,)


def activation_curves(low: float = -4.0, high: float = 4.0, num: int = 201) -> dict[str, Tensor]:
    """GELU(x) = x * Phi(x) (the exact, erf form nn.GELU uses) beside ReLU(x) = max(x, 0).

    Returns:
        {"x": (num,), "gelu": (num,), "relu": (num,)} over evenly spaced x in [low, high].
    """
    if not high > low or num < 2:
        raise ValueError("activation_curves needs high > low and at least 2 points.")
    x = torch.linspace(low, high, num)
    return {"x": x, "gelu": F.gelu(x), "relu": F.relu(x)}


# --------------------------------------------------------------------------------------------
# Logit lens
# --------------------------------------------------------------------------------------------


@torch.no_grad()
def logit_lens(model: VisionTransformer, trace: Trace, softmax: bool = True) -> Tensor:
    """What the model would answer if it stopped after each block: the "logit lens".

    The model's own readout (final norm, pooling, head) is applied to every hidden state, from
    the embedded tokens (entry 0) to the output of the last block (entry depth, which equals
    ``trace.logits``). No gradients are kept.

    Args:
        model: the model that made ``trace``.
        trace: from ``model.explain``.
        softmax: return probabilities (True) or logits (False).

    Returns:
        (depth + 1, B, num_classes): the class scores after each block.

    Raises:
        ValueError: the model has no classification head.
    """
    if model.config.num_classes == 0:
        raise ValueError(
            "This model has no classification head, so there are no class scores to read: choose a model with classes."
        )
    lens = torch.stack([model.readout(on_weights(h, model)) for h in trace.hidden_states])  # (L+1, B, K)
    lens = lens.float().cpu()
    return lens.softmax(dim=-1) if softmax else lens


def class_rank_by_layer(lens: Tensor, class_index: int | Tensor) -> Tensor:
    """Rank of one class after every block (0 = the model's top answer at that point).

    Args:
        lens: (depth + 1, B, K) from ``logit_lens`` (probabilities or logits alike).
        class_index: one class for every image, or a (B,) tensor with one class per image
            (e.g. the true labels).

    Returns:
        (depth + 1, B) long: how many classes score strictly higher than the class. Reading
        down a column shows where the true class rose to the top, or where it lost.
    """
    num_classes = lens.shape[-1]
    index = torch.as_tensor(class_index, device=lens.device, dtype=torch.long)
    if ((index < 0) | (index >= num_classes)).any():
        raise ValueError(f"class_index must be from 0 to {num_classes - 1}.")
    index = index.expand(lens.shape[1])  # (B,)
    index = index[None, :, None].expand(lens.shape[0], -1, 1)  # (L+1, B, 1)
    score = lens.gather(-1, index)  # (L+1, B, 1)
    return (lens > score).sum(dim=-1)  # (L+1, B)


def logit_lens_top1(lens: Tensor, batch_index: int = 0) -> tuple[Tensor, Tensor]:
    """The class on top after every block, read from ``logit_lens``.

    Args:
        lens: (depth + 1, B, K) from ``logit_lens``.
        batch_index: which image.

    Returns:
        classes: (depth + 1,) long, the top class after block l (entry 0: the embeddings).
        scores: (depth + 1,), its probability (or logit, if the lens holds logits).
    """
    batch_index = _check_index(batch_index, lens.shape[1], "Image")
    scores, classes = lens[:, batch_index].max(dim=-1)  # each (L+1,)
    return classes, scores


def logit_lens_tracks(lens: Tensor, k: int = 5, batch_index: int = 0) -> tuple[Tensor, Tensor]:
    """The final top-k classes and every class that is on top after some block, with their
    score after every block: the chart then shows each row of ``logit_lens_top1``'s table.

    Returns:
        classes: (m,) long, m >= k: the k best classes of the final prediction, best first,
            then the other classes that lead after some block, in the order they first lead.
        scores: (depth + 1, m): column j is class ``classes[j]`` followed through the blocks.
    """
    batch_index = _check_index(batch_index, lens.shape[1], "Image")
    final = lens[-1, batch_index]  # (K,)
    chosen = final.topk(max(1, min(k, final.numel()))).indices.tolist()
    leaders, _ = logit_lens_top1(lens, batch_index)  # (L+1,)
    chosen += [c for c in dict.fromkeys(leaders.tolist()) if c not in chosen]
    classes = torch.tensor(chosen, dtype=torch.long, device=lens.device)  # (m,)
    return classes, lens[:, batch_index, classes]  # (L+1, m)


# --------------------------------------------------------------------------------------------
# Occlusion: hide patches, watch the answer
# --------------------------------------------------------------------------------------------


OcclusionOrder = Literal["rollout", "random"]


OCCLUSION_ORDERS = ("rollout", "random")


def occlusion_order(trace: Trace, kind: OcclusionOrder = "rollout", seed: int = 0, batch_index: int = 0) -> Tensor:
    """The order in which to hide the patches.

    Args:
        trace: from ``VisionTransformer.explain``.
        kind: "rollout" hides the patches with the largest share in ``rollout_map`` first
            (ties: the lower patch index first); "random" is a random order fixed by ``seed``.
        seed: for "random".
        batch_index: which image (for "rollout").

    Returns:
        (N,) long: a permutation of the patch indices 0..N-1 (row-major, no prefix tokens).
    """
    if kind not in OCCLUSION_ORDERS:
        raise ValueError(f"kind must be one of {OCCLUSION_ORDERS}, not {kind!r}.")
    grid_h, grid_w = trace.grid_size
    if kind == "random":
        generator = torch.Generator().manual_seed(seed)
        return torch.randperm(grid_h * grid_w, generator=generator)
    batch_index = _check_index(batch_index, trace.hidden_states[0].shape[0], "Image")
    shares = rollout_map(trace)[batch_index].flatten().float().cpu()  # (N,)
    return torch.sort(shares, descending=True, stable=True).indices


def occlusion_counts(num_patches: int, steps: int) -> Tensor:
    """How many patches are hidden at each step: (steps + 1,) long, from 0 to ``num_patches``
    in even (rounded) strides."""
    if steps < 1:
        raise ValueError(f"steps must be at least 1, not {steps}.")
    return torch.linspace(0, num_patches, steps + 1).round().long()


def occlusion_masks(order: Tensor, steps: int) -> Tensor:
    """Which patches are hidden at each step: (steps + 1, N) bool; row s hides the first
    ``occlusion_counts(N, steps)[s]`` patches of ``order``."""
    num_patches = order.numel()
    if not torch.equal(order.sort().values.cpu(), torch.arange(num_patches)):
        raise ValueError("order must be a permutation of the patch indices 0..N-1.")
    ranks = torch.empty(num_patches, dtype=torch.long)
    ranks[order.cpu()] = torch.arange(num_patches)  # ranks[p]: when patch p is hidden
    counts = occlusion_counts(num_patches, steps)  # (S+1,)
    return ranks[None, :] < counts[:, None]  # (S+1, N)


def occlude(pixels: Tensor, hidden: Tensor, patch_size: int, fill: float = 0.0) -> Tensor:
    """Copies of one image with some patches replaced by a constant.

    Args:
        pixels: (1, C, H, W) or (C, H, W), the normalised input.
        hidden: (M, N) bool in patch order, True = hide that patch.
        patch_size: side P of a patch.
        fill: the value hidden pixels get; 0 in normalised space is the dataset mean colour.

    Returns:
        (M, C, H, W).
    """
    if pixels.dim() == 3:
        pixels = pixels[None]
    if pixels.shape[0] != 1:
        raise ValueError(f"occlude takes one image, got a batch of {pixels.shape[0]}.")
    _, _, height, width = pixels.shape
    grid_h, grid_w = height // patch_size, width // patch_size
    if hidden.shape[-1] != grid_h * grid_w:
        raise ValueError(f"hidden has {hidden.shape[-1]} patches, the image has {grid_h * grid_w}.")
    mask = hidden.reshape(-1, 1, grid_h, grid_w).to(pixels.device)  # (M, 1, grid_h, grid_w)
    mask = mask.repeat_interleave(patch_size, dim=-2).repeat_interleave(patch_size, dim=-1)  # (M, 1, H', W')
    mask = F.pad(mask, (0, width - mask.shape[-1], 0, height - mask.shape[-2]))  # edge pixels kept
    fill_value = torch.tensor(fill, dtype=pixels.dtype, device=pixels.device)
    return torch.where(mask, fill_value, pixels)  # (M, C, H, W)


@torch.no_grad()
def occlusion_curve(
    model: VisionTransformer,
    pixels: Tensor,
    order: Tensor,
    steps: int,
    fill: float = 0.0,
    target: int | None = None,
    start: Tensor | None = None,
) -> Tensor:
    """The probability of one class as more and more patches are hidden (an occlusion test).

    The occluded copies go through the fast path of the pass the trace explains
    (``explained_pass``: one view, even for a ViT that averages its mirror image in) in one batch.

    Args:
        model: the classifier (its mode is left as it is: pass a model in eval mode).
        pixels: (1, C, H, W) normalised input.
        order: (N,) permutation of the patch indices, first hidden first (``occlusion_order``).
        steps: the curve has steps + 1 points; keep it small (see ``occlusion_steps``).
        fill: value of hidden pixels in normalised space (0 = the dataset mean).
        target: the class to follow; None takes the top class of the unoccluded image.
        start: (K,) the class probabilities of the unoccluded image where they are already
            computed (the explained pass behind a page's top-k bars): the curve starts from them
            rather than from a second pass over the same image, so the page shows one value for
            one quantity, whatever precision each pass ran in.

    Returns:
        (steps + 1,) float on the CPU: entry s is the softmax probability of ``target`` with
        ``occlusion_counts(N, steps)[s]`` patches hidden.
    """
    if model.config.num_classes == 0:
        raise ValueError("This model has no classification head, so there is no probability to follow.")
    if order.numel() != model.config.num_patches:
        raise ValueError(f"order has {order.numel()} patches, the model has {model.config.num_patches}.")
    if start is not None and start.shape != (model.config.num_classes,):
        raise ValueError(
            f"start holds {tuple(start.shape)} probabilities, the model has {model.config.num_classes} classes."
        )
    hidden = occlusion_masks(order, steps)  # (S+1, N); row 0 hides nothing
    if start is not None:
        hidden = hidden[1:]  # (S, N): the unoccluded image's answer is known
    images = occlude(on_weights(pixels, model), hidden, model.config.token_size, fill)  # (S or S+1, C, H, W)
    probs = explained_pass(model)(images).float().softmax(dim=-1).cpu()  # (S or S+1, K)
    if start is not None:
        probs = torch.cat([start.float().cpu()[None], probs])  # (S+1, K)
    if target is None:
        target = int(probs[0].argmax())
    target = _check_index(target, probs.shape[-1], "Class")
    return probs[:, target]


def occlusion_steps(
    model: VisionTransformer, budget_gflop: float = 250.0, min_steps: int = 4, max_steps: int = 20
) -> int:
    """How many occlusion steps one batched forward pass can afford.

    (steps + 1) images cost ``flops_per_image(model.config)`` each; the answer keeps that under
    ``budget_gflop`` (7 images of ViT-B/16: a few seconds on two CPU cores, docs/benchmarks.md),
    clipped to [min_steps, max_steps] and to the number of patches. Where a count of steps at
    least three quarters of that divides the patches, it takes the largest such: every step then
    hides the same number of patches (the CIFAR ViT's 64 patches: 16 steps of 4, not 20 steps of
    3 or 4), which reads more easily and costs a fifth fewer images.
    """
    images = int(budget_gflop * 1e9 // max(flops_per_image(model.config), 1))
    patches = model.config.num_patches
    steps = max(1, min(max(min_steps, min(max_steps, images - 1)), patches))
    even = [count for count in range(steps, 0, -1) if patches % count == 0 and 4 * count >= 3 * steps]
    return even[0] if even else steps


def occlusion_reading(
    rollout_curve: Sequence[float] | Tensor, random_curve: Sequence[float] | Tensor, margin: float = 0.05
) -> tuple[str, float, float]:
    """Which occlusion curve fell faster, read from the curves themselves.

    The mean probability over a curve (its area, the x steps being even) is lower the faster
    the answer falls. The page states what the curves show for this image instead of assuming
    that hiding the most attended patches first must hurt most.

    Returns:
        ("rollout_faster" | "random_faster" | "similar", mean of the rollout curve, mean of the random curve).
    """
    rollout_mean = float(torch.as_tensor(rollout_curve, dtype=torch.float64).mean())
    random_mean = float(torch.as_tensor(random_curve, dtype=torch.float64).mean())
    if rollout_mean < random_mean - margin:
        return "rollout_faster", rollout_mean, random_mean
    if random_mean < rollout_mean - margin:
        return "random_faster", rollout_mean, random_mean
    return "similar", rollout_mean, random_mean
