"""One registry of model specs, and one ``load`` for every kind of name.

Names ``load`` understands:

- a registry name: the shipped CIFAR-10 model, its untrained twin, and well-known hub models;
- ``timm:<model name>``, e.g. ``timm:deit_tiny_patch16_224`` (downloads through timm);
- ``hf:<repo id>``, e.g. ``hf:google/vit-base-patch16-224`` (downloads through transformers);
- a local path: a ``.safetensors`` file with a json config beside it, a timm or Hugging Face
  checkpoint file (``.pth``, ``.pt``, ``.bin``, ``.safetensors``), or a Hugging Face model folder.

Files from users are read with safetensors or ``torch.load(weights_only=True)``: nothing in
them can run code.
"""

from __future__ import annotations

import importlib
import json
import logging
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NamedTuple

import torch
from safetensors import SafetensorError
from safetensors.torch import load_file, save_file

from vitviz.card import ModelCard
from vitviz.config import (
    HALF,
    IMAGENET_MEAN,
    IMAGENET_STD,
    ModelConfig,
    Preprocess,
    ViTConfig,
    cifar10_vit_config,
    config_from_dict,
)
from vitviz.convert import CheckpointError, from_hf, from_timm, hf_preprocess, load_state_dict_strict, unwrap_state_dict
from vitviz.data import cache_dir
from vitviz.i18n import TEXT, TranslatedError, t
from vitviz.model import VisionTransformer, build_model

log = logging.getLogger(__name__)

ASSETS = Path(__file__).resolve().parents[1] / "assets"
MODELS_DIR = ASSETS / "models"
SHIPPED = "cifar10-vit"
SHIPPED_CNN = "cifar10-cnn"
SHIPPED_FASHION = "fashion-mnist-vit"
# Models a user trains with one command; each joins the registry once its run has finished.
TRAINABLE = {"mnist-vit": "python -m vitviz.train --preset mnist-vit"}
UNTRAINED = "untrained-cifar10-vit"


class ModelLoadError(TranslatedError, RuntimeError):
    """A model could not be loaded; the message says why and what to do (library details stay as they are)."""


@dataclass(frozen=True)
class ModelSpec:
    """One entry of the registry.

    Attributes:
        name: what ``load`` and the app call it.
        title: a short human-readable label.
        source: "shipped", "run" (a model users train with one command, once trained here),
            "random", "timm", "hf" or "path".
        config: the architecture, preprocessing and classes.
        trained: False for random-init models, which the app marks as untrained.
        offline: whether it loads with no network.
        description: one sentence on where it comes from.
        card: the card of a shipped or trained model (training recipe, accuracy, history); empty for others.
        path: the weights file of a shipped or local model.
    """

    name: str
    title: str
    source: str
    config: ModelConfig
    trained: bool
    offline: bool
    description: str
    card: ModelCard = field(default_factory=ModelCard, compare=False, hash=False)
    path: Path | None = None

    def title_in(self, lang: str) -> str:
        """The title in ``lang``: registry entries are translated, other names are shown as given."""
        return self._text("title", lang, self.title)

    def description_in(self, lang: str) -> str:
        """The one-sentence description in ``lang``."""
        return self._text("about", lang, self.description)

    @property
    def is_cnn(self) -> bool:
        """A convolutional network (no patches, tokens or attention to show)."""
        return getattr(self.config, "arch", "vit") == "cnn"

    def _text(self, part: str, lang: str, fallback: str) -> str:
        return _entry_text(self.name, part, lang, self.card) if f"zoo.{self.name}.{part}" in TEXT else fallback


def _entry(name: str, card: ModelCard | None = None, **fields: Any) -> ModelSpec:
    """A registry spec whose title and description come from the i18n table (English here)."""
    title, about = _entry_text(name, "title", card=card), _entry_text(name, "about")
    return ModelSpec(name=name, title=title, description=about, card=card or ModelCard(), **fields)


def _entry_text(name: str, part: str, lang: str = "en", card: ModelCard | None = None) -> str:
    """A registry entry's "title" or "about" text; the i18n table holds every language."""
    accuracy = card.test_accuracy if card else None
    return t(f"zoo.{name}.{part}", lang, accuracy=f"{accuracy:.1%}" if accuracy is not None else "?")


class Loaded(NamedTuple):
    """What ``load`` returns: the model in eval mode on its device, and its spec."""

    model: VisionTransformer
    spec: ModelSpec


def _imagenet_preprocess(
    crop_pct: float = 0.9, interpolation: str = "bicubic", mean=IMAGENET_MEAN, std=IMAGENET_STD
) -> Preprocess:
    return Preprocess(resize=int(224 / crop_pct), crop=(224, 224), interpolation=interpolation, mean=mean, std=std)


