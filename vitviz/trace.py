"""The typed record of an explained forward pass (the idea of Hugging Face's model outputs)."""

from __future__ import annotations

from dataclasses import dataclass

from torch import Tensor


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
    """

    pixels: Tensor
    patches: Tensor
    patch_tokens: Tensor
    tokens: Tensor
    hidden_states: list[Tensor]
    attentions: list[Tensor]
    attn_outputs: list[Tensor]
    mlp_outputs: list[Tensor]
    pre_logits: Tensor
    logits: Tensor
    grid_size: tuple[int, int]
    num_prefix_tokens: int
    features: Tensor | None = None

    @property
    def depth(self) -> int:
        return len(self.attentions)

    @property
    def num_heads(self) -> int:
        return self.attentions[0].shape[1] if self.attentions else 0

    def shapes(self) -> list[tuple[str, tuple[int, ...]]]:
        """(name, shape) of every traced tensor in the order the data flows."""
        rows: list[tuple[str, tuple[int, ...]]] = [
            ("pixels", tuple(self.pixels.shape)),
            ("patches", tuple(self.patches.shape)),
            ("patch_tokens", tuple(self.patch_tokens.shape)),
            ("tokens", tuple(self.tokens.shape)),
        ]
        for i, (attention, hidden) in enumerate(zip(self.attentions, self.hidden_states[1:], strict=True)):
            rows.append((f"blocks.{i}.attention", tuple(attention.shape)))
            rows.append((f"hidden_states[{i + 1}]", tuple(hidden.shape)))
        rows.append(("pre_logits", tuple(self.pre_logits.shape)))
        rows.append(("logits", tuple(self.logits.shape)))
        return rows

    def detach(self) -> Trace:
        """A copy with every tensor detached and moved to the CPU."""

        def cpu(t: Tensor) -> Tensor:
            return t.detach().cpu()

        return Trace(
            pixels=cpu(self.pixels),
            patches=cpu(self.patches),
            patch_tokens=cpu(self.patch_tokens),
            tokens=cpu(self.tokens),
            hidden_states=[cpu(t) for t in self.hidden_states],
            attentions=[cpu(t) for t in self.attentions],
            attn_outputs=[cpu(t) for t in self.attn_outputs],
            mlp_outputs=[cpu(t) for t in self.mlp_outputs],
            pre_logits=cpu(self.pre_logits),
            logits=cpu(self.logits),
            grid_size=self.grid_size,
            num_prefix_tokens=self.num_prefix_tokens,
            features=None if self.features is None else cpu(self.features),
        )
