"""State-dict maps from timm and Hugging Face checkpoints to vitviz's VisionTransformer.

Our parameter names are timm's, so a timm checkpoint loads with no renaming at all: the work
is to read the architecture off the model (or off the tensor shapes) and to refuse, with a
sentence, the timm options our model does not implement. A Hugging Face ViT names everything
differently and keeps separate query, key and value projections; ``_hf_to_ours`` renames the
tensors and concatenates q, k and v into the one fused ``attn.qkv``.

Every route ends in ``load_state_dict_strict``, which lists every missing, unexpected and
mis-shaped key before anything is loaded.
"""

from __future__ import annotations

import dataclasses
import functools
import logging
import math
import re
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import torch
from torch import Tensor, nn

from vitviz.models.config import (
    HALF,
    IMAGENET_MEAN,
    IMAGENET_STD,
    INTERPOLATIONS,
    STAGE_CHANNELS,
    Preprocess,
    ViTConfig,
    resnet_stride,
    size_pair,
)
from vitviz.models.model import VisionTransformer, resample_pos_embed
from vitviz.models.resnet import CONV_EPS, GROUPS, build_backbone

if TYPE_CHECKING:
    from transformers import PretrainedConfig

log = logging.getLogger(__name__)

MAX_LISTED = 10  # keys shown per kind of problem in a CheckpointError
TIMM_CROP_PCT = 0.875  # timm's DEFAULT_CROP_PCT when a model has no pretrained_cfg

Size = int | tuple[int, int]


class CheckpointError(ValueError):
    """A state dict does not fit the model; the message lists every key that is wrong."""


def _listing(title: str, items: list[str]) -> str:
    shown = ", ".join(items[:MAX_LISTED])
    more = f", ... and {len(items) - MAX_LISTED} more" if len(items) > MAX_LISTED else ""
    return f"{title} ({len(items)}): {shown}{more}"


def load_state_dict_strict(model: nn.Module, state_dict: Mapping[str, Tensor]) -> None:
    """Load ``state_dict`` into ``model`` only if every key and every shape matches.

    Non-persistent buffers (the fixed sine-cosine position table) are not part of
    ``model.state_dict()`` and so are neither expected nor allowed in the checkpoint.

    Raises:
        CheckpointError: naming every missing, unexpected and mis-shaped key (the first
            MAX_LISTED of each, then a count), before anything is loaded.
    """
    expected = model.state_dict()
    missing = [key for key in expected if key not in state_dict]
    unexpected = [key for key in state_dict if key not in expected]
    misshaped = []
    for key, target in expected.items():
        if key in state_dict:
            shape = getattr(state_dict[key], "shape", None)
            if shape is None or tuple(shape) != tuple(target.shape):
                found = "not a tensor" if shape is None else tuple(shape)
                misshaped.append(f"{key} (checkpoint {found}, model {tuple(target.shape)})")
    if missing or unexpected or misshaped:
        lines = ["The checkpoint does not fit the model."]
        if missing:
            lines.append(_listing("Missing from the checkpoint", missing))
        if unexpected:
            lines.append(_listing("Not in the model", unexpected))
        if misshaped:
            lines.append(_listing("Wrong shape", misshaped))
        raise CheckpointError("\n".join(lines))
    model.load_state_dict(dict(state_dict), strict=True)


def unwrap_state_dict(checkpoint: Mapping[str, Any]) -> dict[str, Any]:
    """The bare state dict inside what people save: {"model": ...}, {"state_dict": ...},
    {"model_state_dict": ...}, {"model_ema": ...}, or a DistributedDataParallel state dict
    whose every key starts with "module."."""
    for entry in ("model", "state_dict", "model_state_dict", "model_ema"):
        inner = checkpoint.get(entry)
        if isinstance(inner, Mapping):
            checkpoint = inner
            break
    state = dict(checkpoint)
    if state and all(isinstance(key, str) and key.startswith("module.") for key in state):
        state = {key[len("module.") :]: value for key, value in state.items()}
    return state


def _mlp_ratio(hidden: int, embed_dim: int) -> float:
    ratio = hidden / embed_dim
    if int(embed_dim * ratio) != hidden:
        raise ValueError(f"An MLP width of {hidden} for {embed_dim} channels is not a usable mlp_ratio.")
    return ratio


