"""Conversion from timm and Hugging Face: parity on randomly initialised tiny models (offline)."""

from __future__ import annotations

import contextlib
import functools
import logging
import re
from collections.abc import Iterator

import pytest
import timm
import torch
import transformers
from timm.models.vision_transformer import VisionTransformer as TimmViT
from torch import Tensor, nn

from vitviz.models.config import ViTConfig
from vitviz.models.convert import CheckpointError, from_hf, from_timm, load_state_dict_strict
from vitviz.models.model import VisionTransformer, resample_pos_embed

TINY = dict(img_size=32, patch_size=4, embed_dim=32, depth=2, num_heads=4, num_classes=10)
TIMM_CASES = {
    "cls-token": {},
    "avg-pool": dict(class_token=False, global_pool="avg"),  # timm moves the norm to fc_norm
    "cls-avg-pool": dict(global_pool="avg"),  # the mean leaves [CLS] out
    "avg-pool-norm-first": dict(class_token=False, global_pool="avg", fc_norm=False),
    "patch32": dict(img_size=64, patch_size=32, num_heads=2, num_classes=5),
    "non-square": dict(img_size=(32, 48), patch_size=8, num_classes=3),
    "no-head-no-qkv-bias": dict(num_classes=0, qkv_bias=False, mlp_ratio=2.0),
}
HF_TINY = dict(hidden_size=32, num_hidden_layers=2, num_attention_heads=4, intermediate_size=64, hidden_act="gelu")


def _randomise(model: nn.Module, seed: int = 0) -> nn.Module:
    """Every parameter random (LayerNorms near 1), so a swapped tensor cannot go unnoticed."""
    generator = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for module in model.modules():
            for name, param in module.named_parameters(recurse=False):
                noise = torch.randn(param.shape, generator=generator)
                is_norm_scale = isinstance(module, (nn.LayerNorm, nn.GroupNorm)) and name == "weight"
                param.copy_(1.0 + 0.1 * noise if is_norm_scale else 0.2 * noise)
    return model.eval()


def _timm(seed: int = 0, **overrides) -> TimmViT:
    torch.manual_seed(seed)
    return _randomise(TimmViT(**{**TINY, **overrides}), seed)


def _pixels(model_config: ViTConfig, batch: int = 2) -> Tensor:
    generator = torch.Generator().manual_seed(1)
    return torch.randn(batch, model_config.in_chans, *model_config.image_size, generator=generator)


@contextlib.contextmanager
def timm_attention_maps(model: TimmViT) -> Iterator[list[Tensor]]:
    """Collect softmax(Q K^T / sqrt(d)) of every block: the explicit path, hooked on attn_drop.

    Fused attention is switched off (a hook on attn_drop would catch nothing otherwise) and
    restored, and every hook is removed, however the block exits.
    """
    maps: list[Tensor] = []
    handles, fused = [], []
    for block in model.blocks:
        fused.append(block.attn.fused_attn)
        block.attn.fused_attn = False
        hook = block.attn.attn_drop.register_forward_hook(lambda module, args, out: maps.append(out.detach()))
        handles.append(hook)
    try:
        yield maps
    finally:
        for handle in handles:
            handle.remove()
        for block, was_fused in zip(model.blocks, fused, strict=True):
            block.attn.fused_attn = was_fused


def _assert_parity(ours: VisionTransformer, logits: Tensor, attentions: list[Tensor], pixels: Tensor) -> None:
    with torch.no_grad():
        fast = ours(pixels)
        trace = ours.explain(pixels)
    assert (fast - logits).abs().max() <= 1e-4
    assert (trace.logits - logits).abs().max() <= 1e-4
    assert len(trace.attentions) == len(attentions) == ours.config.depth
    for mine, theirs in zip(trace.attentions, attentions, strict=True):
        assert mine.shape == theirs.shape
        assert (mine - theirs).abs().max() <= 1e-5


# ---------------------------------------------------------------------------------------------
# timm


