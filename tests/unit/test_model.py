import pytest
import torch

from vitviz.models.config import ViTConfig, cifar10_vit_config
from vitviz.models.model import (
    VisionTransformer,
    flops_per_image,
    resample_pos_embed,
    set_fused_attention,
    sincos_1d,
    sincos_2d,
)

CONFIGS = {
    "cls": ViTConfig(image_size=32, patch_size=4, num_classes=10, embed_dim=32, depth=2, num_heads=4),
    "avg-nonsquare": ViTConfig(
        image_size=(32, 48),
        patch_size=8,
        num_classes=3,
        embed_dim=32,
        depth=3,
        num_heads=2,
        class_token=False,
        global_pool="avg",
        fc_norm=True,
        pos_embed="sincos2d",
    ),
}


@pytest.mark.parametrize("name", CONFIGS)
def test_explain_equals_forward_and_shapes(name):
    torch.manual_seed(0)
    config = CONFIGS[name]
    model = VisionTransformer(config).eval()
    pixels = torch.randn(2, config.in_chans, *config.image_size)
    with torch.no_grad():
        trace = model.explain(pixels)
        logits = model(pixels)
    assert (trace.logits - logits).abs().max() <= 1e-5
    b, n, t, d = 2, config.num_patches, config.num_tokens, config.embed_dim
    assert trace.pixels.shape == (b, config.in_chans, *config.image_size)
    assert trace.patches.shape == (b, n, config.patch_dim)
    assert trace.patch_tokens.shape == (b, n, d)
    assert trace.tokens.shape == (b, t, d)
    assert len(trace.hidden_states) == config.depth + 1
    assert all(h.shape == (b, t, d) for h in trace.hidden_states)
    assert len(trace.attentions) == config.depth
    assert all(a.shape == (b, config.num_heads, t, t) for a in trace.attentions)
    assert trace.pre_logits.shape == (b, d)
    assert trace.logits.shape == (b, config.num_classes)
    assert trace.grid_size == config.grid_size
    for attention in trace.attentions:
        torch.testing.assert_close(attention.sum(-1), torch.ones(b, config.num_heads, t))
        assert (attention >= 0).all()
    # the residual stream adds exactly the two branches
    for i in range(config.depth):
        rebuilt = trace.hidden_states[i] + trace.attn_outputs[i] + trace.mlp_outputs[i]
        torch.testing.assert_close(rebuilt, trace.hidden_states[i + 1], atol=1e-5, rtol=1e-5)


def test_a_vit_with_test_flip_answers_with_the_mean_of_the_image_and_its_mirror_and_explains_one_view():
    torch.manual_seed(0)
    config = CONFIGS["cls"]
    assert "test_flip" not in config.to_dict()  # the json of one-view models stays as it was
    averaged = VisionTransformer(config.replace(test_flip=True)).eval()
    assert ViTConfig.from_dict(averaged.config.to_dict()).test_flip
    pixels = torch.randn(3, config.in_chans, *config.image_size)
    with torch.no_grad():
        image, mirror = averaged.forward_one_view(pixels), averaged.forward_one_view(pixels.flip(-1))
        torch.testing.assert_close(averaged(pixels), (image + mirror) / 2)
        assert (averaged(pixels) - image).abs().max() > 1e-4  # the mirror changes the answer
        torch.testing.assert_close(averaged.explain(pixels).logits, image, atol=1e-5, rtol=1e-5)
    averaged.train()  # training sees one view
    torch.testing.assert_close(averaged(pixels), averaged.forward_one_view(pixels))


def test_timm_parameter_names(tiny_config):
    names = set(VisionTransformer(tiny_config).state_dict())
    for expected in [
        "cls_token",
        "pos_embed",
        "patch_embed.proj.weight",
        "blocks.0.norm1.weight",
        "blocks.0.attn.qkv.weight",
        "blocks.0.attn.proj.bias",
        "blocks.1.norm2.bias",
        "blocks.1.mlp.fc1.weight",
        "blocks.1.mlp.fc2.bias",
        "norm.weight",
        "head.weight",
    ]:
        assert expected in names


def test_init_is_truncated_normal_002():
    torch.manual_seed(0)
    model = VisionTransformer(cifar10_vit_config())
    weight = model.blocks[0].mlp.fc1.weight
    assert abs(weight.std().item() - 0.02) < 0.002
    assert model.blocks[0].mlp.fc1.bias.abs().max() == 0
    assert abs(model.pos_embed.std().item() - 0.02) < 0.003


def test_wrong_input_size_says_what_to_do(tiny_config):
    with pytest.raises(ValueError, match="preprocess the image"):
        VisionTransformer(tiny_config)(torch.zeros(1, 3, 64, 64))


def test_drop_path_only_in_training(tiny_config):
    torch.manual_seed(0)
    model = VisionTransformer(tiny_config.replace(drop_path_rate=0.5))
    pixels = torch.randn(4, 3, 32, 32)
    model.eval()
    torch.testing.assert_close(model(pixels), model(pixels))
    model.train()
    assert not torch.allclose(model(pixels), model(pixels))


def test_params_by_module_add_up():
    model = VisionTransformer(cifar10_vit_config())
    counts = model.params_by_module()
    assert sum(counts.values()) == model.num_params() == 2_693_578
    assert counts["blocks.0"] == 444_864
    assert counts["head"] == 192 * 10 + 10


def test_sincos_tables():
    table = sincos_2d((3, 4), 16)
    assert table.shape == (12, 16)
    # the first quarter of channels depends on the row only, the third on the column only
    torch.testing.assert_close(table[0, :4], table[3, :4])
    torch.testing.assert_close(table[0, 8:12], table[4, 8:12])
    one_d = sincos_1d(10, 8)
    assert one_d[0, 0] == 0 and one_d[0, 1] == 1


def test_resample_pos_embed_keeps_cls_and_same_size():
    pos = torch.randn(1, 1 + 16, 8)
    assert resample_pos_embed(pos, (4, 4), (4, 4), 1) is pos
    bigger = resample_pos_embed(pos, (4, 4), (6, 8), 1)
    assert bigger.shape == (1, 1 + 48, 8)
    torch.testing.assert_close(bigger[:, 0], pos[:, 0])


def test_flops_of_vit_b16():
    config = ViTConfig()
    # 35.1 GFLOP per ViT-B/16 image (NOTES.md), counted as 2 x multiply-adds
    assert abs(flops_per_image(config) / 1e9 - 35.1) < 0.3


def test_the_explicit_attention_path_trains_like_the_fused_one():
    torch.manual_seed(0)
    config = CONFIGS["cls"]
    fused = VisionTransformer(config).train()
    explicit = VisionTransformer(config).train()
    explicit.load_state_dict(fused.state_dict())
    set_fused_attention(explicit, False)
    pixels = torch.randn(3, config.in_chans, *config.image_size)
    for model in (fused, explicit):
        model(pixels).square().sum().backward()
    assert not any(block.attn.fused_attn for block in explicit.blocks)
    torch.testing.assert_close(explicit(pixels), fused(pixels), atol=1e-5, rtol=1e-5)
    for (name, a), b in zip(fused.named_parameters(), explicit.parameters(), strict=True):
        torch.testing.assert_close(b.grad, a.grad, atol=1e-5, rtol=1e-4, msg=name)
    assert fused.blocks[0].attn.qkv.weight.grad.abs().sum() > 0