def _channels(values: Any, in_chans: int) -> tuple[float, ...]:
    """Per-channel mean or std for ``in_chans`` channels (averaged for grey, repeated for RGB)."""
    values = tuple(float(v) for v in values)
    if len(values) == in_chans:
        return values
    if in_chans == 1:
        return (sum(values) / len(values),)
    if len(values) == 1:
        return values * in_chans
    raise ValueError(f"{len(values)} normalisation values do not fit {in_chans} channels.")


@functools.lru_cache(maxsize=1)
def _imagenet_class_names() -> tuple[str, ...]:
    """The 1000 ImageNet-1k class descriptions that timm ships (no download)."""
    from timm.data import ImageNetInfo

    return tuple(ImageNetInfo("imagenet-1k").label_descriptions())


def _timm_class_names(num_classes: int) -> tuple[str, ...]:
    return _imagenet_class_names() if num_classes == 1000 else ()


def _resized_preprocess(pre: Preprocess, old: tuple[int, int], new: tuple[int, int]) -> Preprocess:
    """Move a preprocessing recipe that ends at ``old`` to one that ends at ``new``, keeping
    the ratio of resize to crop."""
    if pre.crop is None:  # an exact resize to the input size
        return dataclasses.replace(pre, resize=new)
    if isinstance(pre.resize, int):
        resize: Size = round(pre.resize * max(new) / max(old))
    else:
        resize = (round(pre.resize[0] * new[0] / old[0]), round(pre.resize[1] * new[1] / old[1]))
    return dataclasses.replace(pre, resize=resize, crop=new)


def _build(
    config: ViTConfig,
    state_dict: dict[str, Tensor],
    image_size: Size | None,
    preprocess: Preprocess | None = None,
) -> VisionTransformer:
    """Build our model for ``config`` at ``image_size``, resample pos_embed if the grid
    changes, and load the state dict strictly. The model is returned in eval mode.

    ``preprocess`` is the recipe at the new size; by default the old one is moved there.
    """
    if image_size is not None and size_pair(image_size) != config.image_size:
        new_size = size_pair(image_size)
        new_config = config.replace(
            image_size=new_size,
            preprocess=preprocess or _resized_preprocess(config.preprocess, config.image_size, new_size),
        )
        if config.pos_embed == "learn" and "pos_embed" in state_dict:
            log.info("Resampling pos_embed from grid %s to %s.", config.grid_size, new_config.grid_size)
            state_dict = dict(state_dict)
            state_dict["pos_embed"] = resample_pos_embed(
                state_dict["pos_embed"], config.grid_size, new_config.grid_size, config.num_prefix_tokens
            )
        config = new_config
    model = VisionTransformer(config)
    load_state_dict_strict(model, state_dict)
    return model.eval()


def _unsupported(source: str, features: list[str]) -> ValueError:
    features = list(dict.fromkeys(features))  # unique, in order
    return ValueError(
        f"This {source} model uses {'; '.join(features)}, which vitviz's VisionTransformer does "
        "not implement: choose a plain ViT checkpoint (for example vit_base_patch16_224) "
        "or one of timm's ResNet hybrids (for example vit_small_r26_s32_224)."
    )


# ---------------------------------------------------------------------------------------------
# timm


def _is_identity(module: nn.Module | None) -> bool:
    return module is None or isinstance(module, nn.Identity)


# The timm options our model lacks, in the words the error messages use.
_FEATURE = {
    "reg_tokens": "register tokens",
    "dist_token": "a distillation token",
    "no_embed_class": "position embeddings that skip the class token (no_embed_class)",
    "no_pos_embed": "no learned position embeddings",
    "dynamic": "a dynamic image size (dynamic_img_size / dynamic_img_pad)",
    "pre_norm": "a LayerNorm before the blocks (pre_norm)",
    "attn_pool": "attention pooling",
    "pool_prefix": "average pooling over the class token too",
    "no_final_norm": "no final LayerNorm (final_norm=False)",
    "embed_bias": "a patch embedding without bias",
    "embed_norm": "a LayerNorm inside the patch embedding",
    "layer_scale": "LayerScale (init_values)",
    "qk_norm": "query/key normalisation (qk_norm)",
    "attn_norm": "a norm on the attention output (scale_attn_norm)",
    "mlp_norm": "a norm inside the MLP (scale_mlp_norm)",
    "gated_mlp": "a gated MLP (GLU / SwiGLU)",
}