@pytest.mark.parametrize("case", TIMM_CASES)
def test_timm_parity(case):
    source = _timm(**TIMM_CASES[case])
    ours = from_timm(source)
    pixels = _pixels(ours.config)
    with torch.no_grad(), timm_attention_maps(source) as maps:
        logits = source(pixels)
    assert not ours.training
    _assert_parity(ours, logits, maps, pixels)
    with torch.no_grad():  # the fused path of timm gives the same logits
        assert (source(pixels) - logits).abs().max() <= 1e-5


def test_timm_config_is_derived_from_the_model():
    source = _timm(**TIMM_CASES["avg-pool"], norm_layer=functools.partial(nn.LayerNorm, eps=1e-5))
    config = from_timm(source).config
    assert config.image_size == (32, 32) and config.patch_size == 4 and config.in_chans == 3
    assert (config.embed_dim, config.depth, config.num_heads, config.mlp_ratio) == (32, 2, 4, 4.0)
    assert not config.class_token and config.global_pool == "avg" and config.fc_norm
    assert config.layer_norm_eps == 1e-5 and config.qkv_bias and config.num_classes == 10
    assert config.class_names == ()


def test_timm_preprocessing_and_imagenet_names_from_pretrained_cfg():
    torch.manual_seed(0)
    source = timm.create_model(
        "vit_tiny_patch16_224", pretrained=False, img_size=32, patch_size=4, embed_dim=32, depth=1, num_heads=2
    )
    config = from_timm(source.eval()).config
    cfg = source.pretrained_cfg
    assert config.preprocess.crop == (32, 32)
    assert config.preprocess.resize == int(32 / cfg["crop_pct"])
    assert config.preprocess.interpolation == cfg["interpolation"]
    assert config.preprocess.mean == tuple(cfg["mean"]) and config.preprocess.std == tuple(cfg["std"])
    assert len(config.class_names) == 1000 and config.class_names[0].startswith("tench")


def test_timm_state_dict_with_num_heads():
    source = _timm()
    ours = from_timm({"model": source.state_dict()}, num_heads=4)
    pixels = _pixels(ours.config)
    with torch.no_grad():
        assert (ours(pixels) - source(pixels)).abs().max() <= 1e-4
    assert ours.config.global_pool == "token" and ours.config.image_size == (32, 32)

    avg = _timm(**TIMM_CASES["avg-pool"])
    ours = from_timm(avg.state_dict(), num_heads=4)
    assert ours.config.fc_norm and ours.config.global_pool == "avg" and not ours.config.class_token
    with torch.no_grad():
        assert (ours(pixels) - avg(pixels)).abs().max() <= 1e-4

    ddp = {"state_dict": {f"module.{key}": value for key, value in source.state_dict().items()}}
    with torch.no_grad():
        assert (from_timm(ddp, num_heads=4)(pixels) - source(pixels)).abs().max() <= 1e-4


def test_timm_state_dict_without_num_heads_asks_for_it():
    with pytest.raises(ValueError, match="num_heads"):
        from_timm(_timm().state_dict())


def test_timm_state_dict_with_config():
    source = _timm(**TIMM_CASES["non-square"])  # a non-square grid needs the config
    sd = source.state_dict()
    with pytest.raises(ValueError, match="config="):
        from_timm(sd, num_heads=4)
    config = ViTConfig(image_size=(32, 48), patch_size=8, num_classes=3, embed_dim=32, depth=2, num_heads=4)
    ours = from_timm(sd, config=config)
    pixels = _pixels(config)
    with torch.no_grad():
        assert (ours(pixels) - source(pixels)).abs().max() <= 1e-4


@pytest.mark.parametrize(
    ("overrides", "feature"),
    [
        (dict(reg_tokens=1), "register tokens"),
        (dict(init_values=1e-5), "LayerScale"),
        (dict(qk_norm=True), "qk_norm"),
        (dict(pre_norm=True), "pre_norm"),
        (dict(no_embed_class=True), "no_embed_class"),
        (dict(dynamic_img_size=True), "dynamic"),
        (dict(global_pool="max"), "global pooling 'max'"),
        (dict(global_pool="map"), "attention pooling"),
        (dict(act_layer="gelu_tanh"), "activation"),
        (dict(mlp_layer=timm.layers.SwiGLU), "MLP variant SwiGLU"),
    ],
)
def test_timm_features_we_lack_are_refused_by_name(overrides, feature):
    source = TimmViT(**{**TINY, **overrides})
    with pytest.raises(ValueError, match=re.escape(feature)):
        from_timm(source)