VIT_B16 = ViTConfig(image_size=224, patch_size=16, embed_dim=768, depth=12, num_heads=12, num_classes=1000)
VIT_TI16 = VIT_B16.replace(embed_dim=192, num_heads=3)
VIT_S16 = VIT_B16.replace(embed_dim=384, num_heads=6)
VIT_R26_S32 = VIT_S16.replace(patch_size=1, hybrid_layers=(2, 2, 2, 2))  # timm's R26+ViT-S/32 hybrid


def _registry() -> dict[str, ModelSpec]:
    specs: list[ModelSpec] = []
    found = [(name, MODELS_DIR, "shipped") for name in (SHIPPED, SHIPPED_CNN, SHIPPED_FASHION)]
    found += [(name, cache_dir() / "runs" / name, "run") for name in TRAINABLE]
    for name, folder, source in found:
        card_path, weights = folder / f"{name}.json", folder / f"{name}.safetensors"
        if card_path.exists() and weights.exists():
            card = ModelCard.read(card_path)
            specs.append(
                _entry(
                    name,
                    source=source,
                    config=config_from_dict(card.config),
                    trained=True,
                    offline=True,
                    card=card,
                    path=weights,
                )
            )
    specs += [
        _entry(
            UNTRAINED,
            source="random",
            config=cifar10_vit_config(),
            trained=False,
            offline=True,
        ),
        _entry(
            "untrained-vit-b16",
            source="random",
            config=VIT_B16.replace(preprocess=_imagenet_preprocess()),
            trained=False,
            offline=True,
        ),
        _entry(
            "untrained-vit-r26-s32",
            source="random",
            config=VIT_R26_S32.replace(preprocess=_imagenet_preprocess(0.9, "bicubic", HALF, HALF)),
            trained=False,
            offline=True,
        ),
        _entry(
            "timm:vit_base_patch16_224.augreg2_in21k_ft_in1k",
            source="timm",
            config=VIT_B16.replace(preprocess=_imagenet_preprocess(0.9, "bicubic", HALF, HALF)),
            trained=True,
            offline=False,
        ),
        _entry(
            "timm:vit_small_patch16_224.augreg_in21k_ft_in1k",
            source="timm",
            config=VIT_S16.replace(preprocess=_imagenet_preprocess(0.9, "bicubic", HALF, HALF)),
            trained=True,
            offline=False,
        ),
        _entry(
            "timm:vit_small_r26_s32_224.augreg_in21k_ft_in1k",
            source="timm",
            config=VIT_R26_S32.replace(preprocess=_imagenet_preprocess(0.9, "bicubic", HALF, HALF)),
            trained=True,
            offline=False,
        ),
        _entry(
            "timm:deit_tiny_patch16_224",
            source="timm",
            config=VIT_TI16.replace(preprocess=_imagenet_preprocess(0.875, "bicubic")),
            trained=True,
            offline=False,
        ),
        _entry(
            "hf:google/vit-base-patch16-224",
            source="hf",
            config=VIT_B16.replace(
                layer_norm_eps=1e-12,
                preprocess=Preprocess(resize=(224, 224), interpolation="bilinear", mean=HALF, std=HALF),
            ),
            trained=True,
            offline=False,
        ),
    ]
    return {spec.name: spec for spec in specs}


REGISTRY: dict[str, ModelSpec] = _registry()


def default_name() -> str:
    """The shipped model when its weights are present, else its untrained twin."""
    return SHIPPED if SHIPPED in REGISTRY else UNTRAINED


def offline_names() -> list[str]:
    return [name for name, spec in REGISTRY.items() if spec.offline]


def pick_device(device: str | torch.device | None = None) -> torch.device:
    """The device asked for, else CUDA, then Apple's MPS, then the CPU."""
    if device is not None:
        return torch.device(device)
    if torch.cuda.is_available():
        return torch.device("cuda")
    if getattr(torch.backends, "mps", None) is not None and torch.backends.mps.is_available():
        return torch.device("mps")
    return torch.device("cpu")


def device_label(device: torch.device) -> str:
    """'NVIDIA H100 (cuda)' or 'CPU (2 threads)' for the sidebar."""
    if device.type == "cuda":
        return f"GPU: {torch.cuda.get_device_name(device)}"
    if device.type == "mps":
        return "GPU: Apple (MPS)"
    return f"CPU ({torch.get_num_threads()} threads)"