def _timm_model_features(model: nn.Module) -> list[str]:
    """What a timm VisionTransformer does, outside its blocks, that our model does not."""
    from timm.layers import HybridEmbed, PatchEmbed

    embed, pool = model.patch_embed, model.global_pool
    checks = {
        "reg_tokens": getattr(model, "num_reg_tokens", 0) > 0 or getattr(model, "reg_token", None) is not None,
        "dist_token": getattr(model, "dist_token", None) is not None,
        "no_embed_class": bool(getattr(model, "no_embed_class", False)),
        "no_pos_embed": getattr(model, "pos_embed", None) is None,
        "dynamic": bool(getattr(model, "dynamic_img_size", False) or getattr(embed, "dynamic_img_pad", False)),
        "pre_norm": not _is_identity(getattr(model, "norm_pre", None)),
        "attn_pool": getattr(model, "attn_pool", None) is not None,
        "pool_prefix": pool == "avg" and bool(getattr(model, "pool_include_prefix", False)),
        "no_final_norm": _is_identity(model.norm) and _is_identity(model.fc_norm),
    }
    found = [_FEATURE[name] for name, present in checks.items() if present]
    if pool not in ("token", "avg") and not checks["attn_pool"]:
        found.append(f'global pooling {pool!r} (vitviz knows "token" and "avg")')
    if type(embed) is HybridEmbed:
        found += _timm_hybrid_features(embed)
    elif type(embed) is not PatchEmbed:
        found.append(f"the patch embedding {type(embed).__name__} (vitviz has one strided Conv2d or a ResNet stem)")
    else:
        found += [_FEATURE["embed_norm"]] if not _is_identity(embed.norm) else []
    if isinstance(getattr(embed, "proj", None), nn.Conv2d):
        found += [_FEATURE["embed_bias"]] if embed.proj.bias is None else []
        found += ["non-square patches"] if embed.proj.kernel_size[0] != embed.proj.kernel_size[1] else []
    elif type(embed) is HybridEmbed:
        found.append("a hybrid embedding without its projection (proj=False)")
    return found


def _timm_hybrid_layers(backbone: nn.Module) -> tuple[int, ...] | None:
    """Blocks per stage of a timm hybrid's ResNetV2, () for its stem alone, None for anything else."""
    from timm.models.resnetv2 import ResNetV2

    if isinstance(backbone, ResNetV2):
        return tuple(len(stage.blocks) for stage in backbone.stages)
    if type(backbone) is nn.Sequential and "conv" in dict(backbone.named_children()):
        return ()
    return None


def _timm_hybrid_features(embed: nn.Module) -> list[str]:
    """What a timm HybridEmbed's CNN does that vitviz.models.resnet does not: its ResNet must be the
    one of timm's ``vit_*_r26_s32`` / ``r50_s16`` / ``r_s16_p8`` hybrids."""
    from timm.layers import GroupNormAct, StdConv2dSame
    from timm.layers.pool2d_same import MaxPool2dSame
    from timm.models.resnetv2 import Bottleneck

    backbone = embed.backbone
    layers = _timm_hybrid_layers(backbone)
    if layers is None or len(layers) > len(STAGE_CHANNELS):
        return [f"the CNN backbone {type(backbone).__name__} (vitviz has the ResNet-V2 of timm's hybrid ViTs)"]
    in_chans = int(embed.in_chans)
    ours = build_backbone(in_chans, layers).state_dict()
    theirs = backbone.state_dict()
    if {k: tuple(v.shape) for k, v in ours.items()} != {k: tuple(v.shape) for k, v in theirs.items()}:
        return ["a ResNet backbone of other widths or layout than timm's hybrid ViTs"]
    found = []
    modules = list(backbone.modules())
    convs = [m for m in modules if isinstance(m, nn.Conv2d)]
    if any(type(m) is not StdConv2dSame or abs(m.eps - CONV_EPS) > 1e-12 or m.dilation != (1, 1) for m in convs):
        found.append("backbone convolutions other than weight-standardised SAME-padded ones (eps 1e-8)")
    norms = [m for m in modules if isinstance(m, nn.GroupNorm)]
    if any(type(m) is not GroupNormAct or m.num_groups != GROUPS or m.eps != 1e-5 for m in norms):
        found.append("backbone norms other than GroupNorm(32 groups, eps 1e-5)")
    if any(type(m.act) is not nn.ReLU and not _is_identity(m.act) for m in norms):
        found.append("a backbone activation other than ReLU")
    if any(type(m).__name__.startswith("PreAct") for m in modules) or any(
        not isinstance(block, Bottleneck) for stage in getattr(backbone, "stages", []) for block in stage.blocks
    ):
        found.append("pre-activation ResNet blocks")
    pools = [m for m in modules if isinstance(m, nn.MaxPool2d)]
    if len(pools) != 1 or type(pools[0]) is not MaxPool2dSame:
        found.append("a ResNet stem without SAME max pooling")
    if tuple(embed.feature_ratio) != (resnet_stride(layers),) * 2:
        found.append(f"a ResNet of output stride {tuple(embed.feature_ratio)} (dilated stages)")
    if getattr(embed, "dynamic_img_pad", False):
        found.append(_FEATURE["dynamic"])
    return found