@pytest.mark.parametrize(
    ("overrides", "feature"),
    [(dict(reg_tokens=1), "register tokens"), (dict(init_values=1e-5), "LayerScale")],
)
def test_timm_state_dict_features_we_lack_are_refused_by_name(overrides, feature):
    source = TimmViT(**{**TINY, **overrides})
    with pytest.raises(ValueError, match=re.escape(feature)):
        from_timm(source.state_dict(), num_heads=4)


# ---------------------------------------------------------------------------------------------
# timm's hybrid ViTs (ResNet stem + transformer), their real layouts at a small input size

HYBRIDS = {
    "r26_s32": ("vit_small_r26_s32_224", (2, 2, 2, 2), 1, 32),  # name, hybrid_layers, P, pixels per token
    "stem_p8": ("vit_tiny_r_s16_p8_224", (), 8, 32),
}


def _timm_hybrid(case: str) -> TimmViT:
    torch.manual_seed(0)
    name = HYBRIDS[case][0]
    return _randomise(timm.create_model(name, pretrained=False, img_size=64, depth=2, num_classes=10))


@pytest.mark.parametrize("case", HYBRIDS)
def test_timm_hybrid_parity(case):
    source = _timm_hybrid(case)
    ours = from_timm(source)
    source, ours = source.double(), ours.double()  # 26 layers of float32 rounding reach 4e-4; float64 is exact
    _, layers, patch, token_size = HYBRIDS[case]
    assert ours.config.hybrid_layers == layers
    assert (ours.config.patch_size, ours.config.token_size, ours.config.grid_size) == (patch, token_size, (2, 2))
    pixels = _pixels(ours.config).double()
    with torch.no_grad(), timm_attention_maps(source) as maps:
        logits = source(pixels)
        features = source.patch_embed.backbone(pixels)
    _assert_parity(ours, logits, maps, pixels)
    trace = ours.explain(pixels)
    assert (trace.features - features).abs().max() <= 1e-9  # the ResNet's feature map, (B, C', h, w)
    assert trace.patches.shape == (2, 4, ours.config.patch_dim)  # P x P cells of that map, flattened


@pytest.mark.parametrize("case", HYBRIDS)
def test_timm_hybrid_state_dict_reads_the_resnet_off_the_keys(case):
    source = _timm_hybrid(case)
    ours = from_timm(source.state_dict(), num_heads=source.blocks[0].attn.num_heads)
    assert ours.config.hybrid_layers == HYBRIDS[case][1]
    assert ours.config.image_size == (64, 64)
    pixels = _pixels(ours.config).double()
    with torch.no_grad():
        assert (ours.double()(pixels) - source.double()(pixels)).abs().max() <= 1e-9


def test_timm_hybrid_with_another_cnn_is_refused_by_name():
    source = timm.create_model("vit_small_resnet50d_s16_224", pretrained=False, img_size=64, depth=1)
    with pytest.raises(ValueError, match="CNN backbone"):
        from_timm(source)


def test_timm_hybrid_with_a_changed_resnet_is_refused():
    source = _timm_hybrid("r26_s32")
    source.patch_embed.backbone.stem.conv.eps = 1e-5  # another weight standardisation
    with pytest.raises(ValueError, match="weight-standardised"):
        from_timm(source)


# ---------------------------------------------------------------------------------------------
# Hugging Face


def _hf_config(**overrides) -> transformers.ViTConfig:
    kwargs = dict(HF_TINY, image_size=32, patch_size=4, num_labels=10, attn_implementation="eager")
    return transformers.ViTConfig(**{**kwargs, **overrides})


def _hf_classifier(seed: int = 0, **overrides) -> nn.Module:
    torch.manual_seed(seed)
    return _randomise(transformers.ViTForImageClassification(_hf_config(**overrides)), seed)


