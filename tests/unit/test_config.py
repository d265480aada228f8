import json

import pytest

from vitviz.models.config import Preprocess, ViTConfig, cifar10_vit_config


def test_derived_sizes():
    config = ViTConfig(image_size=(32, 48), patch_size=8, embed_dim=32, num_heads=4, num_classes=3)
    assert config.image_size == (32, 48)
    assert config.grid_size == (4, 6)
    assert config.num_patches == 24
    assert config.num_tokens == 25
    assert config.patch_dim == 8 * 8 * 3
    assert config.head_dim == 8


@pytest.mark.parametrize(
    "changes, words",
    [
        (dict(image_size=30, patch_size=4), "multiple of 4"),
        (dict(embed_dim=30, num_heads=4), "split evenly"),
        (dict(class_token=False, global_pool="token"), "class token"),
        (dict(global_pool="max"), "global_pool"),
        (dict(pos_embed="rope"), "pos_embed"),
        (dict(in_chans=2), "in_chans"),
        (dict(num_classes=3, class_names=("a", "b")), "class names"),
        (dict(drop_rate=1.5), "drop_rate"),
    ],
)
def test_invalid_combinations_raise_a_sentence(changes, words):
    base = dict(image_size=32, patch_size=4, embed_dim=32, num_heads=4, num_classes=3)
    with pytest.raises(ValueError, match=words):
        ViTConfig(**{**base, **changes})


def test_dict_round_trip_through_json():
    config = cifar10_vit_config()
    again = ViTConfig.from_dict(json.loads(json.dumps(config.to_dict())))
    assert again == config
    assert isinstance(again.preprocess, Preprocess)


def test_unknown_keys_are_refused():
    with pytest.raises(ValueError, match="Unknown config keys: colour"):
        ViTConfig.from_dict({"colour": 1})


def test_preprocess_validation():
    with pytest.raises(ValueError, match="interpolation"):
        Preprocess(interpolation="lanczos7")
    assert Preprocess(resize=256, crop=224).output_size() == (224, 224)
    assert Preprocess(resize=256).output_size() is None


def test_preprocess_must_end_at_the_input_size():
    with pytest.raises(ValueError, match="input size 32x32"):
        ViTConfig(image_size=32, patch_size=4, embed_dim=32, num_heads=4, preprocess=Preprocess(resize=256, crop=224))
    default = ViTConfig(image_size=(32, 48), patch_size=8, embed_dim=32, num_heads=4)
    assert default.preprocess.output_size() == (32, 48)


def test_new_image_size_rescales_the_preprocessing():
    config = ViTConfig(preprocess=Preprocess(resize=248, crop=224))
    bigger = config.replace(image_size=384)
    assert bigger.preprocess.crop == (384, 384)
    assert bigger.preprocess.resize == round(248 * 384 / 224)


@pytest.mark.parametrize(
    ("layers", "patch", "stride", "channels"),
    [((2, 2, 2, 2), 1, 32, 2048), ((3, 4, 9), 1, 16, 1024), ((), 8, 4, 64), ((1,), 2, 4, 256)],
)
def test_a_hybrid_counts_tokens_on_its_feature_map(layers, patch, stride, channels):
    config = ViTConfig(image_size=224, patch_size=patch, embed_dim=32, num_heads=4, hybrid_layers=layers)
    assert (config.feature_stride, config.feature_dim) == (stride, channels)
    assert config.token_size == patch * stride
    assert config.grid_size == (224 // (patch * stride),) * 2
    assert config.patch_dim == patch * patch * channels
    again = ViTConfig.from_dict(json.loads(json.dumps(config.to_dict())))
    assert again == config and again.hybrid_layers == layers


def test_a_plain_config_has_no_hybrid_key_and_pixel_patches():
    config = cifar10_vit_config()
    assert "hybrid_layers" not in config.to_dict()  # the shipped card's json is unchanged
    assert (config.token_size, config.feature_dim, config.patch_dim) == (4, 3, 48)


def test_a_hybrid_image_must_divide_into_its_tokens():
    with pytest.raises(ValueError, match="whole 32x32 patches"):
        ViTConfig(image_size=200, patch_size=1, embed_dim=32, num_heads=4, hybrid_layers=(2, 2, 2, 2))
    with pytest.raises(ValueError, match="hybrid_layers"):
        ViTConfig(image_size=224, patch_size=1, embed_dim=32, num_heads=4, hybrid_layers=(2, 2, 2, 2, 2))