def _timm_block_features(block: nn.Module) -> list[str]:
    """What one timm block does that our pre-norm Block (attention, Linear-GELU-Linear) does not."""
    from timm.layers import Attention, Mlp
    from timm.layers.activations import GELU
    from timm.models.vision_transformer import Block

    if type(block) is not Block:
        return [f"the block type {type(block).__name__} (vitviz has the pre-norm Block)"]
    attn, mlp, found = block.attn, block.mlp, []
    if not _is_identity(block.ls1) or not _is_identity(block.ls2):
        found.append(_FEATURE["layer_scale"])
    if type(attn) is not Attention:
        found.append(f"the attention type {type(attn).__name__}")
    else:
        attn_dim = attn.num_heads * attn.head_dim  # older timm versions lack some of these attributes
        checks = {
            _FEATURE["qk_norm"]: not _is_identity(getattr(attn, "q_norm", None))
            or not _is_identity(getattr(attn, "k_norm", None)),
            _FEATURE["attn_norm"]: not _is_identity(getattr(attn, "norm", None)),
            "gated attention": getattr(attn, "gate", None) is not None,
            "a head width other than embed_dim / num_heads": attn_dim != attn.proj.out_features,
            "an attention projection without bias": attn.proj.bias is None,
        }
        found += [feature for feature, present in checks.items() if present]
    if type(mlp) is not Mlp:
        found.append(f"the MLP variant {type(mlp).__name__} (vitviz has Linear-GELU-Linear)")
    else:
        act = mlp.act
        exact_gelu = type(act) is GELU or (type(act) is nn.GELU and act.approximate == "none")
        checks = {
            f"the activation {type(act).__name__} (vitviz uses exact GELU)": not exact_gelu,
            _FEATURE["mlp_norm"]: not _is_identity(getattr(mlp, "norm", None)),
            "a convolutional MLP": not isinstance(mlp.fc1, nn.Linear),
            "an MLP without bias": mlp.fc1.bias is None or mlp.fc2.bias is None,
        }
        found += [feature for feature, present in checks.items() if present]
    return found


def _timm_module_features(model: nn.Module) -> list[str]:
    """Names of the features of a timm VisionTransformer that our model lacks."""
    found = _timm_model_features(model)
    for block in model.blocks:
        found += _timm_block_features(block)
    if len({block.attn.num_heads for block in model.blocks if hasattr(block.attn, "num_heads")}) > 1:
        found.append("a different number of heads in different blocks")
    norms = [model.norm, model.fc_norm] + [n for block in model.blocks for n in (block.norm1, block.norm2)]
    norms = [norm for norm in norms if not _is_identity(norm)]
    for norm in norms:
        if not isinstance(norm, nn.LayerNorm) or norm.weight is None or norm.bias is None:
            found.append(f"the normalisation {type(norm).__name__} (vitviz uses LayerNorm with bias)")
    if len({getattr(norm, "eps", None) for norm in norms}) > 1:
        found.append("LayerNorms with different eps")
    return found


def _timm_preprocess(pretrained_cfg: Mapping[str, Any] | None, size: tuple[int, int], in_chans: int) -> Preprocess:
    """timm's eval transform for a ``size`` input: resize to floor(size / crop_pct), centre crop.

    For a non-square size the shorter side is resized to floor(max(height, width) / crop_pct)
    so that the crop always fits (timm's ResizeKeepRatio differs slightly there).
    """
    cfg = dict(pretrained_cfg or {})
    crop_pct = float(cfg.get("crop_pct") or TIMM_CROP_PCT)
    interpolation = cfg.get("interpolation") or "bicubic"
    if interpolation not in INTERPOLATIONS:
        log.warning("timm interpolation %r is not supported; using bicubic.", interpolation)
        interpolation = "bicubic"
    height, width = size
    if cfg.get("crop_mode") == "squash":
        resize: Size = (math.floor(height / crop_pct), math.floor(width / crop_pct))
    else:
        resize = math.floor(max(height, width) / crop_pct)
    return Preprocess(
        resize=resize,
        crop=size,
        interpolation=interpolation,
        mean=_channels(cfg.get("mean", IMAGENET_MEAN), in_chans),
        std=_channels(cfg.get("std", IMAGENET_STD), in_chans),
    )