def load(name: str, device: str | torch.device | None = None) -> Loaded:
    """Load a model by name (see the module docstring) in eval mode on a device.

    Args:
        name: a registry name, ``timm:<name>``, ``hf:<repo id>`` or a local path.
        device: None picks CUDA, then MPS, then the CPU.

    Raises:
        ModelLoadError: with a sentence naming what works offline when a download fails.
    """
    if name in REGISTRY and REGISTRY[name].source in ("shipped", "run", "random"):
        spec = REGISTRY[name]
        model = _random(spec.config) if spec.source == "random" else _load_shipped(spec)
    elif name.startswith("timm:"):
        model = _load_timm(name.removeprefix("timm:"))
        spec = _hub_spec(name, "timm", model)
    elif name.startswith("hf:"):
        model = _load_hf(name.removeprefix("hf:"))
        spec = _hub_spec(name, "hf", model)
    elif Path(name).expanduser().exists():
        model, spec = load_path(Path(name).expanduser())
    else:
        raise ModelLoadError("model.unknown", name=repr(name), names=", ".join(REGISTRY))
    return Loaded(model.to(pick_device(device)).eval(), spec)


def _random(config: ViTConfig, seed: int = 0) -> VisionTransformer:
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        return VisionTransformer(config)


def _load_shipped(spec: ModelSpec) -> torch.nn.Module:
    model = build_model(spec.config)
    load_state_dict_strict(model, load_file(str(spec.path)))
    return model


def _hub_spec(name: str, source: str, model: VisionTransformer) -> ModelSpec:
    known = REGISTRY.get(name)
    return ModelSpec(
        name=name,
        title=known.title if known else name,
        source=source,
        config=model.config,
        trained=True,
        offline=False,
        description=known.description
        if known
        else f"Downloaded through {'timm' if source == 'timm' else 'Hugging Face transformers'}.",
    )


def _offline_error(what: str, err: BaseException) -> ModelLoadError:
    return ModelLoadError("model.offline", what=what, error=type(err).__name__, names=", ".join(offline_names()))


def _is_network_error(err: BaseException) -> bool:
    names = {cls.__name__ for cls in type(err).__mro__}
    network = {
        "LocalEntryNotFoundError",
        "ConnectionError",
        "OfflineModeIsEnabled",
        "Timeout",
        "HTTPError",
        "ConnectError",
    }
    return (
        bool(names & network)
        or isinstance(err, (ConnectionError, TimeoutError))
        or (
            isinstance(err, OSError)
            and any(s in str(err).lower() for s in ("connect", "offline", "network", "resolve", "internet"))
        )
    )


def _hub_library(module: str, name: str):  # -> the module
    """timm or transformers, which only hub models need (the optional extra "hub"); without it, a
    sentence that says what to install."""
    try:
        return importlib.import_module(module)
    except ImportError:
        raise ModelLoadError("model.needs_library", name=name, module=module) from None


def _load_timm(model_name: str, checkpoint_file: str | Path | None = None) -> VisionTransformer:
    """A timm model with pretrained weights, from the hub or from a local file."""
    timm = _hub_library("timm", f"timm:{model_name}")

    overlay = {"pretrained_cfg_overlay": {"file": str(checkpoint_file)}} if checkpoint_file else {}
    try:
        source = timm.create_model(model_name, pretrained=True, **overlay)
    except RuntimeError as err:
        if "Unknown model" in str(err):
            raise ModelLoadError("model.timm_unknown", name=repr(model_name)) from None
        if _is_network_error(err):
            raise _offline_error(f"timm:{model_name}", err) from None
        raise ModelLoadError("model.timm_failed", name=repr(model_name), error=str(err)) from None
    except Exception as err:
        if _is_network_error(err):
            raise _offline_error(f"timm:{model_name}", err) from None
        raise ModelLoadError("model.timm_failed", name=repr(model_name), error=f"{type(err).__name__}: {err}") from None
    try:
        return from_timm(source.eval())
    except ValueError as err:
        raise ModelLoadError("model.unsupported", name=f"timm:{model_name}", error=str(err)) from None


