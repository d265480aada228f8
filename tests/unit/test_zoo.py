import json
import pickle
import sys

import pytest
import torch

from vitviz.models import zoo
from vitviz.models.card import ModelCard
from vitviz.models.config import CNNConfig, ViTConfig
from vitviz.models.model import VisionTransformer, build_model
from vitviz.render import i18n
from vitviz.render.i18n import LANGUAGES

# Parameter counts per registry entry (google-research style): a new entry without a row fails.
EXPECTED_PARAMS = {
    "cifar10-vit": 2_697_610,  # depth 9, 12 heads, MLP ratio 2 (the lease of 2026-11-27; was depth 6, 2,693,578)
    "cifar10-cnn": 9_918_786,  # airbench96's net (was airbench95's, 4,606,530)
    "fashion-mnist-vit": 1_797_514,  # D = 192, 6 blocks of 6 heads, MLP ratio 2 (2026-12-07; was the seed's 605,066)
    "untrained-cifar10-vit": 2_697_610,  # the shipped shape before training
    "untrained-vit-b16": 86_567_656,
    "untrained-vit-r26-s32": 36_431_912,
    "timm:vit_small_r26_s32_224.augreg_in21k_ft_in1k": 36_431_912,
    "timm:vit_base_patch16_224.augreg2_in21k_ft_in1k": 86_567_656,
    "timm:vit_small_patch16_224.augreg_in21k_ft_in1k": 22_050_664,
    "timm:deit_tiny_patch16_224": 5_717_416,
    "hf:google/vit-base-patch16-224": 86_567_656,
}


@pytest.mark.parametrize("name", list(zoo.REGISTRY))
def test_every_entry_has_its_parameter_count(name):
    assert name in EXPECTED_PARAMS, f"add {name} to EXPECTED_PARAMS"
    with torch.device("meta"):
        model = build_model(zoo.REGISTRY[name].config)
    assert sum(p.numel() for p in model.parameters()) == EXPECTED_PARAMS[name]