def _timm_config(model: nn.Module) -> ViTConfig:
    """Our config for a timm VisionTransformer already checked by _timm_module_features."""
    if not len(model.blocks):
        raise ValueError("The timm model has no encoder blocks, so there is nothing to convert.")
    embed = model.patch_embed
    embed_dim, in_chans, patch_size, _ = embed.proj.weight.shape  # (D, C, P, P); C' for a hybrid
    hybrid_layers = _timm_hybrid_layers(embed.backbone) if hasattr(embed, "backbone") else None
    if hybrid_layers is not None:
        in_chans = int(embed.in_chans)
    image_size = size_pair(embed.img_size)
    first = model.blocks[0]
    fc_norm = not _is_identity(model.fc_norm)
    num_classes = model.head.out_features if isinstance(model.head, nn.Linear) else 0
    return ViTConfig(
        image_size=image_size,
        patch_size=patch_size,
        in_chans=in_chans,
        num_classes=num_classes,
        embed_dim=embed_dim,
        depth=len(model.blocks),
        num_heads=first.attn.num_heads,
        mlp_ratio=_mlp_ratio(first.mlp.fc1.out_features, embed_dim),
        qkv_bias=first.attn.qkv.bias is not None,
        class_token=model.cls_token is not None,
        global_pool=model.global_pool,
        fc_norm=fc_norm,
        layer_norm_eps=(model.fc_norm if fc_norm else model.norm).eps,
        preprocess=_timm_preprocess(getattr(model, "pretrained_cfg", None), image_size, in_chans),
        class_names=_timm_class_names(num_classes),
        hybrid_layers=hybrid_layers,
    )


def _timm_key_features(state_dict: Mapping[str, Tensor]) -> list[str]:
    """Names of features our model lacks, read off the keys and shapes of a timm state dict."""
    markers = {
        "reg_token": "reg_tokens",
        "dist_token": "dist_token",
        ".ls1.": "layer_scale",
        ".ls2.": "layer_scale",
        ".attn.q_norm.": "qk_norm",
        ".attn.k_norm.": "qk_norm",
        ".attn.norm.": "attn_norm",
        ".mlp.norm.": "mlp_norm",
        ".mlp.fc1_g.": "gated_mlp",
        "norm_pre.": "pre_norm",
        "attn_pool.": "attn_pool",
        "patch_embed.norm.": "embed_norm",
    }
    found = [_FEATURE[name] for marker, name in markers.items() if any(marker in key for key in state_dict)]
    fc1, fc2 = state_dict.get("blocks.0.mlp.fc1.weight"), state_dict.get("blocks.0.mlp.fc2.weight")
    checks = {
        "no_pos_embed": "pos_embed" not in state_dict,
        "embed_bias": "patch_embed.proj.weight" in state_dict and "patch_embed.proj.bias" not in state_dict,
        "no_final_norm": "norm.weight" not in state_dict and "fc_norm.weight" not in state_dict,
        "gated_mlp": fc1 is not None and fc2 is not None and fc1.shape[0] != fc2.shape[1],
    }
    return found + [_FEATURE[name] for name, present in checks.items() if present]


