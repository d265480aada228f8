"""The Vision Transformer, with timm's parameter names and two paths over the same weights.

``forward`` is the fast path (scaled_dot_product_attention) for training and evaluation.
``explain`` computes softmax(Q K^T / sqrt(d)) explicitly and returns a Trace holding every
intermediate. Both read the same parameters, so ``explain(x).logits`` equals ``forward(x)`` (for a
ViT that averages its mirror image in, ``config.test_flip``, it equals ``forward_one_view(x)``).
"""

from __future__ import annotations

from collections.abc import Callable

import torch
import torch.nn.functional as F
from einops import rearrange
from torch import Tensor, nn

from vitviz.models import cnn, resnet
from vitviz.models.cnn import ConvNet, params_by_module
from vitviz.models.config import ModelConfig, ViTConfig, check_pixels
from vitviz.models.patches import patchify
from vitviz.models.trace import BlockTrace, Trace
from vitviz.server import deadline


def on_weights(x: Tensor, module: nn.Module) -> Tensor:
    """``x`` on the device and in the dtype of ``module``'s weights (a trace or an image may sit
    on the CPU while the model is on a GPU)."""
    param = next(module.parameters())
    return x.to(param.device, param.dtype)


class PatchEmbed(nn.Module):
    """Cut the image into P x P patches and project each to D numbers (one strided Conv2d).

    In a hybrid ViT a ResNet (``backbone``) first turns the image into a feature map, and the
    patches are P x P cells of that map (P = 1: one token per cell).
    """

    def __init__(self, config: ViTConfig) -> None:
        super().__init__()
        p = config.patch_size
        self.patch_size = p
        self.backbone = resnet.build_backbone(config.in_chans, config.hybrid_layers) if config.is_hybrid else None
        self.proj = nn.Conv2d(config.feature_dim, config.embed_dim, kernel_size=p, stride=p)

    def features(self, pixels: Tensor) -> Tensor:
        """What the projection cuts into patches: the pixels, or the ResNet's (B, C', H/s, W/s)."""
        return pixels if self.backbone is None else self.backbone(pixels)

    def forward(self, pixels: Tensor) -> Tensor:
        x = self.proj(self.features(pixels))  # (B, D, grid_h, grid_w)
        return rearrange(x, "b d gh gw -> b (gh gw) d")  # (B, N, D)


class Attention(nn.Module):
    """Multi-head self-attention with one fused qkv projection.

    ``fused_attn`` (timm's name) picks how ``forward`` computes it: True, one
    ``scaled_dot_product_attention`` call (the fast path on a GPU); False, the explicit
    softmax(Q K^T / sqrt(d)) V of ``explain``. Training on a CPU sets it False: for these short
    sequences PyTorch's CPU kernel is slow to differentiate (``vitviz.training.train``).
    """

    def __init__(self, config: ViTConfig) -> None:
        super().__init__()
        self.fused_attn = True
        self.num_heads = config.num_heads
        self.head_dim = config.head_dim
        self.scale = self.head_dim**-0.5
        self.qkv = nn.Linear(config.embed_dim, 3 * config.embed_dim, bias=config.qkv_bias)
        self.attn_drop = config.attn_drop_rate
        self.proj = nn.Linear(config.embed_dim, config.embed_dim)
        self.proj_drop = nn.Dropout(config.drop_rate)

    def qkv_heads(self, x: Tensor) -> tuple[Tensor, Tensor, Tensor]:
        """Queries, keys and values per head, each (B, heads, T, head_dim)."""
        qkv = self.qkv(x)  # (B, T, 3*D)
        q, k, v = rearrange(qkv, "b t (three h d) -> three b h t d", three=3, h=self.num_heads)
        return q, k, v

    def _merge(self, x: Tensor) -> Tensor:
        x = rearrange(x, "b h t d -> b t (h d)")  # (B, T, D)
        return self.proj_drop(self.proj(x))

    def forward(self, x: Tensor) -> Tensor:
        if not self.fused_attn:
            return self.explain(x)[0]
        q, k, v = self.qkv_heads(x)
        drop = self.attn_drop if self.training else 0.0
        out = F.scaled_dot_product_attention(q, k, v, dropout_p=drop)  # (B, heads, T, head_dim)
        return self._merge(out)

    def weights(self, q: Tensor, k: Tensor) -> Tensor:
        """softmax(Q K^T / sqrt(d)), (B, heads, T, T)."""
        scores = (q * self.scale) @ k.transpose(-2, -1)  # (B, heads, T, T)
        return scores.softmax(dim=-1)

    def explain(self, x: Tensor) -> tuple[Tensor, Tensor]:
        """The explicit path: (output (B, T, D), attention weights (B, heads, T, T))."""
        q, k, v = self.qkv_heads(x)
        attention = self.weights(q, k)
        dropped = F.dropout(attention, self.attn_drop, self.training)
        return self._merge(dropped @ v), attention  # v: (B, heads, T, head_dim)


