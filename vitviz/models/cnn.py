"""A small convolutional network, the ViT's counterpart: locality and translation built in.

The shape is Keller Jordan's cifar10-airbench net: a 2x2 stem convolution, then groups of

    conv 3x3 -> max-pool 2x2 -> BatchNorm -> GELU -> conv 3x3 -> BatchNorm -> GELU

that double the channels while halving the resolution, a global max-pool and a linear head.
airbench96's groups have a third convolution: x = GELU(BN(pool(conv1(x)))), then
GELU(x + BN(conv3(GELU(BN(conv2(x)))))), a shortcut around the last two.
Every layer is a named attribute, so the receptive field of each one can be read off the
modules (``receptive_fields``) and Grad-CAM can hook the last group, whose output is the feature
map the head pools (``ConvNet.last_group``).
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import Tensor, nn

from vitviz.models.config import CNNConfig, check_pixels
from vitviz.server import deadline


class ConvGroup(nn.Module):
    """Two 3x3 convolutions with a 2x2 max-pool after the first, or three with a shortcut around
    the last two (``convs=3``): (B, C_in, H, W) -> (B, C_out, H/2, W/2)."""

    def __init__(self, in_channels: int, out_channels: int, momentum: float, convs: int = 2) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(in_channels, out_channels, kernel_size=3, padding=1, bias=False)
        self.pool = nn.MaxPool2d(2)
        self.norm1 = nn.BatchNorm2d(out_channels, momentum=momentum)
        self.conv2 = nn.Conv2d(out_channels, out_channels, kernel_size=3, padding=1, bias=False)
        self.norm2 = nn.BatchNorm2d(out_channels, momentum=momentum)
        if convs == 3:
            self.conv3 = nn.Conv2d(out_channels, out_channels, kernel_size=3, padding=1, bias=False)
            self.norm3 = nn.BatchNorm2d(out_channels, momentum=momentum)
        self.act = nn.GELU()

    @property
    def convs(self) -> list[nn.Conv2d]:
        """The group's convolutions in the order they run."""
        return [self.conv1, self.conv2, *([self.conv3] if hasattr(self, "conv3") else [])]

    def forward(self, x: Tensor) -> Tensor:
        x = self.act(self.norm1(self.pool(self.conv1(x))))  # (B, C_out, H/2, W/2)
        if not hasattr(self, "conv3"):
            return self.act(self.norm2(self.conv2(x)))
        inner = self.act(self.norm2(self.conv2(x)))
        return self.act(x + self.norm3(self.conv3(inner)))  # the shortcut around conv2 and conv3


class ConvNet(nn.Module):
    """stem -> groups -> global max-pool -> head, with the same preprocessing as the ViT."""

    def __init__(self, config: CNNConfig) -> None:
        super().__init__()
        self.config = config
        self.stem = nn.Conv2d(config.in_chans, config.stem_width, kernel_size=2, padding=0, bias=True)
        self.stem_act = nn.GELU()
        widths = (config.stem_width, *config.widths)
        self.groups = nn.ModuleList(
            ConvGroup(c_in, c_out, config.batchnorm_momentum, config.group_convs)
            for c_in, c_out in zip(widths[:-1], widths[1:], strict=True)
        )
        self.pool = nn.AdaptiveMaxPool2d(1)
        self.head = nn.Linear(widths[-1], config.num_classes)

    @property
    def last_group(self) -> ConvGroup:
        """The last group, whose output (B, C_last, H', W') the head pools and Grad-CAM reads.

        Its last convolution alone would miss half the map of a group with a shortcut: there the
        output is x + BN(conv3(...)), and conv3 sees only the second term."""
        return self.groups[-1]

    def forward_features(self, pixels: Tensor) -> Tensor:
        """(B, C, H, W) -> the last group's feature map (B, C_last, H', W')."""
        check_pixels(self.config, pixels)
        x = self.stem_act(self.stem(pixels))  # (B, stem_width, H-1, W-1)
        for group in self.groups:
            deadline.check()  # a visitor's model within its time limit (nothing without one)
            x = group(x)
        return x

    def forward_head(self, features: Tensor) -> Tensor:
        """(B, C_last, H', W') -> logits (B, num_classes)."""
        return self.head(self.pool(features).flatten(1)) * self.config.logit_scale  # (B, C_last) -> (B, classes)

    def forward_one_view(self, pixels: Tensor) -> Tensor:
        """(B, C, H, W) -> logits (B, num_classes) of the image as it is."""
        return self.forward_head(self.forward_features(pixels))

    def forward(self, pixels: Tensor) -> Tensor:
        if self.config.test_flip and not self.training:
            # test-time augmentation (airbench's): a mirrored photo shows the same class, so the
            # two views' logits are averaged; training always sees one (randomly flipped) view.
            # Both views in one batch: on the CPU one pass of two images costs about half of two
            # passes of one (docs/benchmarks.md).
            both = self.forward_one_view(torch.cat([pixels, pixels.flip(-1)]))
            return (both[: len(pixels)] + both[len(pixels) :]) / 2
        return self.forward_one_view(pixels)

    def num_params(self) -> int:
        return sum(p.numel() for p in self.parameters())

    def params_by_module(self) -> dict[str, int]:
        """Parameter count of every top-level module, groups listed one by one."""
        return params_by_module(self, "groups")


