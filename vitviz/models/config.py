"""Model configuration: one frozen dataclass passed whole, like nanoGPT's GPTConfig.

A ViTConfig says everything needed to build a VisionTransformer and to use it: the
architecture, and the preprocessing and class names that turn a photo into an input and
logits into words.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

from vitviz.server import values

IMAGENET_MEAN = (0.485, 0.456, 0.406)
IMAGENET_STD = (0.229, 0.224, 0.225)
HALF = (0.5, 0.5, 0.5)
CIFAR10_MEAN = (0.4914, 0.4822, 0.4465)
CIFAR10_STD = (0.2470, 0.2435, 0.2616)
CIFAR10_CLASSES = (
    "airplane",
    "automobile",
    "bird",
    "cat",
    "deer",
    "dog",
    "frog",
    "horse",
    "ship",
    "truck",
)

FASHION_MNIST_CLASSES = (
    "T-shirt/top", "Trouser", "Pullover", "Dress", "Coat",
    "Sandal", "Shirt", "Sneaker", "Bag", "Ankle boot",
)  # fmt: skip
MNIST_CLASSES = ("0", "1", "2", "3", "4", "5", "6", "7", "8", "9")

INTERPOLATIONS = ("nearest", "bilinear", "bicubic")

# The ResNet of hybrid ViTs (vitviz.models.resnet): the stem's width, then each stage's.
STEM_CHANNELS = 64
STAGE_CHANNELS = (256, 512, 1024, 2048)


def resnet_stride(layers: tuple[int, ...]) -> int:
    """Pixels between neighbouring cells of a hybrid's ResNet feature map: 4 after the stem,
    x2 for every stage after the first."""
    return 4 * 2 ** max(len(layers) - 1, 0)


def _check_types(config: Any, names: tuple[str, ...]) -> None:
    """Refuse a field that should be a whole number and is not one (1e10, "12", True): a config
    may come from a visitor's json."""
    for name in names:
        value = getattr(config, name)
        if isinstance(value, bool) or not isinstance(value, int):
            raise ValueError(f"{name} must be a whole number, not {value!r}.")


def _names(names: Any) -> tuple[str, ...]:
    """Class names as a tuple of text (a visitor's json may hold anything there)."""
    if not isinstance(names, (tuple, list)) or not all(isinstance(name, str) for name in names):
        raise ValueError("class_names must be a list of names.")
    return tuple(names)


def size_pair(value: int | tuple[int, int] | list[int]) -> tuple[int, int]:
    """(height, width) from an int (a square) or a pair of ints.

    Raises:
        ValueError: for anything else (a float, text, three numbers).
    """
    pair = (value, value) if isinstance(value, int) else tuple(value) if isinstance(value, (tuple, list)) else ()
    if len(pair) != 2 or not all(values.whole(n, 1, 10**6) for n in pair):
        raise ValueError(f"image_size must be a whole number of pixels or a pair of them, not {value!r}.")
    return (int(pair[0]), int(pair[1]))