def timm_config_from_shapes(state_dict: Mapping[str, Tensor], num_heads: int | None) -> ViTConfig:
    """Our config read off the tensor shapes of a timm ViT state dict, plus ``num_heads``."""
    if "patch_embed.proj.weight" not in state_dict:
        raise ValueError("This is not a timm ViT state dict: it has no patch_embed.proj.weight.")
    embed_dim, in_chans, patch_size, _ = state_dict["patch_embed.proj.weight"].shape  # (D, C, P, P)
    hybrid_layers = _hybrid_layers_from_keys(state_dict)
    stride = 1
    if hybrid_layers is not None:
        stem = "patch_embed.backbone.stem.conv.weight" if hybrid_layers else "patch_embed.backbone.conv.weight"
        in_chans = state_dict[stem].shape[1]  # (64, C, 7, 7)
        stride = resnet_stride(hybrid_layers)
    class_token = "cls_token" in state_dict
    num_positions = state_dict["pos_embed"].shape[1] - int(class_token)  # (1, T, D) -> N
    side = math.isqrt(num_positions)
    if side * side != num_positions:
        raise ValueError(
            f"The checkpoint's pos_embed holds {num_positions} patch positions, not a square grid: "
            "pass config= with the image size it was trained for."
        )
    if num_heads is None:
        raise ValueError(
            "A state dict does not say how many attention heads the model has: pass num_heads= (or a full config=)."
        )
    depth = len({key.split(".")[1] for key in state_dict if key.startswith("blocks.")})
    fc_norm = "fc_norm.weight" in state_dict
    num_classes = state_dict["head.weight"].shape[0] if "head.weight" in state_dict else 0
    global_pool = "avg" if fc_norm or not class_token else "token"
    log.info("Assuming global_pool=%r, layer_norm_eps=1e-6 and timm's default preprocessing.", global_pool)
    image_size = side * patch_size * stride
    return ViTConfig(
        image_size=image_size,
        patch_size=patch_size,
        in_chans=in_chans,
        num_classes=num_classes,
        embed_dim=embed_dim,
        depth=depth,
        num_heads=num_heads,
        mlp_ratio=_mlp_ratio(state_dict["blocks.0.mlp.fc1.weight"].shape[0], embed_dim) if depth else 4.0,
        qkv_bias="blocks.0.attn.qkv.bias" in state_dict,
        class_token=class_token,
        global_pool=global_pool,
        fc_norm=fc_norm,
        layer_norm_eps=1e-6,
        preprocess=_timm_preprocess(None, (image_size, image_size), in_chans),
        class_names=_timm_class_names(num_classes),
        hybrid_layers=hybrid_layers,
    )


def _hybrid_layers_from_keys(state_dict: Mapping[str, Tensor]) -> tuple[int, ...] | None:
    """Blocks per ResNet stage of a timm hybrid ViT's state dict ("patch_embed.backbone.stages.
    {s}.blocks.{b}..."), () for the stem alone, None for a plain ViT."""
    keys = [key for key in state_dict if key.startswith("patch_embed.backbone.")]
    if not keys:
        return None
    blocks: dict[int, set[int]] = {}
    for key in keys:
        match = re.match(r"patch_embed\.backbone\.stages\.(\d+)\.blocks\.(\d+)\.", key)
        if match:
            blocks.setdefault(int(match[1]), set()).add(int(match[2]))
    return tuple(len(blocks[stage]) for stage in sorted(blocks))


def from_timm(
    model_or_state_dict: nn.Module | Mapping[str, Any],
    config: ViTConfig | None = None,
    image_size: Size | None = None,
    num_heads: int | None = None,
) -> VisionTransformer:
    """Our VisionTransformer with the weights of a timm ViT (same parameter names, no renaming).

    Args:
        model_or_state_dict: a timm VisionTransformer, or its state dict (bare, or under a
            "model" / "state_dict" entry).
        config: the config to build. Derived from the timm model when None; for a state dict
            it is read off the tensor shapes, which needs ``num_heads``.
        image_size: build the model for this input size instead of the checkpoint's; learned
            position embeddings are resampled bicubically on the 2D grid.
        num_heads: attention heads, needed for a state dict given without ``config``
            (elsewhere it is only checked against the model).

    Returns:
        The converted model, in eval mode.

    Raises:
        ValueError: the checkpoint uses a feature vitviz lacks, or its shapes leave the
            architecture open; the message names it.
        CheckpointError: keys or shapes do not fit the config.
    """
    derived = config is None
    if isinstance(model_or_state_dict, nn.Module):
        source = model_or_state_dict
        from timm.models.vision_transformer import VisionTransformer as TimmVisionTransformer

        if not isinstance(source, TimmVisionTransformer):
            name = type(source).__name__
            raise ValueError(f"from_timm converts timm VisionTransformer models, not {name}.")
        features = _timm_module_features(source)
        if features:
            raise _unsupported("timm", features)
        pretrained_cfg = getattr(source, "pretrained_cfg", None)
        if config is None:
            config = _timm_config(source)
        state_dict = source.state_dict()
    else:
        state_dict = unwrap_state_dict(model_or_state_dict)
        features = _timm_key_features(state_dict)
        if features:
            raise _unsupported("timm", features)
        pretrained_cfg = None
        if config is None:
            config = timm_config_from_shapes(state_dict, num_heads)
        pos_embed = state_dict.get("pos_embed")
        if config.class_token and pos_embed is not None and pos_embed.shape[1] == config.num_patches:
            raise _unsupported("timm", [_FEATURE["no_embed_class"]])
    if num_heads is not None and num_heads != config.num_heads:
        raise ValueError(f"num_heads={num_heads} contradicts the model's {config.num_heads} heads.")
    preprocess = None
    if image_size is not None and derived:
        preprocess = _timm_preprocess(pretrained_cfg, size_pair(image_size), config.in_chans)
    return _build(config, state_dict, image_size, preprocess)


