"""The hybrid ViT's ResNet pieces against hand computations (timm parity is in test_convert)."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F
from torch.utils.flop_counter import FlopCounterMode

from vitviz.models.resnet import ResNet, StdConv2d, Stem, build_backbone, flops, pad_same, same_padding


@pytest.mark.parametrize(
    ("size", "kernel", "stride", "expected"),
    [(224, 7, 2, (2, 3)), (224, 1, 2, (0, 0)), (7, 3, 1, (1, 1)), (112, 3, 2, (0, 1))],
)
def test_same_padding_gives_ceil_size_over_stride(size, kernel, stride, expected):
    assert same_padding(size, kernel, stride) == expected
    x = torch.zeros(1, 1, size, size)
    out = F.max_pool2d(pad_same(x, kernel, stride), kernel, stride)
    assert out.shape[-1] == -(-size // stride)  # ceil(size / stride), TensorFlow's "SAME"


def test_std_conv_standardises_each_filter_before_use():
    torch.manual_seed(0)
    conv = StdConv2d(3, 4, 3)
    x = torch.randn(1, 3, 5, 5)
    w = conv.weight.detach()
    flat = w.flatten(1)
    standard = ((flat - flat.mean(1, keepdim=True)) / flat.std(1, unbiased=False, keepdim=True)).view_as(w)
    assert torch.allclose(conv(x), F.conv2d(F.pad(x, (1, 1, 1, 1)), standard), atol=1e-5)
    with torch.no_grad():
        conv.weight.mul_(7.0).add_(3.0)  # scale and shift do not matter after standardising
    assert torch.allclose(conv(x), F.conv2d(F.pad(x, (1, 1, 1, 1)), standard), atol=1e-4)


def test_the_stem_quarters_and_every_later_stage_halves_the_size():
    x = torch.randn(1, 3, 64, 64)
    assert Stem(3)(x).shape == (1, 64, 16, 16)
    assert ResNet(3, (1, 1, 1)).eval()(x).shape == (1, 1024, 4, 4)


@pytest.mark.parametrize("layers", [(), (1,), (2, 2, 2, 2)])
def test_flops_count_every_convolution(layers):
    model = build_backbone(3, layers).eval()
    with FlopCounterMode(display=False) as counter, torch.no_grad():
        model(torch.randn(1, 3, 96, 80))
    assert flops(3, layers, (96, 80)) == counter.get_total_flops()