@dataclass(frozen=True)
class Preprocess:
    """How a photo becomes the model's input tensor.

    Attributes:
        resize: the shorter side is resized to this many pixels (an int), or the image is
            resized to exactly (height, width).
        crop: a centre crop of (height, width) taken after the resize, or None for no crop.
        interpolation: "nearest", "bilinear" or "bicubic".
        mean: per-channel mean subtracted after scaling pixels to [0, 1].
        std: per-channel standard deviation divided by after the mean.
        dark_background: the model learnt from light things on a dark ground (MNIST, Fashion-
            MNIST): a picture whose edge is light on average (a photo on a white table) is
            inverted to match (``vitviz.models.data.inverts``); the datasets' own images never are.
    """

    resize: int | tuple[int, int] = 224
    crop: tuple[int, int] | None = None
    interpolation: str = "bicubic"
    mean: tuple[float, ...] = IMAGENET_MEAN
    std: tuple[float, ...] = IMAGENET_STD
    dark_background: bool = False

    def __post_init__(self) -> None:
        if not isinstance(self.resize, int) or isinstance(self.resize, bool):
            object.__setattr__(self, "resize", size_pair(self.resize))
        elif not values.whole(self.resize, 1, 10**6):
            raise ValueError(f"resize must be a positive number of pixels, not {self.resize!r}.")
        if self.crop is not None:
            object.__setattr__(self, "crop", size_pair(self.crop))
        object.__setattr__(self, "mean", tuple(float(m) for m in self.mean))
        object.__setattr__(self, "std", tuple(float(s) for s in self.std))
        if self.interpolation not in INTERPOLATIONS:
            raise ValueError(f"interpolation must be one of {INTERPOLATIONS}, not {self.interpolation!r}.")
        if len(self.mean) != len(self.std):
            raise ValueError("mean and std must have one value per channel each.")
        if any(s <= 0 for s in self.std):
            raise ValueError("every std value must be positive.")
        if not all(values.finite(v, -1e6, 1e6) for v in (*self.mean, *self.std)):
            raise ValueError("mean and std must be finite numbers.")

    def sizes(self, width: int, height: int) -> tuple[int, int, int, int]:
        """A (width, height) picture's size after the resize, then after the centre crop:
        (resized width, resized height, output width, output height)."""
        if isinstance(self.resize, int):
            scale = self.resize / min(width, height)
            resized_w, resized_h = max(1, round(width * scale)), max(1, round(height * scale))
        else:
            resized_h, resized_w = self.resize
        out_h, out_w = self.crop if self.crop is not None else (resized_h, resized_w)
        return resized_w, resized_h, out_w, out_h

    def output_size(self) -> tuple[int, int] | None:
        """The (height, width) this preprocessing always produces, or None if it depends on the photo."""
        if self.crop is not None:
            return self.crop
        if isinstance(self.resize, tuple):
            return self.resize
        return None


def _json_ready(config: Any, tuples: tuple[str, ...]) -> dict[str, Any]:
    """``dataclasses.asdict`` of a model config with the named tuple fields and the
    preprocessing's tuples (resize, crop, mean, std) as lists, ready for json."""
    data = dataclasses.asdict(config)
    for key in tuples:
        data[key] = list(getattr(config, key))
    pre = data["preprocess"]
    for key in ("resize", "crop", "mean", "std"):
        if isinstance(pre[key], tuple):
            pre[key] = list(pre[key])
    if not pre["dark_background"]:
        del pre["dark_background"]  # the json of models on ordinary photos stays as it was
    return data


