import pytest
import torch
from torch import nn
from torchvision.models import alexnet

from vitviz.models.cnn import (
    ConvNet,
    ReceptiveField,
    flops_per_image,
    init_airbench,
    receptive_fields,
    whitening_filters,
)
from vitviz.models.config import CNNConfig, ViTConfig, cifar10_cnn_config, config_from_dict
from vitviz.models.model import VisionTransformer, build_model

TINY_CNN = CNNConfig(image_size=16, num_classes=3, stem_width=4, widths=(8, 8), class_names=("a", "b", "c"))


def test_cifar10_cnn_has_the_airbench_shape():
    model = ConvNet(cifar10_cnn_config())
    logits = model(torch.randn(2, 3, 32, 32))
    assert logits.shape == (2, 10)
    assert 1.9e6 < model.num_params() < 2.1e6  # about 2M parameters, like cifar10-airbench's net
    assert model.forward_features(torch.randn(1, 3, 32, 32)).shape == (1, 256, 3, 3)  # 31 -> 15 -> 7 -> 3
    assert model.last_group is model.groups[-1]


def test_wrong_input_shape_says_what_it_expects():
    with pytest.raises(ValueError, match=r"\(B, 3, 16, 16\)"):
        ConvNet(TINY_CNN)(torch.randn(1, 3, 32, 32))


def test_config_round_trips_and_dispatches_on_arch():
    config = cifar10_cnn_config()
    again = config_from_dict(config.to_dict())
    assert again == config and isinstance(again, CNNConfig)
    assert isinstance(config_from_dict(ViTConfig(image_size=32, patch_size=8).to_dict()), ViTConfig)
    assert isinstance(build_model(TINY_CNN), ConvNet)
    assert isinstance(
        build_model(ViTConfig(image_size=32, patch_size=8, embed_dim=32, depth=1, num_heads=2)), VisionTransformer
    )
    with pytest.raises(ValueError, match="Unknown config keys"):
        CNNConfig.from_dict({**config.to_dict(), "patch_size": 4})
    with pytest.raises(ValueError, match="halve"):
        CNNConfig(image_size=8, widths=(8, 8, 8, 8))


def test_receptive_field_of_alexnet_is_the_published_195_pixels():
    fields = receptive_fields(alexnet().features)
    assert [f.size for f in fields] == [11, 19, 51, 67, 99, 131, 163, 195]
    assert fields[-1].jump == 32


def test_receptive_field_of_our_cnn_by_hand():
    fields = {f.name: f for f in receptive_fields(ConvNet(cifar10_cnn_config()))}
    # stem 2x2: 2; conv 3x3: 4; pool 2: 5, jump 2; conv: 9; then 13, 15 (jump 4), 23; 31, 35 (jump 8), 51
    assert fields["stem"] == ReceptiveField("stem", 2, 1)
    assert [fields[f"groups.{i}.conv2"].size for i in range(3)] == [9, 23, 51]
    assert fields["groups.2.conv2"].jump == 8


def test_receptive_field_matches_the_support_of_a_gradient():
    """Without pooling (whose gradient picks one pixel), the field is where a unit's gradient is non-zero."""
    net = nn.Sequential(
        nn.Conv2d(1, 1, 3, padding=1), nn.Conv2d(1, 1, 3, stride=2, padding=1), nn.Conv2d(1, 1, 5, padding=2)
    )
    for conv in net:
        nn.init.constant_(conv.weight, 1.0)
    pixels = torch.zeros(1, 1, 64, 64, requires_grad=True)
    out = net(pixels)  # (1, 1, 32, 32)
    out[0, 0, 16, 16].backward()
    rows = torch.nonzero(pixels.grad[0, 0].abs().sum(1)).flatten()
    assert rows.max() - rows.min() + 1 == receptive_fields(net)[-1].size == 1 + 2 + 2 + 4 * 2


def test_flops_count_the_convolutions():
    config = TINY_CNN
    # stem: 15x15 outputs x 3 in x 4 out x 4 taps; group 1: 15x15 (4->8) then 7x7 (8->8); group 2: 7x7 (8->8) then 3x3
    expected = 2 * (
        15 * 15 * 3 * 4 * 4 + 15 * 15 * 4 * 8 * 9 + 7 * 7 * 8 * 8 * 9 + 7 * 7 * 8 * 8 * 9 + 3 * 3 * 8 * 8 * 9 + 8 * 3
    )
    assert flops_per_image(config) == expected


def test_whitening_filters_give_uncorrelated_unit_variance_patches():
    generator = torch.Generator().manual_seed(0)
    mixing = torch.randn(3, 3, generator=generator)  # correlated channels
    pixels = torch.einsum("dc,bchw->bdhw", mixing, torch.randn(64, 3, 16, 16, generator=generator))
    pixels = pixels + pixels.roll(1, dims=-1)  # and correlated neighbours
    filters = whitening_filters(pixels, kernel_size=2, eps=0.0)
    assert filters.shape == (24, 3, 2, 2)
    assert torch.equal(filters[12:], -filters[:12])  # each filter and its negative
    out = nn.functional.conv2d(pixels, filters[:12]).permute(1, 0, 2, 3).reshape(12, -1)  # (12, n)
    covariance = out @ out.T / out.shape[1]
    assert torch.allclose(covariance, torch.eye(12), atol=1e-3)


