"""What a visitor's model would cost the server, worked out from its config before anything is
allocated, and the server's limits on it.

A class shares one server: an upload of 80 bytes of weights with a json that says ``embed_dim``
8192 once made the server build gigabytes of random weights before the weights were even
compared, and a valid model of 16,384 tokens held 7.6 GB for minutes. So the config alone is
costed first: its fields are checked (``ViTConfig`` refuses wrong types and non-finite numbers),
its depth bounded, and then a model built on PyTorch's meta device (shapes, no memory) gives the
parameter count and, run once under ``FlopCounterMode``, the FLOPs of one image. The memory one
explained image keeps (every block's output and branches, every attention map) follows from the
shapes. Anything over a limit is refused with the limit named; the server's flags raise them.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch.utils.flop_counter import FlopCounterMode

from vitviz.config import ModelConfig, ViTConfig
from vitviz.model import build_model

MAX_DEPTH = 96  # blocks of a ViT (ViT-22B has 48); more would take a minute to build even on meta
MAX_STAGE_BLOCKS = 32  # bottleneck blocks in one ResNet stage of a hybrid (timm's largest has 9)
MAX_WIDTH = 16_384  # embed_dim, and a CNN's widths
MAX_CLASSES = 100_000  # ImageNet-21k has 21,843
MAX_SIDE = 4_096  # pixels of the model's input, each way
FLOAT_BYTES = 4


@dataclass(frozen=True)
class Limits:
    """What one visitor's model may cost (the defaults fit a class server of 2 cores and 24 GB).

    Attributes:
        model_mb: its parameters in float32 (``--max-model-mb``).
        image_mb: the memory one explained image keeps (``--max-image-mb``).
        gflop: the forward pass and the attention rollout of one image (``--max-gflop``).
    """

    model_mb: float = 400
    image_mb: float = 1024
    gflop: float = 200


@dataclass(frozen=True)
class Cost:
    """A model's cost for one image.

    Attributes:
        params: parameters.
        tokens: tokens a block sees (0 for a CNN).
        model_mb: the parameters in float32.
        image_mb: memory one explained image keeps: for a ViT every block's output and both
            branches (3 x depth x T x D) and every attention map (depth x heads x T x T); for a
            CNN every layer's output.
        gflop: the forward pass of one image (a multiply-add counts 2) and, for a ViT, its
            attention rollout (a T x T matrix product a block: 2 T^3 each, what makes a model of
            thousands of tokens slow long after its forward pass).
    """

    params: int
    tokens: int
    model_mb: float
    image_mb: float
    gflop: float


class OverBudget(ValueError):
    """A model the server will not build: ``key`` names the sentence (``model.budget_*``),
    ``values`` fill it."""

    def __init__(self, key: str, **values: object) -> None:
        super().__init__(key)
        self.key, self.values = key, values


def check_shape(config: ModelConfig) -> None:
    """Refuse a config too deep, wide or large to build even on the meta device, or one the tour
    cannot explain (no block).

    Raises:
        OverBudget: ``model.budget_shape`` with what is out of range.
    """
    side = max(config.image_size)
    # num_classes 0: a ViT without a head (features only), whose pages say that it has none
    checks = [("image_size", side, 1, MAX_SIDE), ("num_classes", config.num_classes, 0, MAX_CLASSES)]
    if isinstance(config, ViTConfig):
        checks += [("depth", config.depth, 1, MAX_DEPTH), ("embed_dim", config.embed_dim, 1, MAX_WIDTH)]
        checks += [("hybrid_layers", n, 1, MAX_STAGE_BLOCKS) for n in config.hybrid_layers or ()]
    else:
        checks += [("widths", width, 1, MAX_WIDTH) for width in (config.stem_width, *config.widths)]
    for field, value, low, high in checks:
        if not low <= value <= high:
            raise OverBudget("model.budget_shape", field=field, value=value, low=low, high=high)


def cost(config: ModelConfig) -> Cost:
    """What ``config``'s model costs for one image, worked out on the meta device (``check_shape``
    first: it bounds the time this takes).

    Raises:
        OverBudget: from ``check_shape``.
    """
    check_shape(config)
    with torch.device("meta"):
        model = build_model(config).eval()
        pixels = torch.empty(1, config.in_chans, *config.image_size)
    params = sum(p.numel() for p in model.parameters())
    if isinstance(config, ViTConfig) and not config.is_hybrid:  # its matmuls, from the shapes alone
        return _vit_cost(config, params, vit_flops(config))
    # a hybrid's ResNet or a CNN: counted on a forward pass over the meta device
    counts: list[int] = []  # a CNN's layers' outputs, as the comparison page keeps them
    hooks = [m.register_forward_hook(_output_counter(counts)) for m in model.modules()]
    try:
        with FlopCounterMode(display=False) as counter:
            model(pixels)
    finally:
        for hook in hooks:
            hook.remove()
    if isinstance(config, ViTConfig):
        return _vit_cost(config, params, counter.get_total_flops())
    return _cost(params, 0, sum(counts), counter.get_total_flops())


def _vit_cost(config: ViTConfig, params: int, forward_flops: float) -> Cost:
    """A ViT's cost: what its explained image keeps (every block's output and both branches, every
    attention map) and its forward pass plus the attention rollout (a T x T product a block)."""
    tokens, width, depth = config.num_tokens, config.embed_dim, config.depth
    outputs = 3 * depth * tokens * width + depth * config.num_heads * tokens * tokens
    return _cost(params, tokens, outputs, forward_flops + depth * 2 * tokens**3)


def _cost(params: int, tokens: int, outputs: int, flops: float) -> Cost:
    return Cost(
        params=params,
        tokens=tokens,
        model_mb=params * FLOAT_BYTES / 2**20,
        image_mb=outputs * FLOAT_BYTES / 2**20,
        gflop=flops / 1e9,
    )


def vit_flops(config: ViTConfig) -> int:
    """The matmuls of a plain ViT's forward pass for one image (a multiply-add counts 2): the patch
    projection, per block the q/k/v projection, Q K^T and A V, the output projection and the MLP,
    and the head. What ``FlopCounterMode`` counts, without its first use's seconds of setup."""
    tokens, width, depth = config.num_tokens, config.embed_dim, config.depth
    flops = 2 * config.num_patches * width * config.patch_dim
    flops += depth * (2 * tokens * width * 3 * width + 4 * tokens * tokens * width + 2 * tokens * width * width)
    flops += depth * 4 * tokens * width * config.mlp_hidden_dim
    return flops + 2 * width * config.num_classes


def _output_counter(counts: list[int]):  # -> a forward hook
    def count(module, inputs, output) -> None:
        if isinstance(output, torch.Tensor) and not list(module.children()):
            counts.append(output.numel())

    return count


def check(config: ModelConfig, limits: Limits) -> Cost:
    """``config``'s cost, when it is within ``limits``.

    Raises:
        OverBudget: ``model.budget_shape``, ``model.budget_params``, ``model.budget_memory`` or
            ``model.budget_flops``, with the cost and the limit it passes.
    """
    found = cost(config)
    over = [
        ("model.budget_params", found.model_mb, limits.model_mb),
        ("model.budget_memory", found.image_mb, limits.image_mb),
        ("model.budget_flops", found.gflop, limits.gflop),
    ]
    for key, value, limit in over:
        if value > limit:
            raise OverBudget(key, size=f"{value:,.0f}", limit=f"{limit:,.0f}", tokens=found.tokens)
    return found