def params_by_module(model: nn.Module, listed: str) -> dict[str, int]:
    """Parameter count of every top-level module of ``model``, the members of the module list
    ``listed`` ("blocks" of a ViT, "groups" of a CNN) one by one, in the model's order."""
    counts: dict[str, int] = {}
    for name, param in model.named_parameters():
        parts = name.split(".")
        key = ".".join(parts[:2]) if parts[0] == listed else parts[0]
        counts[key] = counts.get(key, 0) + param.numel()
    return counts


@torch.no_grad()
def whitening_filters(pixels: Tensor, kernel_size: int, eps: float = 5e-4) -> Tensor:
    """Filters that whiten the k x k patches of ``pixels``: airbench's first layer.

    The patches' covariance has eigenvectors v_i and eigenvalues l_i; the filter v_i / sqrt(l_i + eps)
    gives outputs of unit variance along each of them, and its negative is kept beside it, so a
    GELU after the convolution passes both signs.

    Args:
        pixels: normalised training images (B, C, H, W).
        kernel_size: the stem's k.

    Returns:
        (2 * C * k * k, C, k, k) filters, the largest eigenvalue first.
    """
    channels = pixels.shape[1]
    patches = pixels.float().unfold(2, kernel_size, 1).unfold(3, kernel_size, 1)  # (B, C, H', W', k, k)
    patches = patches.permute(0, 2, 3, 1, 4, 5).reshape(-1, channels * kernel_size * kernel_size)  # (n, C k k)
    covariance = patches.T @ patches / len(patches)
    eigenvalues, eigenvectors = torch.linalg.eigh(covariance)  # ascending
    filters = (eigenvectors.T / torch.sqrt(eigenvalues + eps)[:, None]).flip(0)  # (C k k, C k k), largest first
    filters = filters.reshape(-1, channels, kernel_size, kernel_size)
    return torch.cat([filters, -filters])


@torch.no_grad()
def init_airbench(model: ConvNet, pixels: Tensor) -> None:
    """cifar10-airbench's initialisation: a whitening stem and identity-started convolutions.

    The stem's filters whiten 2x2 patches of ``pixels`` (its bias stays trainable); every 3x3
    convolution starts as the identity on its first in_channels outputs (torch's dirac init),
    the rest keeping their random start. Which parameters stay frozen is the training recipe's
    business (``vitviz.training.train``).

    Raises:
        ValueError: when the stem is not 2 x C x k x k wide, the size whitening fills.
    """
    filters = whitening_filters(pixels, model.stem.kernel_size[0])
    if filters.shape != model.stem.weight.shape:
        raise ValueError(
            f"A whitening stem needs stem_width = 2 * C * k * k = {filters.shape[0]}, not {model.stem.weight.shape[0]}."
        )
    model.stem.weight.copy_(filters)
    model.stem.bias.zero_()
    for group in model.groups:
        for conv in group.convs:
            nn.init.dirac_(conv.weight[: conv.in_channels])


@dataclass(frozen=True)
class ReceptiveField:
    """One layer's theoretical receptive field on the input.

    Attributes:
        name: the module's name, e.g. "groups.1.conv2".
        size: side of the square input region one output unit depends on, in input pixels.
        jump: distance in input pixels between neighbouring output units (the total stride).
    """

    name: str
    size: int
    jump: int


def receptive_fields(model: nn.Module) -> list[ReceptiveField]:
    """The receptive field after every convolution and pooling layer, in the order they run.

    Uses the standard recurrence: a layer with kernel k and stride s grows the field by
    (k - 1) * jump and multiplies the jump by s. Square kernels are assumed.
    """
    size, jump, fields = 1, 1, []
    for name, module in model.named_modules():
        if isinstance(module, (nn.Conv2d, nn.MaxPool2d, nn.AvgPool2d)):
            kernel = module.kernel_size if isinstance(module.kernel_size, int) else module.kernel_size[0]
            stride = module.stride if isinstance(module.stride, int) else module.stride[0]
            dilation = getattr(module, "dilation", 1)
            dilation = dilation if isinstance(dilation, int) else dilation[0]
            size += (kernel - 1) * dilation * jump
            jump *= stride
            fields.append(ReceptiveField(name, size, jump))
    return fields


def feature_shape(config: CNNConfig) -> tuple[int, int, int]:
    """(C, H, W) of the last group's feature map, the one Grad-CAM reads: (256, 3, 3) for 32 x 32."""
    height, width = (side - 1 for side in config.image_size)  # the 2x2 stem, no padding
    for _ in config.widths:
        height, width = height // 2, width // 2
    return config.widths[-1], height, width


@torch.no_grad()
def flops_per_image(config: CNNConfig) -> int:
    """Multiply-adds x 2 of one forward pass over the convolutions and the head."""
    height, width = config.image_size
    height, width = height - 1, width - 1  # the 2x2 stem, no padding
    flops = 2 * height * width * config.in_chans * config.stem_width * 4
    c_in = config.stem_width
    for c_out in config.widths:
        flops += 2 * height * width * c_in * c_out * 9
        height, width = height // 2, width // 2
        flops += (config.group_convs - 1) * 2 * height * width * c_out * c_out * 9  # conv2 (and conv3)
        c_in = c_out
    return flops + 2 * c_in * config.num_classes
