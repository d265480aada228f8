"""One registry of model specs, and one ``load`` for every kind of name.

Names ``load`` understands:

- a registry name: the shipped CIFAR-10 model, its untrained twin, and well-known hub models;
- ``timm:<model name>``, e.g. ``timm:deit_tiny_patch16_224`` (downloads through timm);
- ``hf:<repo id>``, e.g. ``hf:google/vit-base-patch16-224`` (downloads through transformers);
- a local path: a ``.safetensors`` file with a json config beside it, a timm or Hugging Face
  checkpoint file (``.pth``, ``.pt``, ``.bin``, ``.safetensors``), or a Hugging Face model folder.

Files from users are read with safetensors or ``torch.load(weights_only=True)``: nothing in
them can run code. The app passes its server's ``vitviz.server.access.Policy`` to ``load``, which then
loads only what the policy allows (see vitviz/server/access.py); without one (the command-line tools,
whose user owns the machine) every name is tried.
"""

from __future__ import annotations

import hashlib
import importlib
import json
import logging
import os
import re
import stat
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NamedTuple

import torch
from safetensors import SafetensorError
from safetensors.torch import load as load_bytes
from safetensors.torch import load_file, save_file

from vitviz.models import budget
from vitviz.models.card import ModelCard
from vitviz.models.config import (
    HALF,
    IMAGENET_MEAN,
    IMAGENET_STD,
    ModelConfig,
    Preprocess,
    ViTConfig,
    cifar10_vit_config,
    config_from_dict,
)
from vitviz.models.convert import (
    CheckpointError,
    from_hf,
    from_timm,
    hf_preprocess,
    load_state_dict_strict,
    timm_config_from_shapes,
    unwrap_state_dict,
)
from vitviz.models.data import cache_dir
from vitviz.models.model import VisionTransformer, build_model
from vitviz.render.i18n import TEXT, TranslatedError, t
from vitviz.server import access, values

log = logging.getLogger(__name__)