# ---------------------------------------------------------------------------------------------
# Hugging Face

# Per-block names, after "encoder.layer.{i}." (checkpoints) or "layers.{i}." (transformers >= 5).
_HF_BLOCK = {
    "layernorm_before": "norm1",
    "attention.output.dense": "attn.proj",
    "attention.o_proj": "attn.proj",
    "layernorm_after": "norm2",
    "intermediate.dense": "mlp.fc1",
    "output.dense": "mlp.fc2",
    "mlp.fc1": "mlp.fc1",
    "mlp.fc2": "mlp.fc2",
}
_HF_QKV = {
    "attention.attention.query": "q",
    "attention.attention.key": "k",
    "attention.attention.value": "v",
    "attention.q_proj": "q",
    "attention.k_proj": "k",
    "attention.v_proj": "v",
}
_HF_TOP = {
    "embeddings.cls_token": "cls_token",
    "embeddings.position_embeddings": "pos_embed",
    "embeddings.patch_embeddings.projection.weight": "patch_embed.proj.weight",
    "embeddings.patch_embeddings.projection.bias": "patch_embed.proj.bias",
    "layernorm.weight": "norm.weight",
    "layernorm.bias": "norm.bias",
    "classifier.weight": "head.weight",
    "classifier.bias": "head.bias",
}
_HF_LAYER = re.compile(r"^(?:encoder\.layer|layers)\.(\d+)\.(.+)\.(weight|bias)$")


def _hf_to_ours(state_dict: Mapping[str, Tensor]) -> dict[str, Tensor]:
    """Rename a Hugging Face ViT state dict to our names; q, k, v become one qkv.

    The pooler is skipped (it is not on the classification path); keys this map does not
    know are passed through unchanged, so that strict loading names them.
    """
    ours: dict[str, Tensor] = {}
    qkv: dict[tuple[str, str], dict[str, Tensor]] = {}
    for key, value in state_dict.items():
        key = key.removeprefix("vit.")
        if key.startswith("pooler."):
            log.info("Skipping %s: the pooler is not part of the classification path.", key)
            continue
        match = _HF_LAYER.match(key)
        if key in _HF_TOP:
            ours[_HF_TOP[key]] = value
        elif match and match[2] in _HF_QKV:
            qkv.setdefault((match[1], match[3]), {})[_HF_QKV[match[2]]] = value
        elif match and match[2] in _HF_BLOCK:
            ours[f"blocks.{match[1]}.{_HF_BLOCK[match[2]]}.{match[3]}"] = value
        else:
            ours[key] = value
    for (index, kind), parts in qkv.items():
        missing = [name for name in "qkv" if name not in parts]
        if missing:
            raise CheckpointError(f"Block {index} lacks the {'/'.join(missing)} {kind} of its attention.")
        fused = torch.cat([parts["q"], parts["k"], parts["v"]], dim=0)  # (3*D, D) or (3*D,)
        ours[f"blocks.{index}.attn.qkv.{kind}"] = fused
    return ours


def _hf_class_names(id2label: Mapping[Any, str] | None, num_classes: int) -> tuple[str, ...]:
    """id2label as a tuple, unless it is missing, incomplete or the LABEL_0 placeholders."""
    labels = {int(index): name for index, name in (id2label or {}).items()}
    if not num_classes or sorted(labels) != list(range(num_classes)):
        return ()
    names = tuple(labels[index] for index in range(num_classes))
    if all(re.fullmatch(r"LABEL_\d+", name) for name in names):
        return ()
    return names