def _legacy_hf_names(state_dict: dict[str, Tensor]) -> dict[str, Tensor]:
    """The names published ViT checkpoints use (encoder.layer.{i}.attention.attention.query ...)."""
    renames = [
        (r"layers\.(\d+)\.", r"encoder.layer.\1."),
        (r"attention\.([qkv])_proj", lambda m: "attention.attention." + {"q": "query", "k": "key", "v": "value"}[m[1]]),
        (r"attention\.o_proj", "attention.output.dense"),
        (r"mlp\.fc1", "intermediate.dense"),
        (r"mlp\.fc2", "output.dense"),
    ]
    renamed = {}
    for key, value in state_dict.items():
        for pattern, replacement in renames:
            key = re.sub(pattern, replacement, key)
        renamed[key] = value
    return renamed


@pytest.mark.parametrize(
    "overrides",
    [{}, dict(image_size=(32, 48), patch_size=8, num_labels=3, qkv_bias=False)],
    ids=["tiny", "non-square-patch8"],
)
def test_hf_classifier_parity(overrides):
    source = _hf_classifier(**overrides)
    ours = from_hf(source)
    pixels = _pixels(ours.config)
    with torch.no_grad():
        out = source(pixel_values=pixels, output_attentions=True)
    _assert_parity(ours, out.logits, list(out.attentions), pixels)
    config = ours.config
    assert config.layer_norm_eps == 1e-12 and config.class_names == ()
    assert config.preprocess.resize == config.image_size and config.preprocess.crop is None
    assert config.preprocess.interpolation == "bilinear" and config.preprocess.mean == (0.5, 0.5, 0.5)


def test_hf_model_without_head_matches_last_hidden_state(caplog):
    torch.manual_seed(0)
    source = _randomise(transformers.ViTModel(_hf_config()))  # with its pooler
    with caplog.at_level(logging.INFO, logger="vitviz.models.convert"):
        ours = from_hf(source)
    assert "pooler.dense.weight" in caplog.text
    assert ours.config.num_classes == 0 and isinstance(ours.head, nn.Identity)
    pixels = _pixels(ours.config)
    with torch.no_grad():
        out = source(pixel_values=pixels, output_attentions=True)
        trace = ours.explain(pixels)
    assert (trace.pre_logits - out.last_hidden_state[:, 0]).abs().max() <= 1e-4
    for mine, theirs in zip(trace.attentions, out.attentions, strict=True):
        assert (mine - theirs).abs().max() <= 1e-5


def test_hf_state_dict_with_vit_prefix_and_checkpoint_names():
    labels = {0: "cat", 1: "dog", 2: "bird"}
    source = _hf_classifier(num_labels=3, id2label=labels, label2id={v: k for k, v in labels.items()})
    state = _legacy_hf_names(source.state_dict())
    assert "vit.encoder.layer.0.attention.attention.query.weight" in state
    ours = from_hf(state, config=source.config)
    assert ours.config.class_names == ("cat", "dog", "bird")
    pixels = _pixels(ours.config)
    with torch.no_grad():
        assert (ours(pixels) - source(pixel_values=pixels).logits).abs().max() <= 1e-4
    # the same with our own config, and without the prefix
    bare = {key.removeprefix("vit."): value for key, value in state.items()}
    again = from_hf(bare, config=ours.config)
    with torch.no_grad():
        assert (again(pixels) - ours(pixels)).abs().max() == 0


def test_hf_state_dict_needs_a_config():
    with pytest.raises(ValueError, match="config="):
        from_hf(_hf_classifier().state_dict())


def test_hf_non_gelu_activation_is_refused():
    source = transformers.ViTForImageClassification(_hf_config(hidden_act="gelu_new"))
    with pytest.raises(ValueError, match="activation 'gelu_new'"):
        from_hf(source)


def test_hf_unknown_keys_are_not_skipped():
    state = dict(_hf_classifier().state_dict())
    state["vit.embeddings.mask_token"] = torch.zeros(1, 1, 32)
    with pytest.raises(CheckpointError, match="embeddings.mask_token"):
        from_hf(state, config=_hf_config())


# ---------------------------------------------------------------------------------------------
# strict loading


@pytest.fixture
def tiny_state(tiny_config) -> tuple[VisionTransformer, dict[str, Tensor]]:
    model = VisionTransformer(tiny_config)
    return model, dict(model.state_dict())