def paper_vit_parameters(config: ViTConfig) -> int:
    """A plain ViT's parameters counted from its sizes alone (Dosovitskiy et al.'s model: a learned
    [CLS] token and position table, pre-norm blocks with biased qkv, the head on [CLS]): the
    patch projection C·P²·D + D, [CLS] D, positions (N + 1)·D; per block two LayerNorms 4D, qkv
    3D² + 3D, the projection D² + D and the MLP 2·D·h + h + D; the final LayerNorm 2D and the
    head D·K + K."""
    d, h = config.embed_dim, int(config.mlp_ratio * config.embed_dim)
    n = (config.image_size[0] // config.patch_size) * (config.image_size[1] // config.patch_size)
    embedding = config.in_chans * config.patch_size**2 * d + d + d + (n + 1) * d
    block = 4 * d + (3 * d * d + 3 * d) + (d * d + d) + (2 * d * h + h + d)
    return embedding + config.depth * block + 2 * d + d * config.num_classes + config.num_classes


@pytest.mark.parametrize("name", ["cifar10-vit", "fashion-mnist-vit", "untrained-cifar10-vit", "untrained-vit-b16"])
def test_the_plain_vits_count_the_parameters_their_sizes_give(name):
    """The table above against the formula, so that its rows for our own ViTs are not copies of
    what the code printed (ViT-B/16's 86,567,656 is also the paper's 86M)."""
    config = zoo.REGISTRY[name].config
    plain = (True, True, "token", False, "learn", None)
    assert (
        config.qkv_bias,
        config.class_token,
        config.global_pool,
        config.fc_norm,
        config.pos_embed,
        config.hybrid_layers,
    ) == plain
    assert paper_vit_parameters(config) == EXPECTED_PARAMS[name]


@pytest.mark.parametrize("name", [n for n in zoo.REGISTRY if n.startswith("timm:")])
def test_timm_entries_match_timm_architectures(name):
    import timm

    with torch.device("meta"):
        source = timm.create_model(name.removeprefix("timm:").split(".")[0], pretrained=False)
    assert sum(p.numel() for p in source.parameters()) == EXPECTED_PARAMS[name]


def test_untrained_model_is_marked_and_deterministic():
    model, spec = zoo.load(zoo.UNTRAINED)
    again, _ = zoo.load(zoo.UNTRAINED)
    assert not spec.trained and "untrained" in spec.title.lower()
    assert not model.training
    assert next(model.parameters()).device == zoo.pick_device()
    for a, b in zip(model.state_dict().values(), again.state_dict().values(), strict=True):
        assert torch.equal(a, b)


@pytest.mark.parametrize("name", list(zoo.REGISTRY))
def test_every_entry_is_titled_and_described_in_every_language(name):
    spec = zoo.REGISTRY[name]
    assert spec.title_in("en") == spec.title and spec.description_in("en") == spec.description
    texts = {lang: (spec.title_in(lang), spec.description_in(lang)) for lang in LANGUAGES}
    assert all(title and about for title, about in texts.values())
    assert texts["ko"][1] != texts["en"][1]


def test_shipped_title_shows_its_accuracy_and_other_names_show_themselves():
    shipped = zoo._entry(
        zoo.SHIPPED,
        card=ModelCard(test_accuracy=0.91234),
        source="shipped",
        config=ViTConfig(),
        trained=True,
        offline=True,
    )
    assert "91.2%" in shipped.title_in("en") and "91.2%" in shipped.title_in("ko")
    other = zoo.ModelSpec(
        "timm:some_vit", "timm:some_vit", "timm", ViTConfig(), True, False, "Downloaded through timm."
    )
    assert other.title_in("ko") == "timm:some_vit" and other.description_in("ko") == "Downloaded through timm."


def test_default_is_shipped_when_present():
    expected = zoo.SHIPPED if (zoo.MODELS_DIR / f"{zoo.SHIPPED}.safetensors").exists() else zoo.UNTRAINED
    assert zoo.default_name() == expected


def test_unknown_name_lists_what_exists():
    with pytest.raises(zoo.ModelLoadError, match="no model called"):
        zoo.load("no-such-model")


@pytest.mark.parametrize("name", ["timm:deit_tiny_patch16_224", "hf:google/vit-base-patch16-224"])
def test_hub_download_without_network_says_so(name):
    with pytest.raises(zoo.ModelLoadError) as err:
        zoo.load(name)
    message = str(err.value)
    assert "no network" in message and zoo.UNTRAINED in message


def test_timm_pretrained_loading_from_a_local_file(tmp_path):
    import timm

    torch.manual_seed(0)
    source = timm.create_model("deit_tiny_patch16_224", pretrained=False).eval()
    path = tmp_path / "deit_tiny.pth"
    torch.save(source.state_dict(), path)
    model = zoo._load_timm("deit_tiny_patch16_224", checkpoint_file=path).eval()
    pixels = torch.randn(1, 3, 224, 224)
    with torch.no_grad():
        assert (model(pixels) - source(pixels)).abs().max() < 1e-4
    # ImageNet-1k's 1,000 classes as timm describes them, in its order
    assert model.config.class_names == tuple(timm.data.ImageNetInfo("imagenet-1k").label_descriptions())
    assert len(model.config.class_names) == 1000 and model.config.class_names[0].startswith("tench")


def test_hugging_face_folder(tmp_path):
    import transformers

    hf_config = transformers.ViTConfig(
        image_size=32,
        patch_size=8,
        hidden_size=32,
        num_hidden_layers=2,
        num_attention_heads=4,
        intermediate_size=64,
        num_labels=3,
        id2label={0: "cat", 1: "dog", 2: "fox"},
        label2id={"cat": 0, "dog": 1, "fox": 2},
    )
    torch.manual_seed(0)
    source = transformers.ViTForImageClassification(hf_config).eval()
    source.save_pretrained(tmp_path)
    model, spec = zoo.load(str(tmp_path))
    pixels = torch.randn(2, 3, 32, 32)
    with torch.no_grad():
        assert (model(pixels) - source(pixel_values=pixels).logits).abs().max() < 1e-4
    assert model.config.class_names == ("cat", "dog", "fox")
    assert spec.source == "path"
    assert model.config.preprocess.interpolation == "bilinear"  # ViTImageProcessor's default
    processor = {"size": {"height": 32, "width": 32}, "resample": 3, "image_mean": [0.4] * 3, "image_std": [0.2] * 3}
    (tmp_path / "preprocessor_config.json").write_text(json.dumps(processor))
    model, _ = zoo.load(str(tmp_path))
    pre = model.config.preprocess
    assert (pre.resize, pre.interpolation, pre.mean, pre.std) == ((32, 32), "bicubic", (0.4,) * 3, (0.2,) * 3)


@pytest.mark.parametrize("wrapper", ["model", "state_dict", "model_state_dict", "model_ema", "module."])
def test_a_wrapped_checkpoint_is_read_as_its_state_dict(tmp_path, tiny_config, wrapper):
    model = VisionTransformer(tiny_config)
    state = model.state_dict()
    saved = {f"module.{k}": v for k, v in state.items()} if wrapper == "module." else {wrapper: state, "epoch": 3}
    torch.save(saved, tmp_path / "run.pt")
    read = zoo.read_weights(tmp_path / "run.pt")
    assert read.keys() == state.keys() and all(torch.equal(read[k], state[k]) for k in state)


def test_safetensors_with_json_round_trip(tmp_path, tiny_config):
    torch.manual_seed(1)
    model = VisionTransformer(tiny_config)
    zoo.save(model, tmp_path / "mine.safetensors", card=ModelCard(extra={"note": "test"}))
    loaded, spec = zoo.load(str(tmp_path / "mine.safetensors"))
    for key, value in model.state_dict().items():
        assert torch.equal(value, loaded.state_dict()[key])
    assert spec.config == tiny_config and spec.card.extra == {"note": "test"}


def test_checkpoint_that_does_not_match_its_config(tmp_path, tiny_config):
    zoo.save(VisionTransformer(tiny_config), tmp_path / "m.safetensors")
    meta = json.loads((tmp_path / "m.json").read_text())
    meta["config"]["depth"] = 3
    (tmp_path / "m.json").write_text(json.dumps(meta))
    with pytest.raises(zoo.ModelLoadError, match="blocks.2"):
        zoo.load(str(tmp_path / "m.safetensors"))


class _Boom:
    def __init__(self, path: str) -> None:
        self.path = path

    def __reduce__(self):
        return (open, (self.path, "w"))


def test_pickle_that_would_run_code_is_refused(tmp_path):
    marker = tmp_path / "pwned.txt"
    path = tmp_path / "evil.pth"
    with open(path, "wb") as f:
        pickle.dump({"weight": _Boom(str(marker))}, f)
    with pytest.raises(zoo.ModelLoadError, match="refused"):
        zoo.load(str(path))
    assert not marker.exists()


def test_not_a_checkpoint(tmp_path):
    path = tmp_path / "notes.pt"
    path.write_text("just text")
    with pytest.raises(zoo.ModelLoadError, match="not a checkpoint"):
        zoo.load(str(path))
    bad = tmp_path / "bad.safetensors"
    bad.write_bytes(b"\x00" * 20)
    with pytest.raises(zoo.ModelLoadError, match="not a valid safetensors"):
        zoo.load(str(bad))


def test_registry_configs_are_valid():
    for spec in zoo.REGISTRY.values():
        assert isinstance(spec.config, CNNConfig if spec.is_cnn else ViTConfig)
        assert spec.offline == (spec.source in ("shipped", "run", "random"))
    assert [n for n, spec in zoo.REGISTRY.items() if spec.is_cnn] == [zoo.SHIPPED_CNN]


def test_errors_have_a_korean_sentence(tmp_path):
    with pytest.raises(zoo.ModelLoadError) as err:
        zoo.load("no-such-model")
    assert "모델이 없습니다" in err.value.sentence("ko")
    assert i18n.plain(err.value.sentence("en")) == str(err.value)  # str: plain text; sentence: Markdown


@pytest.mark.parametrize(
    "name, title",
    [
        ("timm:deit_tiny_patch16_224", "DeiT-Ti/16"),
        ("timm:some_other_vit", "timm:some_other_vit"),
        ("hf:someone/vit", "hf:someone/vit"),
    ],
)
def test_hub_names_get_a_spec_after_their_download(name, title, monkeypatch):
    """What load does once timm or transformers has returned a model (the download itself needs the network)."""
    tiny = VisionTransformer(ViTConfig(image_size=32, patch_size=8, num_classes=3, embed_dim=32, depth=1, num_heads=2))
    monkeypatch.setattr(zoo, "_load_timm", lambda model_name, **_: tiny)
    monkeypatch.setattr(zoo, "_load_hf", lambda repo_id, **_: tiny)
    model, spec = zoo.load(name, device="cpu")
    assert model is tiny and spec.name == name and spec.trained and not spec.offline
    assert spec.title.startswith(title) and spec.title_in("ko").startswith(title)
    assert spec.description


@pytest.mark.parametrize(
    ("name", "module"), [("timm:deit_tiny_patch16_224", "timm"), ("hf:google/vit-base-patch16-224", "transformers")]
)
def test_a_hub_name_without_its_library_says_what_to_install(monkeypatch, name, module):
    monkeypatch.setitem(sys.modules, module, None)  # what a machine without the package sees: import fails
    with pytest.raises(zoo.ModelLoadError, match=f"pip install {module}"):
        zoo.load(name)