ASSETS = Path(__file__).resolve().parents[1] / "assets"  # package data: a wheel carries it
MODELS_DIR = ASSETS / "models"
SHIPPED = "cifar10-vit"
SHIPPED_CNN = "cifar10-cnn"
SHIPPED_FASHION = "fashion-mnist-vit"
# Models a user trains with one command; each joins the registry once its run has finished.
TRAINABLE = {"mnist-vit": "python -m vitviz train --preset mnist-vit"}
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
    # one view, the protocol every model is compared by (a CNN that averages its mirror says so on its card)
    accuracy = (card.test_accuracy if card.one_view_accuracy is None else card.one_view_accuracy) if card else None
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
    shipped = next((spec for spec in specs if spec.name == SHIPPED), None)
    specs += [
        _entry(  # the shipped ViT's shape before training: what its training changed
            UNTRAINED,
            source="random",
            config=shipped.config if shipped is not None else cifar10_vit_config(),
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


def registry_files() -> dict[str, Path | None]:
    """The registry's names and their weights files, for ``access.decide``."""
    return {name: spec.path for name, spec in REGISTRY.items()}


UPLOAD = "upload:"  # the name of a visitor's uploaded checkpoint: upload:<digest>:<file name>


def upload_name(files: dict[str, bytes]) -> str:
    """The name an upload goes by: its weights' digest and file name.

    Args:
        files: file name -> bytes: one ``.safetensors`` file, and perhaps one ``.json``.

    Raises:
        ModelLoadError: for any other set of files.
    """
    weights = [name for name in files if name.lower().endswith(".safetensors")]
    configs = [name for name in files if name.lower().endswith(".json")]
    if len(weights) != 1 or len(configs) > 1 or len(files) != len(weights) + len(configs):
        raise ModelLoadError("model.upload_files")
    digest = hashlib.sha256(files[weights[0]] + b"\0" + b"".join(files[c] for c in configs)).hexdigest()[:16]
    return f"{UPLOAD}{digest}:{Path(weights[0]).name}"


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
    threads = torch.get_num_threads()
    return f"CPU ({threads} thread{'' if threads == 1 else 's'})"


def load(name: str, device: str | torch.device | None = None, policy: access.Policy | None = None) -> Loaded:
    """Load a model by name (see the module docstring) in eval mode on a device.

    Args:
        name: a registry name, ``timm:<name>``, ``hf:<repo id>`` or a local path.
        device: None picks CUDA, then MPS, then the CPU.
        policy: a server's rules (``vitviz.server.access``): what it does not allow is refused, a path
            outside its model folders with the sentence a missing name gets. None: no rules.

    Raises:
        ModelLoadError: a sentence that says what is wrong and what to do.
    """
    if policy is not None:
        name = _allowed_name(name.strip(), policy)
    if name in REGISTRY and REGISTRY[name].source in ("shipped", "run", "random"):
        spec = REGISTRY[name]
        model = _random(spec.config) if spec.source == "random" else _load_shipped(spec)
    elif name.startswith("timm:"):
        model = _load_timm(name.removeprefix("timm:"), policy=policy)
        spec = _hub_spec(name, "timm", model)
    elif name.startswith("hf:"):
        model = _load_hf(name.removeprefix("hf:"), policy=policy)
        spec = _hub_spec(name, "hf", model)
    elif policy is not None or Path(name).expanduser().exists():
        model, spec = load_path(Path(name).expanduser(), policy)
    else:
        raise ModelLoadError("model.unknown", name=repr(name), names=", ".join(REGISTRY))
    return Loaded(model.to(pick_device(device)).eval(), spec)


def unknown_error(name: str, policy: access.Policy) -> ModelLoadError:
    """What a server answers for a name it has no model for, or may not open: the same sentence."""
    names = ", ".join(n for n, spec in REGISTRY.items() if spec.offline)
    files = ", ".join(access.offered(policy))  # by name: a sentence names no folder of the server
    key = {  # (downloads allowed, files offered): the sentence that lists what there is
        (False, False): "model.unknown_served",
        (True, False): "model.unknown_served_hub",
        (False, True): "model.unknown_served_folders",
        (True, True): "model.unknown_served_hub_folders",
    }[policy.allow_hub, bool(files)]
    return ModelLoadError(key, name=repr(values.echo(name)), names=names, files=files)


def _allowed_name(name: str, policy: access.Policy) -> str:
    """The registry name or resolved path ``load`` goes on with, if the policy allows ``name``.

    Raises:
        ModelLoadError: for what the policy refuses (see ``access.decide``).
    """
    found = access.decide(name, policy, registry_files())
    if found.kind in ("registry", "hub"):
        return str(found.target)
    if found.kind in ("file", "folder"):
        return str(found.target)
    if found.kind == "hub_off":
        offline = ", ".join(n for n, spec in REGISTRY.items() if spec.offline)
        raise ModelLoadError("model.hub_off", name=values.echo(name), names=offline)
    if found.kind == "special":
        raise ModelLoadError("model.special", file=values.echo(name))
    if found.kind == "too_large":
        raise ModelLoadError("model.file_too_large", file=values.echo(name), limit=policy.max_model_mb)
    raise unknown_error(name, policy)


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


def _offline_error(what: str, err: BaseException | None = None) -> ModelLoadError:
    if err is not None:
        log.info("%s: download failed: %r", what, err)
    return ModelLoadError("model.offline", what=what, names=", ".join(offline_names()))


def _download(what: str, work, policy: access.Policy | None):  # -> what work returns
    """A hub download: on a server, one download at a time and within the server's time limit."""
    if policy is None:
        return work()
    try:
        return access.one_download(work, policy.load_timeout_s)
    except access.Busy:
        raise ModelLoadError("model.hub_busy", name=what) from None
    except access.TooSlow:
        raise ModelLoadError("model.hub_slow", name=what, seconds=round(policy.load_timeout_s)) from None


def _need_network(what: str) -> None:
    """Fail fast offline: when the hub does not answer within a few seconds, say so before any
    library is imported or any download waits out its timeouts. With HF_HUB_OFFLINE set, the
    libraries read their cache alone and fail at once without it."""
    if not access.hub_offline_mode() and not access.hub_reachable():
        raise _offline_error(what)


def _check_size(what: str, build, policy: access.Policy | None) -> None:
    """Refuse a hub model larger than the server allows, counted on a model built without memory
    (on the meta device) before anything is downloaded."""
    if policy is None:
        return
    try:
        with torch.device("meta"):
            count = sum(p.numel() for p in build().parameters())
    except Exception as err:  # an architecture that will not build on meta: the download decides
        log.info("%s: size not known before the download: %r", what, err)
        return
    size_mb = count * 4 / 2**20
    if size_mb > policy.max_model_mb:
        raise ModelLoadError("model.hub_too_large", name=what, size=round(size_mb), limit=policy.max_model_mb)


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


def _load_timm(
    model_name: str, checkpoint_file: str | Path | None = None, policy: access.Policy | None = None
) -> VisionTransformer:
    """A timm model with pretrained weights, from the hub or from a local file."""
    what = f"timm:{model_name}"
    if checkpoint_file is None:
        if not re.fullmatch(access.TIMM_NAME, model_name):
            raise ModelLoadError("model.timm_unknown", name=repr(model_name))
        _need_network(what)
    timm = _hub_library("timm", what)

    overlay = {"pretrained_cfg_overlay": {"file": str(checkpoint_file)}} if checkpoint_file else {}
    try:
        if checkpoint_file is None:
            if not timm.is_model(model_name):
                raise ModelLoadError("model.timm_unknown", name=repr(model_name))
            _check_size(what, lambda: timm.create_model(model_name, pretrained=False), policy)
            source = _download(what, lambda: timm.create_model(model_name, pretrained=True), policy)
        else:
            source = timm.create_model(model_name, pretrained=True, **overlay)
    except ModelLoadError:
        raise
    except RuntimeError as err:
        if "Unknown model" in str(err):
            raise ModelLoadError("model.timm_unknown", name=repr(model_name)) from None
        if _is_network_error(err):
            raise _offline_error(what, err) from None
        log.warning("%s: %r", what, err)
        raise ModelLoadError("model.timm_failed", name=repr(model_name)) from None
    except Exception as err:
        if _is_network_error(err):
            raise _offline_error(what, err) from None
        log.warning("%s: %r", what, err)
        raise ModelLoadError("model.timm_failed", name=repr(model_name)) from None
    try:
        return from_timm(source.eval())
    except ValueError as err:
        raise ModelLoadError("model.unsupported", name=f"timm:{model_name}", error=str(err)) from None


def _load_hf(repo_id: str, local: bool = False, policy: access.Policy | None = None) -> VisionTransformer:
    """A Hugging Face ViT (with its classifier when it has one) from the hub, or from a folder
    (``local``: a hub name never reads a folder of the server)."""
    if not local:
        if not access.is_hub_name(f"hf:{repo_id}"):
            raise ModelLoadError("model.hf_failed", name=f"hf:{repo_id}")
        _need_network(f"hf:{repo_id}")
    transformers = _hub_library("transformers", f"hf:{repo_id}")
    AutoConfig, ViTForImageClassification, ViTModel = (
        transformers.AutoConfig,
        transformers.ViTForImageClassification,
        transformers.ViTModel,
    )
    what = str(repo_id) if local else f"hf:{repo_id}"

    def fetch():  # -> the transformers model
        hf_config = AutoConfig.from_pretrained(repo_id)
        if getattr(hf_config, "model_type", None) != "vit":
            raise ModelLoadError("model.not_vit", name=repo_id, kind=repr(hf_config.model_type))
        has_head = any(a.endswith("ForImageClassification") for a in (hf_config.architectures or []))
        cls = ViTForImageClassification if has_head else ViTModel
        if not local:
            _check_size(what, lambda: cls(hf_config), policy)
        return cls.from_pretrained(repo_id, attn_implementation="eager")

    try:
        source = fetch() if local else _download(what, fetch, policy)
    except ModelLoadError:
        raise
    except Exception as err:
        if not local:
            raise _offline_error(what, err) if _is_network_error(err) else _hf_failed(what, err) from None
        raise _hf_failed(what, err) from None
    model = from_hf(source.eval())
    processor = Path(repo_id) / "preprocessor_config.json"
    if local and processor.exists():
        recipe = hf_preprocess(model.config.image_size, model.config.in_chans, json.loads(processor.read_text()))
        model.config = model.config.replace(preprocess=recipe)
    return model


def _hf_failed(what: str, err: BaseException) -> ModelLoadError:
    log.warning("%s: %r", what, err)
    return ModelLoadError("model.hf_failed", name=what)


# How torch.save's files begin: a zip archive (since torch 1.6), or a pickle (protocol 2 or later).
TORCH_MAGIC = (b"PK\x03\x04", b"\x80")


def read_weights(path: Path) -> dict[str, torch.Tensor]:
    """Tensors from a safetensors file or a torch checkpoint, never running code in it.

    Raises:
        ModelLoadError: for a file that is not a checkpoint, or a pickle that holds more than
            tensors (which could run code if loaded unsafely).
    """
    path = Path(path)
    if not stat.S_ISREG(os.stat(path).st_mode):  # a pipe or a device would block or never end
        raise ModelLoadError("model.special", file=path.name)
    if path.suffix == ".safetensors":
        try:
            return load_file(str(path))
        except (SafetensorError, OSError, ValueError) as err:
            log.info("%s: %s", path, err)
            raise ModelLoadError("model.bad_safetensors", file=path.name) from None
    with open(path, "rb") as file:
        start = file.read(4)
    if not start:
        raise ModelLoadError("model.empty", file=path.name)
    if not start.startswith(TORCH_MAGIC):  # text, an image, an archive of another kind
        raise ModelLoadError("model.not_checkpoint", file=path.name)
    try:
        state = torch.load(path, map_location="cpu", weights_only=True)
    except Exception as err:
        log.info("%s: %r", path, err)
        if "weights_only" in str(err) or "Unsupported" in str(err):
            raise ModelLoadError("model.pickle_refused", file=path.name) from None
        raise ModelLoadError("model.not_checkpoint", file=path.name) from None
    if isinstance(state, dict):
        state = unwrap_state_dict(state)
    if not isinstance(state, dict) or not all(isinstance(v, torch.Tensor) for v in state.values()):
        raise ModelLoadError("model.no_state_dict", file=path.name)
    return state


def _json_beside(path: Path, policy: access.Policy | None = None) -> dict[str, Any] | None:
    candidate = access.companion(path.with_suffix(".json"), policy)
    return _read_json(candidate.read_bytes(), candidate.name) if candidate else None


def _read_json(data: bytes, file_name: str) -> dict[str, Any]:
    if _nesting(data) > MAX_JSON_NESTING:  # json.loads would recurse once a level, 100,000 deep
        raise ModelLoadError("model.bad_json", file=file_name)
    try:
        meta = json.loads(data)
    except (UnicodeDecodeError, ValueError, RecursionError):
        raise ModelLoadError("model.bad_json", file=file_name) from None
    if not isinstance(meta, dict):
        raise ModelLoadError("model.bad_json", file=file_name)
    return meta


MAX_JSON_NESTING = 32  # a card nests 4 deep (stages, recipe, augmentation)


def _nesting(data: bytes) -> int:
    """How deep a json text's brackets nest (counted without parsing it; brackets inside strings
    count too, which only makes the bound stricter)."""
    depth = deepest = 0
    for byte in data:
        if byte in b"[{":
            depth += 1
            deepest = max(deepest, depth)
        elif byte in b"]}":
            depth -= 1
    return deepest


def load_path(path: Path, policy: access.Policy | None = None) -> tuple[VisionTransformer, ModelSpec]:
    """A model from a local file or folder (see the module docstring for what is accepted); with
    a policy, the files read beside it (its json, a config.json) must be in the model folders too.

    Raises:
        ModelLoadError: with the sentence for a missing name when the path does not exist.
    """
    path = Path(path)
    if not path.exists():
        raise (
            unknown_error(str(path), policy)
            if policy
            else ModelLoadError("model.unknown", name=repr(str(path)), names=", ".join(REGISTRY))
        )
    if path.is_dir():
        if access.companion(path / "config.json", policy):
            model = _load_hf(str(path), local=True, policy=policy)
            return model, ModelSpec(
                str(path), path.name, "path", model.config, True, True, f"Hugging Face folder {path.name}.", path=path
            )
        raise ModelLoadError("model.folder_without_config", file=str(path))
    state = read_weights(path)
    hf_config = access.companion(path.parent / "config.json", policy)
    model, card = _build(state, _json_beside(path, policy), path.name, hf_config.parent if hf_config else None, policy)
    spec = ModelSpec(
        str(path), path.stem, "path", model.config, True, True, f"Local checkpoint {path.name}.", card=card, path=path
    )
    return model, spec


def _build(
    state: dict[str, torch.Tensor],
    meta: dict[str, Any] | None,
    file_name: str,
    hf_folder: Path | None,
    policy: access.Policy | None = None,
) -> tuple[VisionTransformer, ModelCard]:
    """A model from a state dict: built from its json config when there is one, else read as a
    Hugging Face checkpoint (with the config.json of ``hf_folder``) or a timm one. With a policy
    the config is costed first (``vitviz.models.budget``), and nothing is built over its limits."""
    _check_finite(state, file_name)
    try:
        card = ModelCard.from_dict(meta) if meta and "config" in meta else ModelCard()
        if meta is not None and ("config" in meta or "patch_size" in meta):
            config = config_from_dict(meta.get("config", meta))
            _check_budget(config, policy, file_name)
            model = build_model(config)
            load_state_dict_strict(model, state)
        elif any(k.startswith(("vit.", "embeddings.")) for k in state):
            if hf_folder is None:
                raise ModelLoadError("model.hf_needs_config", file=file_name)
            from transformers import ViTConfig as HFViTConfig

            model = from_hf(state, config=HFViTConfig.from_pretrained(str(hf_folder)))
        else:
            num_heads = meta.get("num_heads") if meta else None
            if num_heads is None and "patch_embed.proj.weight" in state:
                raise ModelLoadError("model.needs_heads", file=file_name)
            config = timm_config_from_shapes(state, num_heads) if "patch_embed.proj.weight" in state else None
            if config is not None:
                _check_budget(config, policy, file_name)
            model = from_timm(state, config=config, num_heads=num_heads)
    except CheckpointError as err:
        raise ModelLoadError("model.mismatch", file=file_name, error=str(err)) from None
    except (ValueError, TypeError, KeyError, AttributeError, OverflowError) as err:
        log.info("%s: %r", file_name, err)
        raise ModelLoadError("model.load_failed", file=file_name, error=str(err)) from None
    return model, card


def _check_budget(config: ModelConfig, policy: access.Policy | None, file_name: str) -> None:
    """Refuse a config whose model costs more than the server allows (no policy: no limits)."""
    if policy is None:
        return
    limits = budget.Limits(model_mb=policy.max_model_mb, image_mb=policy.max_image_mb, gflop=policy.max_gflop)
    try:
        budget.check(config, limits)
    except budget.OverBudget as err:
        raise ModelLoadError(err.key, file=file_name, **err.values) from None


def _check_finite(state: dict[str, torch.Tensor], file_name: str) -> None:
    """Refuse weights that hold NaN or infinity: every answer of such a model is NaN."""
    broken = [key for key, value in state.items() if value.is_floating_point() and not torch.isfinite(value).all()]
    if broken:
        raise ModelLoadError("model.not_finite", file=file_name, count=len(broken), first=broken[0])


def load_upload(
    files: dict[str, bytes], policy: access.Policy, device: str | torch.device | None = None
) -> tuple[str, Loaded]:
    """A visitor's own checkpoint, read in memory and never written anywhere: one ``.safetensors``
    file, and optionally the ``.json`` that ``save`` writes beside it (its config and card).

    Args:
        files: file name -> bytes, as uploaded.
        policy: the server's rules: the size of an upload, and what its model may cost (``vitviz.models.budget``).

    Returns:
        The model's name (``upload_name``) and the loaded model.

    Raises:
        ModelLoadError: a sentence saying what to upload instead.
    """
    name = upload_name(files)
    file_name = next(name for name in files if name.lower().endswith(".safetensors"))
    configs = [name for name in files if name.lower().endswith(".json")]
    data = files[file_name]
    if len(data) > policy.max_upload_mb * 2**20:
        raise ModelLoadError("model.upload_too_large", file=file_name, limit=policy.max_upload_mb)
    try:
        state = load_bytes(data)
    except (SafetensorError, ValueError, OSError) as err:
        log.info("upload %s: %s", file_name, err)
        raise ModelLoadError("model.bad_safetensors", file=file_name) from None
    meta = _read_json(files[configs[0]], configs[0]) if configs else None
    model, card = _build(state, meta, file_name, None, policy)
    spec = ModelSpec(
        name, Path(file_name).stem, "upload", model.config, True, True, f"Uploaded {file_name}.", card=card
    )
    return name, Loaded(model.to(pick_device(device)).eval(), spec)


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


def one_view_accuracy_of(record: dict[str, Any]) -> float | None:
    """A model recorded by name and weights hash (a card's teacher), on one view: the registry's
    card of those weights says it (a teacher's own record keeps the accuracy it answered with,
    which for a CNN that averages its mirror is two views); None for weights not in the registry."""
    spec = REGISTRY.get(str(record.get("name")))
    if spec is None or spec.card.evaluated.get("weights_sha256") != record.get("weights_sha256"):
        return None
    return spec.card.one_view_accuracy


def compared_accuracies(first: ModelCard, second: ModelCard) -> tuple[float, float] | None:
    """Two models' test accuracies on one protocol, one view each, where both cards record it on
    the same test split (the same images: its fingerprint); else None."""
    same = first.tested_on.get("fingerprint") and first.tested_on.get("fingerprint") == second.tested_on.get(
        "fingerprint"
    )
    if not same or first.one_view_accuracy is None or second.one_view_accuracy is None:
        return None
    return first.one_view_accuracy, second.one_view_accuracy