class Mlp(nn.Module):
    """Linear -> GELU -> Linear, the position-wise feed-forward network."""

    def __init__(self, config: ViTConfig) -> None:
        super().__init__()
        self.fc1 = nn.Linear(config.embed_dim, config.mlp_hidden_dim)
        self.act = nn.GELU()
        self.fc2 = nn.Linear(config.mlp_hidden_dim, config.embed_dim)
        self.drop = nn.Dropout(config.drop_rate)

    def forward(self, x: Tensor) -> Tensor:
        x = self.drop(self.act(self.fc1(x)))  # (B, T, mlp_hidden)
        return self.drop(self.fc2(x))  # (B, T, D)


class DropPath(nn.Module):
    """Stochastic depth: drop a sample's whole residual branch with probability p."""

    def __init__(self, p: float) -> None:
        super().__init__()
        self.p = p

    def forward(self, x: Tensor) -> Tensor:
        if not self.training or self.p == 0.0:
            return x
        keep = 1.0 - self.p
        mask = x.new_empty((x.shape[0],) + (1,) * (x.dim() - 1)).bernoulli_(keep)
        return x * mask / keep


class Block(nn.Module):
    """Pre-LayerNorm encoder block: x + MHSA(LN(x)), then x + MLP(LN(x))."""

    def __init__(self, config: ViTConfig, drop_path: float = 0.0) -> None:
        super().__init__()
        self.norm1 = nn.LayerNorm(config.embed_dim, eps=config.layer_norm_eps)
        self.attn = Attention(config)
        self.norm2 = nn.LayerNorm(config.embed_dim, eps=config.layer_norm_eps)
        self.mlp = Mlp(config)
        self.drop_path = DropPath(drop_path)

    def forward(self, x: Tensor) -> Tensor:
        x = x + self.drop_path(self.attn(self.norm1(x)))
        return x + self.drop_path(self.mlp(self.norm2(x)))

    def explain(self, x: Tensor) -> BlockTrace:
        attn_output, attention = self.attn.explain(self.norm1(x))
        x = x + self.drop_path(attn_output)
        mlp_output = self.mlp(self.norm2(x))
        x = x + self.drop_path(mlp_output)
        return BlockTrace(x, attention, attn_output, mlp_output)