def test_strict_loading_names_a_missing_key(tiny_state):
    model, state = tiny_state
    del state["blocks.1.mlp.fc2.bias"]
    with pytest.raises(CheckpointError, match=r"Missing from the checkpoint \(1\): blocks\.1\.mlp\.fc2\.bias"):
        load_state_dict_strict(model, state)


def test_strict_loading_names_an_unexpected_key(tiny_state):
    model, state = tiny_state
    state["blocks.0.ls1.gamma"] = torch.ones(32)
    with pytest.raises(CheckpointError, match=r"Not in the model \(1\): blocks\.0\.ls1\.gamma"):
        load_state_dict_strict(model, state)


def test_strict_loading_names_a_wrong_shape_with_both_shapes(tiny_state):
    model, state = tiny_state
    state["head.weight"] = torch.zeros(5, 32)
    with pytest.raises(CheckpointError, match=re.escape("head.weight (checkpoint (5, 32), model (10, 32))")):
        load_state_dict_strict(model, state)


def test_strict_loading_lists_every_problem_and_truncates(tiny_state):
    model, state = tiny_state
    before = model.head.weight.clone()
    state = {key: value for key, value in state.items() if not key.startswith("blocks.")}
    state["extra"] = torch.zeros(1)
    state["head.weight"] = torch.ones(3, 32)
    with pytest.raises(CheckpointError) as info:
        load_state_dict_strict(model, state)
    message = str(info.value)
    missing = sum(key.startswith("blocks.") for key in model.state_dict())
    assert f"Missing from the checkpoint ({missing})" in message and f"and {missing - 10} more" in message
    assert "Not in the model (1): extra" in message and "Wrong shape (1): head.weight" in message
    assert torch.equal(model.head.weight, before)  # nothing was loaded


def test_from_timm_state_dict_with_a_missing_key_raises_checkpoint_error():
    state = dict(_timm().state_dict())
    del state["blocks.1.attn.proj.weight"]
    with pytest.raises(CheckpointError, match=r"blocks\.1\.attn\.proj\.weight"):
        from_timm(state, num_heads=4)


# ---------------------------------------------------------------------------------------------
# position embeddings at another image size


def test_pos_embed_is_resampled_for_a_new_image_size():
    source = _timm()
    ours = from_timm(source, image_size=48)
    assert ours.config.image_size == (48, 48) and ours.config.grid_size == (12, 12)
    assert ours.pos_embed.shape == (1, 1 + 12 * 12, 32)
    assert torch.equal(ours.pos_embed[:, :1], source.pos_embed[:, :1])  # [CLS] untouched
    assert ours.config.preprocess.crop == (48, 48)
    with torch.no_grad():
        logits = ours(torch.randn(1, 3, 48, 48))
    assert logits.shape == (1, 10) and torch.isfinite(logits).all()
    # timm's resampling agrees on the grid's layout (timm antialiases by default, we do not)
    expected = timm.layers.resample_abs_pos_embed(
        source.pos_embed, new_size=[12, 12], old_size=[8, 8], num_prefix_tokens=1, antialias=False
    )
    assert (ours.pos_embed - expected).abs().max() <= 1e-5


def test_pos_embed_at_the_same_size_is_unchanged():
    source = _timm()
    ours = from_timm(source, image_size=32)
    assert torch.equal(ours.pos_embed, source.pos_embed)
    table = source.pos_embed.detach()
    assert resample_pos_embed(table, (8, 8), (8, 8), 1) is table


def test_hf_pos_embed_resampled_for_a_new_image_size():
    source = _hf_classifier()
    ours = from_hf(source, image_size=(32, 48))
    assert ours.pos_embed.shape == (1, 1 + 8 * 12, 32)
    assert ours.config.preprocess.resize == (32, 48)
    with torch.no_grad():  # Hugging Face's own interpolation for a 32x48 input
        embeddings = source.vit.embeddings
        expected = embeddings.interpolate_pos_encoding(torch.zeros(1, 1 + 8 * 12, 32), 32, 48)
    assert (ours.pos_embed - expected).abs().max() <= 1e-5
    with torch.no_grad():
        assert ours(torch.randn(1, 3, 32, 48)).shape == (1, 10)
