"""The ResNet stem of hybrid ViTs (Dosovitskiy et al. 2021, section 3.1 "Hybrid Architecture").

A hybrid model does not cut the image into pixel patches: a ResNet turns it into a feature
map, and each cell of that map becomes one token (patch size 1 on the map, or P x P cells).
This is the ResNet-V2 of Big Transfer as timm builds it for ``vit_*_r26_s32_*``,
``vit_*_r50_s16_*`` and ``vit_*_r_s16_p8_*``: weight-standardised convolutions with
TensorFlow's "SAME" padding, GroupNorm with 32 groups, ReLU, and bottleneck blocks without
pre-activation. Parameter names are timm's, so its state dicts load without renaming.
"""

from __future__ import annotations

import math

import torch.nn.functional as F
from torch import Tensor, nn

from vitviz.models.config import STAGE_CHANNELS, STEM_CHANNELS

CONV_EPS = 1e-8  # timm's hybrids standardise their convolution weights with this epsilon
GROUPS = 32


def same_padding(size: int, kernel: int, stride: int) -> tuple[int, int]:
    """TensorFlow's "SAME" padding of one side: (before, after), the extra pixel after."""
    total = max((math.ceil(size / stride) - 1) * stride + kernel - size, 0)
    return total // 2, total - total // 2


def pad_same(x: Tensor, kernel: int, stride: int, value: float = 0.0) -> Tensor:
    """Pad (B, C, H, W) so that a kernel x kernel window at ``stride`` gives ceil(H / stride) rows."""
    top, bottom = same_padding(x.shape[-2], kernel, stride)
    left, right = same_padding(x.shape[-1], kernel, stride)
    return F.pad(x, (left, right, top, bottom), value=value)


class StdConv2d(nn.Conv2d):
    """A convolution whose weights are standardised (zero mean, unit variance per output
    channel) before use, with "SAME" padding; no bias."""

    def __init__(self, in_chans: int, out_chans: int, kernel: int, stride: int = 1) -> None:
        super().__init__(in_chans, out_chans, kernel, stride=stride, bias=False)

    def forward(self, x: Tensor) -> Tensor:
        weight = self.weight.flatten(1)  # (out, in * k * k)
        mean = weight.mean(dim=1, keepdim=True)
        var = weight.var(dim=1, unbiased=False, keepdim=True)
        weight = ((weight - mean) / (var + CONV_EPS).sqrt()).view_as(self.weight)
        x = pad_same(x, self.kernel_size[0], self.stride[0])
        return F.conv2d(x, weight, None, self.stride)


def group_norm(channels: int) -> nn.GroupNorm:
    return nn.GroupNorm(GROUPS, channels, eps=1e-5)


class Stem(nn.Module):
    """7x7 convolution with stride 2, GroupNorm, ReLU, 3x3 max pool with stride 2: H/4 x W/4."""

    def __init__(self, in_chans: int) -> None:
        super().__init__()
        self.conv = StdConv2d(in_chans, STEM_CHANNELS, 7, stride=2)
        self.norm = group_norm(STEM_CHANNELS)

    def forward(self, pixels: Tensor) -> Tensor:
        x = F.relu(self.norm(self.conv(pixels)))  # (B, 64, H/2, W/2)
        x = pad_same(x, 3, 2, value=float("-inf"))
        return F.max_pool2d(x, 3, 2)  # (B, 64, H/4, W/4)


class Downsample(nn.Module):
    """The shortcut when a block changes width or size: 1x1 convolution and GroupNorm."""

    def __init__(self, in_chans: int, out_chans: int, stride: int) -> None:
        super().__init__()
        self.conv = StdConv2d(in_chans, out_chans, 1, stride=stride)
        self.norm = group_norm(out_chans)

    def forward(self, x: Tensor) -> Tensor:
        return self.norm(self.conv(x))


class Bottleneck(nn.Module):
    """1x1 (narrow to a quarter), 3x3 (carries the stride), 1x1 (widen), plus the shortcut."""

    def __init__(self, in_chans: int, out_chans: int, stride: int, downsample: bool) -> None:
        super().__init__()
        mid = out_chans // 4
        self.downsample = Downsample(in_chans, out_chans, stride) if downsample else None
        self.conv1 = StdConv2d(in_chans, mid, 1)
        self.norm1 = group_norm(mid)
        self.conv2 = StdConv2d(mid, mid, 3, stride=stride)
        self.norm2 = group_norm(mid)
        self.conv3 = StdConv2d(mid, out_chans, 1)
        self.norm3 = group_norm(out_chans)

    def forward(self, x: Tensor) -> Tensor:
        shortcut = x if self.downsample is None else self.downsample(x)
        x = F.relu(self.norm1(self.conv1(x)))
        x = F.relu(self.norm2(self.conv2(x)))
        x = self.norm3(self.conv3(x))
        return F.relu(x + shortcut)


class Stage(nn.Module):
    """``depth`` bottlenecks; the first one changes the width and (after stage 1) halves the size."""

    def __init__(self, in_chans: int, out_chans: int, stride: int, depth: int) -> None:
        super().__init__()
        self.blocks = nn.Sequential(
            *(
                Bottleneck(in_chans if i == 0 else out_chans, out_chans, stride if i == 0 else 1, downsample=i == 0)
                for i in range(depth)
            )
        )

    def forward(self, x: Tensor) -> Tensor:
        return self.blocks(x)


class ResNet(nn.Module):
    """The stem, then one stage per entry of ``layers`` (bottlenecks per stage): a feature map
    of STAGE_CHANNELS[len(layers) - 1] channels at 1 / stride(layers) of the input size."""

    def __init__(self, in_chans: int, layers: tuple[int, ...]) -> None:
        super().__init__()
        self.stem = Stem(in_chans)
        widths = (STEM_CHANNELS,) + STAGE_CHANNELS[: len(layers)]
        self.stages = nn.Sequential(
            *(Stage(widths[i], widths[i + 1], 1 if i == 0 else 2, depth) for i, depth in enumerate(layers))
        )

    def forward(self, pixels: Tensor) -> Tensor:
        return self.stages(self.stem(pixels))


def build_backbone(in_chans: int, layers: tuple[int, ...]) -> nn.Module:
    """timm's layout: the stem alone when ``layers`` is empty (``vit_*_r_s16_p8``), else a ResNet."""
    return ResNet(in_chans, layers) if layers else Stem(in_chans)


def flops(in_chans: int, layers: tuple[int, ...], image_size: tuple[int, int]) -> int:
    """Multiply-adds x 2 of the convolutions of ``build_backbone(in_chans, layers)`` on one image."""
    height, width = (math.ceil(side / 2) for side in image_size)  # after the 7x7 stride-2 conv
    total = 2 * 7 * 7 * in_chans * STEM_CHANNELS * height * width
    height, width = math.ceil(height / 2), math.ceil(width / 2)  # after the max pool
    chans = STEM_CHANNELS
    for stage, depth in enumerate(layers):
        out, mid = STAGE_CHANNELS[stage], STAGE_CHANNELS[stage] // 4
        for block in range(depth):
            stride = 2 if stage and not block else 1
            out_h, out_w = math.ceil(height / stride), math.ceil(width / stride)
            total += 2 * chans * mid * height * width  # conv1, 1x1
            total += 2 * 9 * mid * mid * out_h * out_w  # conv2, 3x3 with the stride
            total += 2 * mid * out * out_h * out_w  # conv3, 1x1
            total += 2 * chans * out * out_h * out_w if block == 0 else 0  # the downsample shortcut
            chans, height, width = out, out_h, out_w
    return total
