"""The typed record of an explained forward pass (the idea of Hugging Face's model outputs)."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import overload

import torch
from torch import Tensor

from vitviz.models.config import ViTConfig


@dataclass
class BlockTrace:
    """What one encoder block did to its tokens.

    Attributes:
        output: tokens leaving the block, (B, T, D).
        attention: softmax(Q K^T / sqrt(d)) per head, (B, heads, T, T); rows sum to 1.
        attn_output: the attention branch added to the residual stream, (B, T, D).
        mlp_output: the MLP branch added to the residual stream, (B, T, D).
    """

    output: Tensor
    attention: Tensor
    attn_output: Tensor
    mlp_output: Tensor


class Float32Tensors(Sequence[Tensor]):
    """A read-only list of tensors that hands every entry out in float32, converting an entry the
    first time it is read and keeping the float32 copy for later readers.

    A trace made under bf16 autocast holds depth x 4 per-block tensors, and a page reads a few of
    them (one layer's attention, one token's path through the blocks): converting them all for
    every new image can cost as much as the bf16 forward pass itself (docs/benchmarks.md).
    Slicing returns a plain list of float32 tensors. C code that wants a real list (``torch.stack``) gets a
    TypeError here rather than bf16 tensors: give it ``list(tensors)``.
    """

    def __init__(self, tensors: Iterable[Tensor]) -> None:
        self._tensors = list(tensors)

    def __len__(self) -> int:
        return len(self._tensors)

    def numel(self) -> int:
        """The elements of every entry, counted without converting any."""
        return sum(t.numel() for t in self._tensors)

    @overload
    def __getitem__(self, index: int) -> Tensor: ...

    @overload
    def __getitem__(self, index: slice) -> list[Tensor]: ...

    def __getitem__(self, index: int | slice) -> Tensor | list[Tensor]:
        if isinstance(index, slice):
            return [self[i] for i in range(*index.indices(len(self)))]
        tensor = self._tensors[index]
        if tensor.is_floating_point() and tensor.dtype != torch.float32:
            tensor = tensor.float()
            self._tensors[index] = tensor  # two sessions converting at once store equal copies
        return tensor

    def __iter__(self) -> Iterator[Tensor]:
        return (self[i] for i in range(len(self)))

    def __repr__(self) -> str:
        dtypes = sorted({str(t.dtype).removeprefix("torch.") for t in self._tensors})
        return f"Float32Tensors({len(self)} tensors, held in {'/'.join(dtypes) or 'nothing'})"


@dataclass
class Trace:
    """Every intermediate of VisionTransformer.explain, one field per step of the tour.

    Attributes:
        pixels: the normalised input, (B, C, H, W).
        patches: raw pixel patches in (c p1 p2) order, (B, N, C*P*P); for a hybrid ViT,
            patches of its ResNet's feature map, (B, N, C'*P*P).
        patch_tokens: patches after the linear projection, (B, N, D).
        tokens: after the [CLS] token and the position embeddings, (B, T, D).
        hidden_states: depth + 1 entries of (B, T, D): the tokens entering block 0, then the
            output of every block (before the final LayerNorm).
        attentions: depth entries of (B, heads, T, T).
        attn_outputs: depth entries of (B, T, D), the attention branch of every block.
        mlp_outputs: depth entries of (B, T, D), the MLP branch of every block.
        pre_logits: the pooled, normalised representation the head reads, (B, D).
        logits: (B, num_classes), or (B, D) for a model without a head.
        grid_size: (grid_h, grid_w) of the patch grid.
        num_prefix_tokens: tokens before the patches (1 for [CLS], else 0).
        features: a hybrid ViT's ResNet feature map, (B, C', grid_h * P, grid_w * P); None
            for a plain ViT, whose patches are cut from the pixels.
        computed_in: the precision the matrix products ran in, "float32" or "bfloat16"
            (``vitviz.models.precision.explain`` hands a bf16 trace on in float32: ``read_in_float32``).
    """

    pixels: Tensor
    patches: Tensor
    patch_tokens: Tensor
    tokens: Tensor
    hidden_states: Sequence[Tensor]
    attentions: Sequence[Tensor]
    attn_outputs: Sequence[Tensor]
    mlp_outputs: Sequence[Tensor]
    pre_logits: Tensor
    logits: Tensor
    grid_size: tuple[int, int]
    num_prefix_tokens: int
    features: Tensor | None = None
    computed_in: str = "float32"

    @property
    def depth(self) -> int:
        return len(self.attentions)

    @property
    def num_heads(self) -> int:
        return self.attentions[0].shape[1] if self.attentions else 0

    def _map(self, fn: Callable[[Tensor], Tensor]) -> Trace:
        """A copy with ``fn`` applied to every tensor."""
        return Trace(
            pixels=fn(self.pixels),
            patches=fn(self.patches),
            patch_tokens=fn(self.patch_tokens),
            tokens=fn(self.tokens),
            hidden_states=[fn(t) for t in self.hidden_states],
            attentions=[fn(t) for t in self.attentions],
            attn_outputs=[fn(t) for t in self.attn_outputs],
            mlp_outputs=[fn(t) for t in self.mlp_outputs],
            pre_logits=fn(self.pre_logits),
            logits=fn(self.logits),
            grid_size=self.grid_size,
            num_prefix_tokens=self.num_prefix_tokens,
            features=None if self.features is None else fn(self.features),
            computed_in=self.computed_in,
        )

    def detach(self) -> Trace:
        """A copy with every tensor detached and moved to the CPU."""
        return self._map(lambda t: t.detach().cpu())

    def float(self) -> Trace:
        """A copy in float32 (a Trace made under bf16 autocast holds bf16 matrix products)."""
        return self._map(lambda t: t.float())

    def read_in_float32(self) -> Trace:
        """A copy that every reader sees in float32, converted only where read: the few
        whole-image tensors now, each per-block tensor (``Float32Tensors``) on its first read."""

        def small(t: Tensor) -> Tensor:
            return t.float() if t.is_floating_point() else t

        return Trace(
            pixels=small(self.pixels),
            patches=small(self.patches),
            patch_tokens=small(self.patch_tokens),
            tokens=small(self.tokens),
            hidden_states=Float32Tensors(self.hidden_states),
            attentions=Float32Tensors(self.attentions),
            attn_outputs=Float32Tensors(self.attn_outputs),
            mlp_outputs=Float32Tensors(self.mlp_outputs),
            pre_logits=small(self.pre_logits),
            logits=small(self.logits),
            grid_size=self.grid_size,
            num_prefix_tokens=self.num_prefix_tokens,
            features=None if self.features is None else small(self.features),
            computed_in=self.computed_in,
        )


def resnet_name(config: ViTConfig) -> str:
    """A hybrid's CNN in timm's words: "ResNet-26 (2, 2, 2, 2)", or the stem alone."""
    layers = config.hybrid_layers or ()
    if not layers:
        return "ResNet stem (7x7 conv, max pool)"
    return f"ResNet-{3 * sum(layers) + 2} {tuple(layers)}"


def forward_steps(config: ViTConfig, trace: Trace, per_block: bool = False) -> list[tuple[str, str, tuple[int, ...]]]:
    """The forward pass as (step id, code, shape) rows in the order the data flows.

    Step ids are stable names ("input", "backbone" for a hybrid's ResNet, "conv", "patches",
    "tokens", "sequence", "attention", "block", "pre_logits", "logits") that the app translates
    into an explanation. The attention and block rows stand for every block, or with
    ``per_block`` come once per block (the table people write by hand when they read the paper).
    """
    batch = trace.pixels.shape[0]
    grid_h, grid_w = trace.grid_size
    rows: list[tuple[str, str, tuple[int, ...]]] = [("input", "pixels", tuple(trace.pixels.shape))]
    if trace.features is not None:
        rows.append(("backbone", f"patch_embed.backbone  {resnet_name(config)}", tuple(trace.features.shape)))
    rows += [
        ("conv", f"patch_embed.proj  Conv2d(k=s={config.patch_size})", (batch, config.embed_dim, grid_h, grid_w)),
        ("patches", "patchify  (c p1 p2)", tuple(trace.patches.shape)),
        ("tokens", "flatten(2).transpose(1, 2)", tuple(trace.patch_tokens.shape)),
        ("sequence", ("cat([CLS], x) + " if config.class_token else "x + ") + "pos_embed", tuple(trace.tokens.shape)),
    ]
    blocks = [str(i) for i in range(trace.depth)] if per_block else [f"0..{trace.depth - 1}"]
    for i, name in enumerate(blocks):
        rows.append(("attention", f"blocks[{name}].attn  softmax(QK^T/sqrt(d))", tuple(trace.attentions[i].shape)))
        last = trace.depth if not per_block else i + 1
        rows.append(
            ("block", f"blocks[{name}]  x + MHSA(LN(x)); x + MLP(LN(x))", tuple(trace.hidden_states[last].shape))
        )
    prefix = config.num_prefix_tokens
    if config.global_pool == "token":
        pool = "norm(x)[:, 0]"
    else:
        pool = f"fc_norm(x[:, {prefix}:].mean(1))" if config.fc_norm else f"norm(x)[:, {prefix}:].mean(1)"
    rows.append(("pre_logits", pool, tuple(trace.pre_logits.shape)))
    rows.append(("logits", "head  Linear", tuple(trace.logits.shape)))
    return rows