@dataclass(frozen=True)
class ViTConfig:
    """The Vision Transformer of Dosovitskiy et al. (ICLR 2021), with timm's options.

    Attributes:
        image_size: input size, an int for square images or (height, width).
        patch_size: side P of the square patches; N = H * W / P^2.
        in_chans: colour channels C of the input, 1 or 3.
        num_classes: size of the classification head; 0 means no head (features only).
        embed_dim: token width D.
        depth: number of encoder blocks.
        num_heads: attention heads per block; embed_dim must divide evenly among them.
        mlp_ratio: width of the MLP hidden layer as a multiple of embed_dim.
        qkv_bias: whether the query/key/value projection has a bias.
        class_token: whether a learned [CLS] token is prepended.
        global_pool: "token" reads the [CLS] token, "avg" averages the patch tokens.
        fc_norm: apply the final LayerNorm after pooling (timm's fc_norm) instead of to
            every token; timm does this for average pooling unless told otherwise.
        pos_embed: "learn" (a parameter) or "sincos2d" (fixed 2D sine-cosine).
        layer_norm_eps: epsilon of every LayerNorm (timm 1e-6, Hugging Face 1e-12).
        drop_rate: dropout after the position embeddings, in the projections and before the head.
        attn_drop_rate: dropout on the attention weights.
        drop_path_rate: stochastic depth, rising linearly to this value in the last block.
        preprocess: how photos are turned into inputs for this model; it must end at
            image_size. None means: resize to exactly image_size, bicubic, ImageNet mean and std.
        class_names: one name per output class (may be empty when unknown).
        test_flip: in eval mode, answer with the mean of the logits of the image and of its
            mirror image (test-time augmentation, as the CNN's); ``explain`` traces one view, the
            image as it is.
        hybrid_layers: None for a plain ViT. For a hybrid ViT, the bottleneck blocks per
            stage of the ResNet in front of the transformer (timm's R26 is (2, 2, 2, 2)); ()
            for its 7x7 stem alone. patch_size then counts cells of the ResNet's feature map.
    """

    image_size: int | tuple[int, int] = 224
    patch_size: int = 16
    in_chans: int = 3
    num_classes: int = 1000
    embed_dim: int = 768
    depth: int = 12
    num_heads: int = 12
    mlp_ratio: float = 4.0
    qkv_bias: bool = True
    class_token: bool = True
    global_pool: str = "token"
    fc_norm: bool = False
    pos_embed: str = "learn"
    layer_norm_eps: float = 1e-6
    drop_rate: float = 0.0
    attn_drop_rate: float = 0.0
    drop_path_rate: float = 0.0
    preprocess: Preprocess | None = None
    class_names: tuple[str, ...] = ()
    test_flip: bool = False
    hybrid_layers: tuple[int, ...] | None = None

    def __post_init__(self) -> None:
        _check_types(self, ("patch_size", "in_chans", "num_classes", "embed_dim", "depth", "num_heads"))
        for name in ("mlp_ratio", "layer_norm_eps"):
            if not values.finite(getattr(self, name), 1e-12, 1e3):
                raise ValueError(f"{name} must be a positive number, not {getattr(self, name)!r}.")
        object.__setattr__(self, "image_size", size_pair(self.image_size))
        if self.hybrid_layers is not None:
            if not isinstance(self.hybrid_layers, (tuple, list)) or not all(
                values.whole(n, 0, 10**6) for n in self.hybrid_layers
            ):
                raise ValueError(f"hybrid_layers must be a list of whole numbers, not {self.hybrid_layers!r}.")
            object.__setattr__(self, "hybrid_layers", tuple(self.hybrid_layers))
            if len(self.hybrid_layers) > len(STAGE_CHANNELS) or any(n <= 0 for n in self.hybrid_layers):
                raise ValueError(
                    f"hybrid_layers holds 0 to {len(STAGE_CHANNELS)} stages of at least one block each, "
                    f"not {self.hybrid_layers}."
                )
        object.__setattr__(self, "class_names", _names(self.class_names))
        if isinstance(self.preprocess, dict):
            object.__setattr__(self, "preprocess", Preprocess(**self.preprocess))
        height, width = self.image_size
        if self.preprocess is None:
            mean, std = (IMAGENET_MEAN, IMAGENET_STD) if self.in_chans == 3 else ((0.5,), (0.5,))
            object.__setattr__(self, "preprocess", Preprocess(resize=(height, width), mean=mean, std=std))
        if self.preprocess.output_size() != (height, width):
            raise ValueError(
                f"The preprocessing ends at {self.preprocess.output_size() or 'a size that depends on the photo'}, "
                f"not at the model's input size {height}x{width}: set its crop (or an exact resize) to {height}x{width}."
            )
        if self.patch_size <= 0 or height <= 0 or width <= 0:
            raise ValueError("image_size and patch_size must be positive.")
        p = self.token_size
        if height % p or width % p:
            raise ValueError(
                f"The image ({height}x{width}) must divide into whole {p}x{p} patches: "
                f"choose an image size that is a multiple of {p}."
            )
        if self.in_chans not in (1, 3):
            raise ValueError(f"in_chans must be 1 or 3, not {self.in_chans}.")
        if self.embed_dim <= 0 or self.depth < 0 or self.num_heads <= 0:
            raise ValueError("embed_dim and num_heads must be positive and depth not negative.")
        if self.embed_dim % self.num_heads:
            raise ValueError(
                f"embed_dim {self.embed_dim} does not split evenly into {self.num_heads} heads: "
                "choose a number of heads that divides it."
            )
        if self.global_pool not in ("token", "avg"):
            raise ValueError(f'global_pool must be "token" or "avg", not {self.global_pool!r}.')
        if self.global_pool == "token" and not self.class_token:
            raise ValueError(
                'global_pool "token" reads the [CLS] token, but class_token is False: '
                'use global_pool "avg" or add the class token.'
            )
        if self.pos_embed not in ("learn", "sincos2d"):
            raise ValueError(f'pos_embed must be "learn" or "sincos2d", not {self.pos_embed!r}.')
        if self.pos_embed == "sincos2d" and self.embed_dim % 4:
            raise ValueError("2D sine-cosine position embeddings need embed_dim divisible by 4.")
        if self.num_classes < 0:
            raise ValueError("num_classes must be 0 (no head) or more.")
        if self.class_names and self.num_classes and len(self.class_names) != self.num_classes:
            raise ValueError(f"There are {len(self.class_names)} class names for {self.num_classes} classes.")
        for name in ("drop_rate", "attn_drop_rate", "drop_path_rate"):
            if not values.finite(getattr(self, name), 0.0, 1.0) or getattr(self, name) == 1.0:
                raise ValueError(f"{name} must be in [0, 1).")
        if len(self.preprocess.mean) != self.in_chans:
            raise ValueError(f"preprocess.mean has {len(self.preprocess.mean)} values for {self.in_chans} channels.")

    @property
    def is_hybrid(self) -> bool:
        """A ResNet makes the tokens' input (a feature map) instead of pixel patches."""
        return self.hybrid_layers is not None

    @property
    def feature_stride(self) -> int:
        """Pixels between neighbouring cells of what patch_embed.proj reads: 1 for pixels."""
        if self.hybrid_layers is None:
            return 1
        return resnet_stride(self.hybrid_layers)

    @property
    def feature_dim(self) -> int:
        """Channels of what patch_embed.proj reads: in_chans, or the ResNet's feature channels."""
        if self.hybrid_layers is None:
            return self.in_chans
        return STAGE_CHANNELS[len(self.hybrid_layers) - 1] if self.hybrid_layers else STEM_CHANNELS

    @property
    def token_size(self) -> int:
        """Side in pixels of the image square each patch token stands for (P for a plain ViT)."""
        return self.patch_size * self.feature_stride

    @property
    def grid_size(self) -> tuple[int, int]:
        """(grid_h, grid_w): patches down and across."""
        height, width = self.image_size
        return (height // self.token_size, width // self.token_size)

    @property
    def num_patches(self) -> int:
        grid_h, grid_w = self.grid_size
        return grid_h * grid_w

    @property
    def num_prefix_tokens(self) -> int:
        return 1 if self.class_token else 0

    @property
    def num_tokens(self) -> int:
        """T = N + 1 with a class token, else N."""
        return self.num_patches + self.num_prefix_tokens

    @property
    def patch_dim(self) -> int:
        """Numbers in one flattened patch: P * P * C (C = feature_dim for a hybrid)."""
        return self.patch_size * self.patch_size * self.feature_dim

    @property
    def head_dim(self) -> int:
        return self.embed_dim // self.num_heads

    @property
    def mlp_hidden_dim(self) -> int:
        return int(self.embed_dim * self.mlp_ratio)

    def replace(self, **changes: Any) -> ViTConfig:
        """A copy with some fields changed (validated again).

        A new image_size without a new preprocess rescales the old one to end at the new size
        (the resize keeps its ratio to the crop).
        """
        if "image_size" in changes and "preprocess" not in changes:
            height, width = size_pair(changes["image_size"])
            pre = self.preprocess
            if isinstance(pre.resize, int) and pre.crop is not None:
                resize: int | tuple[int, int] = round(pre.resize * height / pre.crop[0])
                crop: tuple[int, int] | None = (height, width)
            else:
                resize, crop = (height, width), None
            changes["preprocess"] = dataclasses.replace(pre, resize=resize, crop=crop)
        return dataclasses.replace(self, **changes)

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dictionary; ViTConfig.from_dict reverses it."""
        data = _json_ready(self, ("image_size", "class_names"))
        if not self.test_flip:
            del data["test_flip"]  # the json of one-view ViTs stays as it was
        if self.hybrid_layers is None:
            del data["hybrid_layers"]  # plain ViTs' json stays as it was
        else:
            data["hybrid_layers"] = list(self.hybrid_layers)
        return data

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> ViTConfig:
        """Build a config from a dictionary, refusing keys it does not know."""
        known = {f.name for f in dataclasses.fields(cls)}
        unknown = sorted(set(data) - known)
        if unknown:
            raise ValueError(f"Unknown config keys: {', '.join(unknown)}.")
        data = dict(data)
        if "preprocess" in data and isinstance(data["preprocess"], dict):
            data["preprocess"] = Preprocess(**data["preprocess"])
        return cls(**data)


def cifar10_vit_config(**changes: Any) -> ViTConfig:
    """The shipped model's architecture: 32x32 input, 4x4 patches, 6 blocks of width 192, 3 heads.

    Not 9 blocks of 12 heads with an MLP ratio of 2, which has the same parameter count:
    attention with 16-wide heads is slow on the CPU, where that shape trained at half this one's
    speed (docs/training.md).
    """
    base = ViTConfig(
        image_size=32,
        patch_size=4,
        num_classes=10,
        embed_dim=192,
        depth=6,
        num_heads=3,
        mlp_ratio=4.0,
        drop_path_rate=0.1,
        layer_norm_eps=1e-6,
        class_names=CIFAR10_CLASSES,
        preprocess=Preprocess(resize=32, crop=(32, 32), interpolation="bicubic", mean=CIFAR10_MEAN, std=CIFAR10_STD),
    )
    return base.replace(**changes)


@dataclass(frozen=True)
class CNNConfig:
    """A small convolutional network: a 2x2 stem, then groups of two 3x3 convolutions with a
    max-pool between them (or three, the last two with a shortcut around them: airbench96's
    group), global max pooling and a linear head (the shape of Keller Jordan's cifar10-airbench
    net).

    It carries the same preprocessing and class names as a ViTConfig, so every image goes
    into either family the same way, and ``arch`` tells the two apart in a json card.

    Attributes:
        image_size: input size, an int for square images or (height, width).
        in_chans: colour channels C of the input, 1 or 3.
        num_classes: size of the classification head.
        stem_width: channels of the 2x2 stem convolution.
        widths: channels of each group; every group halves the resolution.
        group_convs: 3x3 convolutions per group, 2 (airbench94/95) or 3 (airbench96: the third
            adds its output to the group's after the first, a residual shortcut).
        batchnorm_momentum: BatchNorm's running-average momentum.
        logit_scale: a fixed factor on the head's output (airbench's 1/9; 1 for the first
            shipped CNN), which keeps the logits small while the head learns at a high rate.
        test_flip: in eval mode, average the logits of the image and of its mirror image
            (airbench's test-time augmentation); training always sees one view.
        preprocess: how photos are turned into inputs; it must end at image_size.
        class_names: one name per output class (may be empty when unknown).
        arch: always "cnn".
    """

    image_size: int | tuple[int, int] = 32
    in_chans: int = 3
    num_classes: int = 10
    stem_width: int = 24
    widths: tuple[int, ...] = (64, 256, 256)
    group_convs: int = 2
    batchnorm_momentum: float = 0.1
    logit_scale: float = 1.0
    test_flip: bool = False
    preprocess: Preprocess | None = None
    class_names: tuple[str, ...] = ()
    arch: str = "cnn"

    def __post_init__(self) -> None:
        _check_types(self, ("in_chans", "num_classes", "stem_width", "group_convs"))
        for name in ("batchnorm_momentum", "logit_scale"):
            if not values.finite(getattr(self, name), 0.0, 1e3):
                raise ValueError(f"{name} must be a number from 0 to 1000, not {getattr(self, name)!r}.")
        object.__setattr__(self, "image_size", size_pair(self.image_size))
        object.__setattr__(self, "class_names", _names(self.class_names))
        if not isinstance(self.widths, (tuple, list)) or not all(values.whole(w, 0, 10**6) for w in self.widths):
            raise ValueError(f"widths must be a list of whole numbers, not {self.widths!r}.")
        object.__setattr__(self, "widths", tuple(self.widths))
        if isinstance(self.preprocess, dict):
            object.__setattr__(self, "preprocess", Preprocess(**self.preprocess))
        if self.preprocess is None:
            object.__setattr__(self, "preprocess", Preprocess(resize=self.image_size))
        if self.arch != "cnn":
            raise ValueError(f'A CNNConfig has arch "cnn", not {self.arch!r}.')
        if self.preprocess.output_size() != self.image_size:
            raise ValueError(f"The preprocessing must end at the model's input size {self.image_size}.")
        if self.in_chans not in (1, 3):
            raise ValueError(f"in_chans must be 1 or 3, not {self.in_chans}.")
        if not self.widths or min(self.widths) <= 0 or self.stem_width <= 0:
            raise ValueError("stem_width and every group width must be positive.")
        if self.group_convs not in (2, 3):
            raise ValueError(f"group_convs must be 2 or 3 (airbench96's residual group), not {self.group_convs}.")
        smallest = min(self.image_size) - 1  # the 2x2 stem has no padding
        if smallest >> len(self.widths) < 1:
            raise ValueError(f"{len(self.widths)} groups halve a {self.image_size} image to nothing: use fewer groups.")
        if self.num_classes <= 0:
            raise ValueError("num_classes must be positive.")
        if self.class_names and len(self.class_names) != self.num_classes:
            raise ValueError(f"There are {len(self.class_names)} class names for {self.num_classes} classes.")
        if len(self.preprocess.mean) != self.in_chans:
            raise ValueError(f"preprocess.mean has {len(self.preprocess.mean)} values for {self.in_chans} channels.")

    def replace(self, **changes: Any) -> CNNConfig:
        return dataclasses.replace(self, **changes)

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dictionary; CNNConfig.from_dict (or config_from_dict) reverses it."""
        return _json_ready(self, ("image_size", "widths", "class_names"))

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> CNNConfig:
        """Build a config from a dictionary, refusing keys it does not know."""
        unknown = sorted(set(data) - {f.name for f in dataclasses.fields(cls)})
        if unknown:
            raise ValueError(f"Unknown config keys: {', '.join(unknown)}.")
        return cls(**data)


ModelConfig = ViTConfig | CNNConfig


def config_from_dict(data: dict[str, Any]) -> ModelConfig:
    """A ViTConfig, or a CNNConfig when the dictionary says ``"arch": "cnn"``."""
    return CNNConfig.from_dict(data) if data.get("arch") == "cnn" else ViTConfig.from_dict(data)


def check_pixels(config: ModelConfig, pixels: Any) -> None:
    """Refuse, with what to do, a tensor that is not a batch (B, C, H, W) of the model's input size."""
    expected = (config.in_chans, *config.image_size)
    if pixels.dim() != 4 or tuple(pixels.shape[1:]) != expected:
        raise ValueError(
            f"The model expects images of shape (B, {', '.join(map(str, expected))}), "
            f"got {tuple(pixels.shape)}: preprocess the image with the model's spec first."
        )


def cifar10_cnn_config(**changes: Any) -> CNNConfig:
    """airbench94's CNN for CIFAR-10: 32x32 input, widths 64/256/256 (about 2M parameters), CIFAR-10's
    statistics; the presets change what they need (the shipped cifar10-cnn is airbench96's 128/384/512,
    three convolutions a group)."""
    base = CNNConfig(
        image_size=32,
        num_classes=10,
        class_names=CIFAR10_CLASSES,
        preprocess=Preprocess(resize=32, crop=(32, 32), interpolation="bicubic", mean=CIFAR10_MEAN, std=CIFAR10_STD),
    )
    return base.replace(**changes)