def test_airbench_init_whitens_the_stem_and_starts_convolutions_as_the_identity():
    model = ConvNet(CNNConfig(image_size=16, num_classes=3, stem_width=24, widths=(32, 32)))
    pixels = torch.randn(8, 3, 16, 16)
    init_airbench(model, pixels)
    assert torch.equal(model.stem.weight, whitening_filters(pixels, 2))
    conv = model.groups[1].conv1  # 32 in, 32 out: the identity on every channel
    assert torch.equal(conv(torch.ones(1, 32, 4, 4)), torch.ones(1, 32, 4, 4))
    first = model.groups[0].conv1  # 24 in, 32 out: identity on the first 24 outputs
    probe = torch.randn(1, 24, 5, 5)
    assert torch.allclose(first(probe)[:, :24], probe)
    with pytest.raises(ValueError, match="stem_width = 2 \\* C \\* k \\* k = 24"):
        init_airbench(ConvNet(TINY_CNN), pixels)


def test_logit_scale_multiplies_the_head():
    model = ConvNet(TINY_CNN)
    scaled = ConvNet(TINY_CNN.replace(logit_scale=1 / 9))
    scaled.load_state_dict(model.state_dict())
    pixels = torch.randn(2, 3, 16, 16)
    model.eval(), scaled.eval()
    assert torch.allclose(scaled(pixels), model(pixels) / 9, atol=1e-6)


def test_test_flip_averages_the_mirror_image_in_eval_mode_only():
    torch.manual_seed(0)
    model = ConvNet(TINY_CNN.replace(test_flip=True))
    pixels = torch.randn(2, 3, 16, 16)
    model.eval()
    one, mirrored = model.forward_one_view(pixels), model.forward_one_view(pixels.flip(-1))
    assert not torch.allclose(one, mirrored, atol=1e-3)  # the net itself does not see a mirror as the same
    torch.testing.assert_close(model(pixels), (one + mirrored) / 2)
    torch.testing.assert_close(model(pixels.flip(-1)), model(pixels))  # the averaged answer does
    model.train()
    torch.testing.assert_close(model(pixels), model.forward_one_view(pixels))  # training sees one view
    assert config_from_dict(TINY_CNN.replace(test_flip=True).to_dict()).test_flip
    assert not config_from_dict({k: v for k, v in TINY_CNN.to_dict().items() if k != "test_flip"}).test_flip


AIRBENCH96_TINY = TINY_CNN.replace(group_convs=3)


def test_a_three_convolution_group_adds_a_shortcut_around_its_last_two():
    model = ConvNet(AIRBENCH96_TINY).eval()
    group = model.groups[0]
    assert group.convs == [group.conv1, group.conv2, group.conv3]
    assert {"groups.0.conv3.weight", "groups.0.norm3.bias"} <= set(model.state_dict())
    assert "groups.0.conv3.weight" not in ConvNet(TINY_CNN).state_dict()  # the shipped CNNs' keys are unchanged
    x = torch.randn(2, 4, 15, 15)
    first = group.act(group.norm1(group.pool(group.conv1(x))))
    with torch.no_grad():
        group.conv3.weight.zero_()  # the inner path gives 0 (BatchNorm in eval mode, bias 0): only the shortcut is left
    assert torch.allclose(group(x), group.act(first), atol=1e-6)
    with torch.no_grad():
        group.conv3.weight.normal_()
    assert not torch.allclose(group(x), group.act(first), atol=1e-3)
    assert model(torch.randn(2, 3, 16, 16)).shape == (2, 3)
    with pytest.raises(ValueError, match="group_convs must be 2 or 3"):
        TINY_CNN.replace(group_convs=4)


def test_a_three_convolution_group_counts_its_flops_fields_and_identity_start():
    two, three = flops_per_image(TINY_CNN), flops_per_image(AIRBENCH96_TINY)
    assert three - two == 2 * (7 * 7 * 8 * 8 * 9 + 3 * 3 * 8 * 8 * 9)  # one more 3x3 conv after each pool
    fields = {f.name: f.size for f in receptive_fields(ConvNet(AIRBENCH96_TINY))}
    assert fields["groups.0.conv3"] == fields["groups.0.conv2"] + 2 * 2  # 3x3 at a jump of 2
    model = ConvNet(CNNConfig(image_size=16, num_classes=3, stem_width=24, widths=(32, 32), group_convs=3))
    init_airbench(model, torch.randn(8, 3, 16, 16))
    probe = torch.randn(1, 32, 4, 4)
    assert torch.allclose(model.groups[1].conv3(probe), probe)  # started as the identity, like conv1 and conv2