def sincos_2d(grid: tuple[int, int], dim: int, temperature: float = 10000.0) -> Tensor:
    """Fixed 2D sine-cosine position embeddings, (grid_h * grid_w, dim): a quarter of the
    channels each for sin(row), cos(row), sin(col), cos(col) at geometric frequencies."""
    grid_h, grid_w = grid
    rows, cols = torch.meshgrid(
        torch.arange(grid_h, dtype=torch.float32),
        torch.arange(grid_w, dtype=torch.float32),
        indexing="ij",
    )
    omega = 1.0 / temperature ** (torch.arange(dim // 4, dtype=torch.float32) / (dim // 4))
    rows = rows.flatten()[:, None] * omega[None, :]  # (N, dim/4)
    cols = cols.flatten()[:, None] * omega[None, :]
    return torch.cat([rows.sin(), rows.cos(), cols.sin(), cols.cos()], dim=1)  # (N, dim)


def sincos_1d(length: int, dim: int, temperature: float = 10000.0) -> Tensor:
    """The 1D sinusoidal embeddings of "Attention is all you need", (length, dim)."""
    position = torch.arange(length, dtype=torch.float32)[:, None]
    omega = 1.0 / temperature ** (torch.arange(0, dim, 2, dtype=torch.float32) / dim)
    table = torch.zeros(length, dim)
    table[:, 0::2] = torch.sin(position * omega)
    table[:, 1::2] = torch.cos(position * omega[: dim // 2])
    return table


def resample_pos_embed(
    pos_embed: Tensor, old_grid: tuple[int, int], new_grid: tuple[int, int], num_prefix_tokens: int
) -> Tensor:
    """Resize learned position embeddings from one patch grid to another with bicubic
    interpolation on the 2D grid; the [CLS] position is kept as it is.

    Args:
        pos_embed: (1, prefix + old_h * old_w, D).
        old_grid: (grid_h, grid_w) the embeddings were trained for.
        new_grid: (grid_h, grid_w) wanted.
        num_prefix_tokens: leading entries that belong to [CLS] and are not resampled.

    Returns:
        (1, prefix + new_h * new_w, D).
    """
    if tuple(old_grid) == tuple(new_grid):
        return pos_embed
    prefix, grid = pos_embed[:, :num_prefix_tokens], pos_embed[:, num_prefix_tokens:]
    old_h, old_w = old_grid
    if grid.shape[1] != old_h * old_w:
        raise ValueError(f"pos_embed holds {grid.shape[1]} patch positions, not {old_h}x{old_w}={old_h * old_w}.")
    grid = rearrange(grid, "1 (gh gw) d -> 1 d gh gw", gh=old_h, gw=old_w)
    grid = F.interpolate(grid.float(), size=tuple(new_grid), mode="bicubic", align_corners=False)
    grid = rearrange(grid, "1 d gh gw -> 1 (gh gw) d").to(pos_embed.dtype)
    return torch.cat([prefix, grid], dim=1)


@torch.no_grad()
def _trunc_normal(weight: Tensor, std: float = 0.02) -> None:
    """timm's ``trunc_normal_(weight, std=0.02)``, whose bounds stay at their default of -2 and 2:
    100 standard deviations, which no sample reaches, so a normal draw clipped there has the same
    distribution. It is drawn 2-3x faster than ``trunc_normal_``'s inverse error function (ViT-B/16's
    86 million weights: see docs/benchmarks.md)."""
    weight.normal_(0.0, std).clamp_(-2.0, 2.0)


class VisionTransformer(nn.Module):
    """ViT: patch embedding, [CLS] + position embeddings, encoder blocks, norm, head."""

    def __init__(self, config: ViTConfig) -> None:
        super().__init__()
        self.config = config
        d = config.embed_dim
        self.patch_embed = PatchEmbed(config)
        self.cls_token = nn.Parameter(torch.zeros(1, 1, d)) if config.class_token else None
        if config.pos_embed == "learn":
            self.pos_embed = nn.Parameter(torch.zeros(1, config.num_tokens, d))
        else:
            table = sincos_2d(config.grid_size, d)  # (N, D)
            table = F.pad(table, (0, 0, config.num_prefix_tokens, 0))  # [CLS] gets zeros
            self.register_buffer("pos_embed", table[None], persistent=False)
        self.pos_drop = nn.Dropout(config.drop_rate)
        rates = [config.drop_path_rate * i / max(1, config.depth - 1) for i in range(config.depth)]
        self.blocks = nn.ModuleList([Block(config, rate) for rate in rates])
        self.norm = nn.Identity() if config.fc_norm else nn.LayerNorm(d, eps=config.layer_norm_eps)
        self.fc_norm = nn.LayerNorm(d, eps=config.layer_norm_eps) if config.fc_norm else nn.Identity()
        self.head_drop = nn.Dropout(config.drop_rate)
        self.head = nn.Linear(d, config.num_classes) if config.num_classes else nn.Identity()
        self.init_weights()

    def init_weights(self) -> None:
        """Truncated normal (std 0.02) for every projection and embedding, as in the paper and timm."""
        for module in self.modules():
            if isinstance(module, (nn.Linear, nn.Conv2d)):
                _trunc_normal(module.weight)
                if module.bias is not None:
                    nn.init.zeros_(module.bias)
            elif isinstance(module, nn.LayerNorm):
                nn.init.ones_(module.weight)
                nn.init.zeros_(module.bias)
        if isinstance(self.pos_embed, nn.Parameter):
            _trunc_normal(self.pos_embed)
        if self.cls_token is not None:
            _trunc_normal(self.cls_token)

    @property
    def num_prefix_tokens(self) -> int:
        return self.config.num_prefix_tokens

    def add_tokens(self, patch_tokens: Tensor) -> Tensor:
        """Prepend [CLS] and add position embeddings: (B, N, D) -> (B, T, D)."""
        x = patch_tokens
        if self.cls_token is not None:
            cls = self.cls_token.expand(x.shape[0], -1, -1)  # (B, 1, D)
            x = torch.cat([cls, x], dim=1)  # (B, N+1, D)
        return self.pos_drop(x + self.pos_embed)

    def forward_features(self, pixels: Tensor) -> Tensor:
        """(B, C, H, W) -> tokens after the last block and the final norm, (B, T, D)."""
        check_pixels(self.config, pixels)
        x = self.add_tokens(self.patch_embed(pixels))
        for block in self.blocks:
            deadline.check()  # a visitor's model within its time limit (nothing without one)
            x = block(x)
        return self.norm(x)

    def pool(self, x: Tensor) -> Tensor:
        """(B, T, D) -> (B, D): the [CLS] token, or the mean of the patch tokens; then fc_norm."""
        token = self.config.global_pool == "token"
        return self.fc_norm(x[:, 0] if token else x[:, self.num_prefix_tokens :].mean(dim=1))

    def forward_head(self, x: Tensor) -> Tensor:
        """Tokens after the final norm (B, T, D) -> logits (B, num_classes)."""
        return self.head(self.head_drop(self.pool(x)))

    def forward_one_view(self, pixels: Tensor) -> Tensor:
        """(B, C, H, W) -> logits (B, num_classes) of the image as it is; the fast, fused-attention
        path, and what ``explain(pixels).logits`` equals."""
        return self.forward_head(self.forward_features(pixels))

    def forward(self, pixels: Tensor) -> Tensor:
        """(B, C, H, W) -> logits (B, num_classes): one view, or with ``config.test_flip`` in eval
        mode the mean of the image's and its mirror image's logits (both views in one batch)."""
        if self.config.test_flip and not self.training:
            both = self.forward_one_view(torch.cat([pixels, pixels.flip(-1)]))  # (2B, classes)
            return (both[: len(pixels)] + both[len(pixels) :]) / 2
        return self.forward_one_view(pixels)

    def readout(self, hidden: Tensor) -> Tensor:
        """Final norm, pooling and head applied to any residual stream (B, T, D): the logit lens."""
        return self.head(self.pool(self.norm(hidden)))

    def explain(self, pixels: Tensor) -> Trace:
        """The same computation as forward, keeping every intermediate (explicit attention)."""
        check_pixels(self.config, pixels)
        features = self.patch_embed.features(pixels)  # the pixels, or a hybrid's feature map
        patch_tokens = rearrange(self.patch_embed.proj(features), "b d gh gw -> b (gh gw) d")  # (B, N, D)
        tokens = self.add_tokens(patch_tokens)  # (B, T, D)
        hidden_states, attentions, attn_outputs, mlp_outputs = [tokens], [], [], []
        x = tokens
        for block in self.blocks:
            deadline.check()
            step = block.explain(x)
            x = step.output
            hidden_states.append(x)
            attentions.append(step.attention)
            attn_outputs.append(step.attn_output)
            mlp_outputs.append(step.mlp_output)
        pre_logits = self.pool(self.norm(x))  # (B, D)
        logits = self.head(self.head_drop(pre_logits))
        return Trace(
            pixels=pixels,
            patches=patchify(features, self.config.patch_size),
            patch_tokens=patch_tokens,
            tokens=tokens,
            hidden_states=hidden_states,
            attentions=attentions,
            attn_outputs=attn_outputs,
            mlp_outputs=mlp_outputs,
            pre_logits=pre_logits,
            logits=logits,
            grid_size=self.config.grid_size,
            num_prefix_tokens=self.num_prefix_tokens,
            features=features if self.config.is_hybrid else None,
        )

    def num_params(self) -> int:
        """Trainable parameters (fixed sine-cosine embeddings are not counted)."""
        return sum(p.numel() for p in self.parameters())

    def params_by_module(self) -> dict[str, int]:
        """Parameter count of every top-level module, blocks listed one by one."""
        return params_by_module(self, "blocks")


def explained_pass(model: nn.Module) -> Callable[[Tensor], Tensor]:
    """What the app explains of ``model``, (B, C, H, W) -> logits (B, num_classes): a ViT's one
    pass (``forward_one_view``: the tour's trace, its maps and its bars, even where
    ``config.test_flip`` makes ``model(pixels)`` the mean with the mirror image), any other
    classifier's ``model(pixels)`` (a mirror-averaging CNN's Grad-CAM averages both views too).
    Every curve and experiment set beside a map follows it, so the map and the curve explain one
    answer."""
    return model.forward_one_view if isinstance(model, VisionTransformer) else model


def flops_per_image(config: ModelConfig) -> int:
    """Multiply-adds x 2 of one forward pass (matmuls and a hybrid's convolutions; norms and
    softmax are ignored); a CNN's are ``cnn.flops_per_image``."""
    if getattr(config, "arch", "vit") == "cnn":
        return cnn.flops_per_image(config)
    t, d, n = config.num_tokens, config.embed_dim, config.num_patches
    embed = 2 * n * config.patch_dim * d
    attn = 2 * t * d * 3 * d + 2 * 2 * t * t * d + 2 * t * d * d
    mlp = 2 * 2 * t * d * config.mlp_hidden_dim
    head = 2 * d * config.num_classes
    stem = resnet.flops(config.in_chans, config.hybrid_layers, config.image_size) if config.is_hybrid else 0
    return stem + embed + config.depth * (attn + mlp) + head


def set_fused_attention(model: nn.Module, fused: bool) -> None:
    """Set ``fused_attn`` on every Attention in ``model``: one fused call, or the explicit path."""
    for module in model.modules():
        if isinstance(module, Attention):
            module.fused_attn = fused


def build_model(config: ModelConfig) -> nn.Module:
    """A VisionTransformer for a ViTConfig, a ConvNet for a CNNConfig (random weights)."""
    return ConvNet(config) if getattr(config, "arch", "vit") == "cnn" else VisionTransformer(config)