def hf_preprocess(size: tuple[int, int], in_chans: int, processor: Mapping[str, Any] | None = None) -> Preprocess:
    """ViTImageProcessor's recipe: resize to exactly ``size``, bilinear, mean and std 0.5, unless
    ``processor`` (a preprocessor_config.json) says otherwise."""
    processor = processor or {}
    wanted = processor.get("size", {})
    if isinstance(wanted, dict):
        size = (wanted.get("height", size[0]), wanted.get("width", size[1]))
    elif wanted:
        size = size_pair(wanted)
    resample = {0: "nearest", 2: "bilinear", 3: "bicubic"}.get(processor.get("resample", 2), "bilinear")
    return Preprocess(
        resize=size,
        crop=None,
        interpolation=resample,
        mean=_channels(processor.get("image_mean", HALF), in_chans),
        std=_channels(processor.get("image_std", HALF), in_chans),
    )


def _hf_config(hf_config: PretrainedConfig, num_classes: int) -> ViTConfig:
    """Our config from a transformers ViTConfig and the number of classes of its classifier."""
    if hf_config.hidden_act != "gelu":
        activation = f"the activation {hf_config.hidden_act!r} (vitviz uses exact GELU)"
        raise _unsupported("Hugging Face", [activation])
    embed_dim, num_heads = hf_config.hidden_size, hf_config.num_attention_heads
    head_dim = getattr(hf_config, "head_dim", None)
    if head_dim is not None and head_dim * num_heads != embed_dim:
        raise _unsupported("Hugging Face", ["a head width other than hidden_size / num_attention_heads"])
    patch = hf_config.patch_size
    if not isinstance(patch, int):
        if patch[0] != patch[1]:
            raise _unsupported("Hugging Face", ["non-square patches"])
        patch = patch[0]
    image_size = size_pair(hf_config.image_size)
    in_chans = hf_config.num_channels
    return ViTConfig(
        image_size=image_size,
        patch_size=patch,
        in_chans=in_chans,
        num_classes=num_classes,
        embed_dim=embed_dim,
        depth=hf_config.num_hidden_layers,
        num_heads=num_heads,
        mlp_ratio=_mlp_ratio(hf_config.intermediate_size, embed_dim),
        qkv_bias=hf_config.qkv_bias,
        class_token=True,
        global_pool="token",
        fc_norm=False,
        layer_norm_eps=hf_config.layer_norm_eps,
        preprocess=hf_preprocess(image_size, in_chans),
        class_names=_hf_class_names(getattr(hf_config, "id2label", None), num_classes),
    )


def from_hf(
    model_or_state_dict: nn.Module | Mapping[str, Any],
    config: ViTConfig | PretrainedConfig | None = None,
    image_size: Size | None = None,
) -> VisionTransformer:
    """Our VisionTransformer with the weights of a Hugging Face ViTModel or ViTForImageClassification.

    Args:
        model_or_state_dict: the transformers model, or its state dict, with or without the
            "vit." prefix, in the checkpoint layout (encoder.layer.{i}.attention.attention.query)
            or the layout of transformers 5 (layers.{i}.attention.q_proj).
        config: required with a state dict: a transformers ViTConfig, or our ViTConfig used as
            it is. Taken from the model when None.
        image_size: build the model for this input size; position embeddings are resampled.

    Returns:
        The converted model, in eval mode. Without a classifier (ViTModel) it has no head and
        its pre_logits are ViTModel's ``last_hidden_state[:, 0]``.

    Raises:
        ValueError: the config uses a feature vitviz lacks, or a state dict came without config.
        CheckpointError: keys or shapes do not fit the config.
    """
    if isinstance(model_or_state_dict, nn.Module):
        from transformers import ViTForImageClassification, ViTModel

        if not isinstance(model_or_state_dict, (ViTModel, ViTForImageClassification)):
            name = type(model_or_state_dict).__name__
            raise ValueError(f"from_hf converts ViTModel and ViTForImageClassification, not {name}.")
        if config is None:
            config = model_or_state_dict.config
        state_dict = model_or_state_dict.state_dict()
    else:
        if config is None:
            raise ValueError(
                "A state dict does not say how the model was configured: pass config= "
                "(a transformers ViTConfig, or a vitviz ViTConfig)."
            )
        state_dict = unwrap_state_dict(model_or_state_dict)
    ours = _hf_to_ours(state_dict)
    preprocess = None
    if not isinstance(config, ViTConfig):
        num_classes = ours["head.weight"].shape[0] if "head.weight" in ours else 0
        config = _hf_config(config, num_classes)
        if image_size is not None:
            preprocess = hf_preprocess(size_pair(image_size), config.in_chans)
    return _build(config, ours, image_size, preprocess)