def _load_hf(repo_id: str) -> VisionTransformer:
    """A Hugging Face ViT (with its classifier when it has one) from the hub or a folder."""
    transformers = _hub_library("transformers", f"hf:{repo_id}")
    AutoConfig, ViTForImageClassification, ViTModel = (
        transformers.AutoConfig,
        transformers.ViTForImageClassification,
        transformers.ViTModel,
    )

    try:
        hf_config = AutoConfig.from_pretrained(repo_id)
        if getattr(hf_config, "model_type", None) != "vit":
            raise ModelLoadError("model.not_vit", name=repo_id, kind=repr(hf_config.model_type))
        has_head = any(a.endswith("ForImageClassification") for a in (hf_config.architectures or []))
        cls = ViTForImageClassification if has_head else ViTModel
        source = cls.from_pretrained(repo_id, attn_implementation="eager")
    except ModelLoadError:
        raise
    except Exception as err:
        if _is_network_error(err) or not Path(repo_id).exists():
            raise _offline_error(f"hf:{repo_id}", err) from None
        raise ModelLoadError("model.hf_failed", name=repo_id, error=f"{type(err).__name__}: {err}") from None
    model = from_hf(source.eval())
    processor = Path(repo_id) / "preprocessor_config.json"
    if processor.exists():
        recipe = hf_preprocess(model.config.image_size, model.config.in_chans, json.loads(processor.read_text()))
        model.config = model.config.replace(preprocess=recipe)
    return model


def read_weights(path: Path) -> dict[str, torch.Tensor]:
    """Tensors from a safetensors file or a torch checkpoint, never running code in it.

    Raises:
        ModelLoadError: for a file that is not a checkpoint, or a pickle that holds more than
            tensors (which could run code if loaded unsafely).
    """
    path = Path(path)
    if path.suffix == ".safetensors":
        try:
            return load_file(str(path))
        except (SafetensorError, OSError, ValueError) as err:
            raise ModelLoadError("model.bad_safetensors", file=path.name, error=str(err)) from None
    try:
        state = torch.load(path, map_location="cpu", weights_only=True)
    except Exception as err:
        if "weights_only" in str(err) or "Unsupported global" in str(err) or "GLOBAL" in str(err):
            raise ModelLoadError("model.pickle_refused", file=path.name) from None
        raise ModelLoadError("model.not_checkpoint", file=path.name, error=type(err).__name__) from None
    if isinstance(state, dict):
        state = unwrap_state_dict(state)
    if not isinstance(state, dict) or not all(isinstance(v, torch.Tensor) for v in state.values()):
        raise ModelLoadError("model.no_state_dict", file=path.name)
    return state


def _json_beside(path: Path) -> dict[str, Any] | None:
    candidate = path.with_suffix(".json")
    return json.loads(candidate.read_text()) if candidate.exists() else None


def load_path(path: Path) -> tuple[VisionTransformer, ModelSpec]:
    """A model from a local file or folder (see the module docstring for what is accepted)."""

    path = Path(path)
    if path.is_dir():
        if (path / "config.json").exists():
            model = _load_hf(str(path))
            return model, ModelSpec(
                str(path), path.name, "path", model.config, True, True, f"Hugging Face folder {path}.", path=path
            )
        raise ModelLoadError("model.folder_without_config", file=str(path))
    state = read_weights(path)
    meta = _json_beside(path)
    try:
        if meta is not None and ("config" in meta or "patch_size" in meta):
            config = config_from_dict(meta.get("config", meta))
            model = build_model(config)
            load_state_dict_strict(model, state)
        elif any(k.startswith(("vit.", "embeddings.")) for k in state):
            if not (path.parent / "config.json").exists():
                raise ModelLoadError("model.hf_needs_config", file=path.name)
            from transformers import ViTConfig as HFViTConfig

            model = from_hf(state, config=HFViTConfig.from_pretrained(str(path.parent)))
        else:
            num_heads = meta.get("num_heads") if meta else None
            model = from_timm(state, num_heads=num_heads)
    except CheckpointError as err:
        raise ModelLoadError("model.mismatch", file=path.name, error=str(err)) from None
    except (ValueError, TypeError, KeyError) as err:
        raise ModelLoadError("model.load_failed", file=path.name, error=str(err)) from None
    card = ModelCard.from_dict(meta) if meta and "config" in meta else ModelCard()
    spec = ModelSpec(
        str(path), path.stem, "path", model.config, True, True, f"Local checkpoint {path}.", card=card, path=path
    )
    return model, spec


def save(model: VisionTransformer, path: Path, card: ModelCard | None = None, dtype: torch.dtype | None = None) -> None:
    """Write weights as safetensors and the config (with the card, if any) as json beside them.

    With ``dtype`` (torch.float16) the floating-point tensors are stored in it; loading copies
    them into the model's float32 parameters.
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tensors = {
        k: (v.to(dtype) if dtype is not None and v.is_floating_point() else v).detach().contiguous().cpu()
        for k, v in model.state_dict().items()
    }
    save_file(tensors, str(path), metadata={"format": "pt"})
    meta = card.to_dict() if card else {}
    meta["config"] = model.config.to_dict()  # the weights' own config, whatever the card said
    path.with_suffix(".json").write_text(json.dumps(meta, indent=1))
