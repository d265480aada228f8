"""Images in, tensors out: decoding uploads, preprocessing, and datasets.

``load_image`` is the one way in for every image a user gives: bytes become a checked,
upright, 8-bit RGB PIL image, or an ImageError whose message says what to do.
"""

from __future__ import annotations

import functools
import gzip
import hashlib
import io
import logging
import os
import random
import tempfile
import warnings
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch
from PIL import Image, ImageOps, UnidentifiedImageError
from torch import Tensor

from vitviz.models.config import CIFAR10_CLASSES, FASHION_MNIST_CLASSES, MNIST_CLASSES, Preprocess
from vitviz.render.i18n import DEFAULT_LANGUAGE, TranslatedError, t

log = logging.getLogger(__name__)

MAX_PIXELS = 50_000_000  # refused above this, before decoding: a 48 MP phone photo opens, a bomb does not
# Larger pictures are scaled down as they are decoded (JPEG in its DCT, at 1/2, 1/4 or 1/8): every
# model here resizes its input to a few hundred pixels, and a figure sends at most 800 a side, so a
# 48 MP photo is never held whole. The shorter side keeps at least WORK_MIN_SIDE (a panorama
# stays sharp where the model looks).
WORK_PIXELS = 2**20
WORK_MIN_SIDE = 512
NOTES_KEY = "vitviz.notes"
SIZE_KEY = "vitviz.size"  # the picture's (width, height) in its file, upright, before any scaling down
IMAGE_SUFFIXES = (".jpg", ".jpeg", ".png", ".bmp", ".gif", ".webp", ".tif", ".tiff")


class ImageError(TranslatedError, ValueError):
    """An image could not be used; the message is one sentence a user can act on (in any language)."""


def _composite(image: Image.Image, background: tuple[int, int, int] = (255, 255, 255)) -> Image.Image:
    """Flatten transparency onto a solid background (white by default)."""
    rgba = image.convert("RGBA")
    base = Image.new("RGBA", rgba.size, background + (255,))
    return Image.alpha_composite(base, rgba).convert("RGB")


def _to_8bit(image: Image.Image) -> Image.Image:
    """16-bit and 32-bit single-channel images scaled to 0..255 grey."""
    values = np.asarray(image, dtype=np.float64)
    if image.mode == "F":
        low, high = float(values.min()), float(values.max())
        scaled = (values - low) / (high - low or 1.0)
    else:
        scaled = values / (65535.0 if values.max() > 255 else 255.0)
    return Image.fromarray(np.clip(scaled * 255.0 + 0.5, 0, 255).astype(np.uint8), mode="L")


def working_size(width: int, height: int, max_pixels: int = WORK_PIXELS) -> tuple[int, int]:
    """The (width, height) ``load_image`` keeps of a picture: its own when it has at most
    ``max_pixels``, else scaled down to about that many, the shorter side kept at WORK_MIN_SIDE
    or more (or the picture's own, when that is less)."""
    if width * height <= max_pixels:
        return width, height
    scale = max((max_pixels / (width * height)) ** 0.5, min(1.0, WORK_MIN_SIDE / min(width, height)))
    return max(1, round(width * scale)), max(1, round(height * scale))


def load_image(data: bytes, max_pixels: int = MAX_PIXELS, work_pixels: int = WORK_PIXELS) -> Image.Image:
    """Decode an uploaded file into an upright 8-bit RGB image, at most about ``work_pixels``.

    Transparent images (RGBA, LA, palette with transparency) are composited on white.
    Animated images give their first frame. A picture over ``work_pixels`` is scaled down
    (``working_size``) as it is decoded. Notes about such changes are kept in
    ``image.info["vitviz.notes"]``; ``image_notes(image, lang)`` gives them as sentences.

    Args:
        data: the file's bytes.
        max_pixels: larger images are refused before they are decoded.
        work_pixels: larger images are scaled down to about this many pixels.

    Returns:
        A PIL image in mode "RGB" with its EXIF orientation applied.

    Raises:
        ImageError: with a sentence that says what is wrong and what to do.
    """
    if not data:
        raise ImageError("image.empty")
    limit = round(max_pixels / 1e6)
    notes: list[tuple[str, dict[str, object]]] = []
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error", Image.DecompressionBombWarning)
            image = Image.open(io.BytesIO(data))
            width, height = image.size
            if width * height > max_pixels:
                raise ImageError(
                    "image.too_large", width=width, height=height, megapixels=f"{width * height / 1e6:.1f}", limit=limit
                )
            if width < 1 or height < 1:
                raise ImageError("image.no_pixels")
            frames = getattr(image, "n_frames", 1)
            if frames > 1:
                notes.append(("image.note.animated", {"frames": frames}))
                image.seek(0)
            kept = working_size(width, height, work_pixels)
            if kept != (width, height):
                image.draft(None, kept)  # JPEG: decoded at the smallest 1/2^k scale still over ``kept``
            image.load()
    except ImageError:
        raise
    except (Image.DecompressionBombError, Image.DecompressionBombWarning):
        raise ImageError("image.bomb", limit=limit) from None
    except UnidentifiedImageError:
        raise ImageError("image.unknown") from None
    except Exception as err:
        log.info("image decode failed: %r", err)
        raise ImageError("image.damaged") from None
    try:
        ImageOps.exif_transpose(image, in_place=True)  # in place: no copy of a large picture
    except Exception as err:
        log.info("EXIF orientation ignored: %r", err)
        notes.append(("image.note.exif", {}))
    try:
        if image.mode in _TRANSPARENT_MODES or "transparency" in image.info:
            notes.append(("image.note.transparent", {}))
        ratio = image.width / image.height
        if abs(ratio - height / width) < abs(ratio - width / height):  # turned upright by a quarter turn
            width, height, kept = height, width, kept[::-1]
        if image.size != kept:  # larger than kept (a JPEG's draft stops at or above it)
            if image.mode not in _REDUCIBLE_MODES or "transparency" in image.info:
                image = _to_rgb(image)  # a palette, a transparent colour or 16 bits do not scale as they are
            image = image.resize(kept, Image.Resampling.BICUBIC, reducing_gap=1.0)  # a box filter first: fast
        if kept != (width, height):
            notes.append(("image.note.downscaled", {"width": width, "height": height, "kept": f"{kept[0]}x{kept[1]}"}))
        image = _to_rgb(image)
    except Exception as err:
        log.info("colour conversion failed: %r", err)
        raise ImageError("image.colour") from None
    image.info[NOTES_KEY] = notes
    image.info[SIZE_KEY] = (width, height)
    return image


def original_size(image: Image.Image) -> tuple[int, int]:
    """(width, height) of the picture in its file, upright: larger than the image when
    ``load_image`` scaled it down."""
    return image.info.get(SIZE_KEY, image.size)


_TRANSPARENT_MODES = ("RGBA", "LA", "PA", "La", "RGBa")
_REDUCIBLE_MODES = ("RGB", "RGBA", "RGBX", "L", "LA", "CMYK", "YCbCr")  # Image.reduce takes them


def _to_rgb(image: Image.Image) -> Image.Image:
    mode = image.mode
    if mode in ("I;16", "I;16B", "I;16L", "I;16N", "I", "F"):
        return _to_8bit(image).convert("RGB")
    if mode in _TRANSPARENT_MODES or "transparency" in image.info:
        return _composite(image)
    return image.convert("RGB") if mode != "RGB" else image


def image_notes(image: Image.Image, lang: str = DEFAULT_LANGUAGE) -> list[str]:
    """What load_image changed about the image, as sentences for the user."""
    return [t(key, lang, **values) for key, values in image.info.get(NOTES_KEY, [])]


_RESAMPLE = {
    "nearest": Image.Resampling.NEAREST,
    "bilinear": Image.Resampling.BILINEAR,
    "bicubic": Image.Resampling.BICUBIC,
}


def resize_and_crop(image: Image.Image, pre: Preprocess) -> Image.Image:
    """Apply the spec's resize and centre crop in one resampling step.

    The crop box is mapped back onto the original image and only that region is resampled,
    so a 10000x20 strip never becomes a huge intermediate image.
    """
    width, height = image.size
    resized_w, resized_h, out_w, out_h = pre.sizes(width, height)
    scale_x, scale_y = width / resized_w, height / resized_h
    left = (resized_w - out_w) / 2 * scale_x
    top = (resized_h - out_h) / 2 * scale_y
    box = (left, top, left + out_w * scale_x, top + out_h * scale_y)
    return image.resize((out_w, out_h), _RESAMPLE[pre.interpolation], box=box)


def normalise(pixels: Tensor, pre: Preprocess) -> Tensor:
    """(..., C, H, W) pixels, uint8 (0-255) or float in [0, 1] -> (pixels - mean) / std per channel."""
    if pixels.dtype == torch.uint8:
        pixels = pixels.float() / 255.0
    mean = torch.tensor(pre.mean, device=pixels.device).view(-1, 1, 1)
    std = torch.tensor(pre.std, device=pixels.device).view(-1, 1, 1)
    return (pixels - mean) / std


def _light_edges(pixels: Tensor) -> Tensor:
    """(B, C, H, W) uint8 -> (B,) bool: whether each picture's one-pixel frame is lighter than
    mid-grey on average. Measured on Fashion-MNIST: none of its 70,000 images has a frame above
    104 of 255, so the dataset's own pictures are never inverted."""
    grey = pixels.float().mean(dim=1)  # (B, H, W)
    frame = torch.cat([grey[:, 0], grey[:, -1], grey[:, 1:-1, 0], grey[:, 1:-1, -1]], dim=1)  # (B, 2H + 2W - 4)
    return frame.mean(dim=1) > 127.5


def _match_background(pixels: Tensor, pre: Preprocess) -> Tensor:
    """(B, C, H, W) uint8, inverted where the model wants a dark ground and a picture's is light."""
    if not pre.dark_background:
        return pixels
    light = _light_edges(pixels).view(-1, 1, 1, 1)
    return torch.where(light, 255 - pixels, pixels)


def _resized_pixels(image: Image.Image, pre: Preprocess, in_chans: int) -> Tensor:
    """PIL image -> uint8 (1, C, H, W) after the spec's resize, centre crop and channel conversion."""
    image = resize_and_crop(image, pre).convert("L" if in_chans == 1 else "RGB")
    array = np.asarray(image, dtype=np.uint8).reshape(image.height, image.width, -1)  # L has no channel axis
    return torch.from_numpy(array.copy()).permute(2, 0, 1)[None]


def input_pixels(image: Image.Image, pre: Preprocess, in_chans: int = 3) -> Tensor:
    """PIL image -> uint8 (C, H, W) after the spec's resize, centre crop, channel conversion
    and, for a model of light things on a dark ground, inversion of a light-edged picture."""
    return _match_background(_resized_pixels(image, pre, in_chans), pre)[0]


def inverts(image: Image.Image, pre: Preprocess, in_chans: int = 3) -> bool:
    """Whether ``to_tensor`` inverts this picture (see ``Preprocess.dark_background``), so the
    page can say so."""
    return pre.dark_background and bool(_light_edges(_resized_pixels(image, pre, in_chans))[0])


def to_tensor(image: Image.Image, pre: Preprocess, in_chans: int = 3) -> Tensor:
    """PIL image -> normalised (1, C, H, W) float tensor for the model: the one preprocessing
    of the tour, the lab, evaluation and training (``preprocess_batch`` is the same for tensors)."""
    return normalise(input_pixels(image, pre, in_chans), pre)[None]  # (1, C, H, W)


def _unchanged_by(pre: Preprocess, size: tuple[int, int]) -> bool:
    """Whether resize_and_crop leaves an image of ``size`` (height, width) as it is."""
    height, width = size
    resized = pre.resize == min(height, width) if isinstance(pre.resize, int) else pre.resize == (height, width)
    return resized and pre.crop in (None, (height, width))


def preprocess_batch(images: Tensor, pre: Preprocess, in_chans: int = 3) -> Tensor:
    """uint8 (B, C, h, w) images (a dataset's) -> the model's normalised input, each image exactly
    as ``to_tensor`` makes it of the same picture: resize, centre crop, channels, mean and std.

    Images already at the model's size and channels are only normalised; others go through
    the same PIL resampling as a photo in the tour, one at a time.
    """
    if _unchanged_by(pre, tuple(images.shape[-2:])) and images.shape[1] == in_chans:
        return normalise(_match_background(images, pre), pre)
    pictures = [Image.fromarray(image.permute(1, 2, 0).squeeze(-1).numpy()) for image in images.cpu()]  # L or RGB
    return normalise(torch.stack([input_pixels(picture, pre, in_chans) for picture in pictures]), pre)


def denormalize(pixels: Tensor, pre: Preprocess) -> np.ndarray:
    """(C, H, W) normalised tensor -> (H, W, C) float array in [0, 1] for display."""
    mean = torch.tensor(pre.mean).view(-1, 1, 1)
    std = torch.tensor(pre.std).view(-1, 1, 1)
    array = (pixels.detach().cpu().float() * std + mean).clamp(0, 1)
    return array.permute(1, 2, 0).numpy()


# ---------------------------------------------------------------------------------------------
# Datasets
# ---------------------------------------------------------------------------------------------


def default_data_dir() -> Path:
    """VITVIZ_DATA if set, else ~/.cache/vitviz/data (where torchvision downloads CIFAR-10)."""
    env = os.environ.get("VITVIZ_DATA")
    return Path(env).expanduser() if env else Path.home() / ".cache" / "vitviz" / "data"


def cache_dir() -> Path:
    """Where vitviz keeps decoded datasets, evaluation results and training runs."""
    env = os.environ.get("VITVIZ_CACHE")
    return Path(env).expanduser() if env else Path.home() / ".cache" / "vitviz"


def _is_image_folder(path: Path) -> bool:
    """Whether a class folder inside ``path`` holds an image; reads each class folder only up to
    its first image (scandir reads a folder in chunks; iterdir lists a class of 1,000 whole)."""
    if not path.is_dir():
        return False
    for sub in path.iterdir():
        if sub.is_dir():
            with os.scandir(sub) as entries:
                if any(os.path.splitext(entry.name)[1].lower() in IMAGE_SUFFIXES for entry in entries):
                    return True
    return False


def find_image_folder(root: Path, split: str) -> Path | None:
    """The ImageFolder for a split: root/<split>/<class>/*.jpg, or root/<class>/*.jpg itself."""
    root = Path(root)
    if _is_image_folder(root / split):
        return root / split
    if _is_image_folder(root) and not (root / "train").exists() and not (root / "test").exists():
        return root
    return None


@dataclass
class ImageSet:
    """A labelled image set held in memory as uint8 pixels.

    Attributes:
        images: (N, C, H, W) uint8.
        labels: (N,) int64.
        classes: class names in label order.
        files: a name per image (relative path for a folder, "cifar10/<split>/<index>" otherwise).
        source: where it came from, for reports.
        fingerprint: sha256 that changes when any file or label changes.
    """

    images: Tensor
    labels: Tensor
    classes: list[str]
    files: list[str]
    source: str
    fingerprint: str

    def __len__(self) -> int:
        return len(self.labels)

    def subset(self, indices: list[int] | Tensor) -> ImageSet:
        index = torch.as_tensor(indices, dtype=torch.long)
        digest = hashlib.sha256(self.fingerprint.encode() + index.numpy().tobytes()).hexdigest()
        return ImageSet(
            images=self.images[index],
            labels=self.labels[index],
            classes=self.classes,
            files=[self.files[i] for i in index.tolist()],
            source=self.source,
            fingerprint=digest,
        )


def class_members(data: ImageSet, class_name: str) -> Tensor:
    """(M,) the indices of a class's images in the set's order: its "index within the class"
    is a position in this list (for an ImageFolder, the class folder's files in sorted order,
    as ``folder_image_bytes`` counts them)."""
    if class_name not in data.classes:
        return torch.zeros(0, dtype=torch.long)
    return torch.nonzero(data.labels == data.classes.index(class_name)).flatten()


def encode_png(image: Tensor) -> bytes:
    """(C, H, W) uint8 -> PNG bytes (grayscale for C = 1): a dataset image as an upload would arrive."""
    array = image.permute(1, 2, 0).cpu().numpy()
    buffer = io.BytesIO()
    Image.fromarray(array[:, :, 0] if array.shape[2] == 1 else array).save(buffer, "PNG")
    return buffer.getvalue()


def fingerprint_folder(folder: Path) -> tuple[str, list[Path]]:
    """sha256 over (relative path + bytes) of every image in sorted order, and the files."""
    files = sorted(p for p in Path(folder).rglob("*") if p.is_file() and p.suffix.lower() in IMAGE_SUFFIXES)
    digest = hashlib.sha256()
    for path in files:
        digest.update(path.relative_to(folder).as_posix().encode())
        digest.update(path.read_bytes())
    return digest.hexdigest(), files


def _decode_folder(folder: Path, files: list[Path], size: tuple[int, int] | None) -> ImageSet:
    classes = sorted(p.name for p in folder.iterdir() if p.is_dir())
    index = {name: i for i, name in enumerate(classes)}
    if size is None:
        width, height = load_image(files[0].read_bytes()).size
    else:
        height, width = size
    images = torch.empty((len(files), 3, height, width), dtype=torch.uint8)
    labels = torch.empty(len(files), dtype=torch.long)
    pre = Preprocess(resize=(height, width), interpolation="bicubic")
    for i, path in enumerate(files):
        image = load_image(path.read_bytes())
        if image.size != (width, height):
            image = resize_and_crop(image, pre)
        images[i] = torch.from_numpy(np.asarray(image).copy()).permute(2, 0, 1)
        labels[i] = index[path.relative_to(folder).parts[0]]
    names = [p.relative_to(folder).as_posix() for p in files]
    return ImageSet(images, labels, classes, names, str(folder), "")


def load_image_folder(folder: Path, size: tuple[int, int] | None = None, use_cache: bool = True) -> ImageSet:
    """Decode an ImageFolder (class subfolders of images) into memory, caching the result.

    Images are held at ``size`` (height, width), or at the size of the first image when None
    (32x32 for CIFAR-10); others are resized to it.

    The decoded tensors are cached under cache_dir()/datasets keyed by the folder's
    fingerprint, so a second load reads one file instead of thousands of JPEGs.
    """
    folder = Path(folder).resolve()
    fingerprint, files = fingerprint_folder(folder)
    if not files:
        raise FileNotFoundError(f"No images found under {folder}.")
    size_tag = f"{size[0]}x{size[1]}" if size else "native"
    cache = cache_dir() / "datasets" / f"{fingerprint[:24]}-{size_tag}.pt"
    if use_cache and cache.exists():
        stored = torch.load(cache, weights_only=True)
        return ImageSet(
            stored["images"],
            stored["labels"],
            list(stored["classes"]),
            list(stored["files"]),
            str(folder),
            fingerprint,
        )
    log.info("decoding %d images from %s", len(files), folder)
    data = _decode_folder(folder, files, size)
    data.fingerprint = fingerprint
    if use_cache:
        save_atomic({"images": data.images, "labels": data.labels, "classes": data.classes, "files": data.files}, cache)
    return data


def save_atomic(obj: object, path: Path) -> None:
    """torch.save to ``path`` through a temporary file of its own, then an atomic rename.

    Readers never see half a file, and writers that race (the ranks of a torchrun, two app
    sessions) each rename a whole file of their own: the last one wins.
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    handle, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(handle, "wb") as file:
            torch.save(obj, file)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def load_torchvision_cifar10(root: Path, split: str, download: bool = True) -> ImageSet:
    """CIFAR-10 through torchvision (downloads the original files when allowed)."""
    from torchvision.datasets import CIFAR10  # slow to import (docs/benchmarks.md): only for a download

    dataset = CIFAR10(str(root), train=(split == "train"), download=download)
    images = torch.from_numpy(dataset.data).permute(0, 3, 1, 2).contiguous()  # (N, 3, 32, 32)
    labels = torch.tensor(dataset.targets, dtype=torch.long)
    digest = hashlib.sha256(images.numpy().tobytes() + labels.numpy().tobytes()).hexdigest()
    files = [f"cifar10/{split}/{i}" for i in range(len(labels))]
    return ImageSet(images, labels, list(dataset.classes), files, f"torchvision CIFAR10 ({root})", digest)


# ---- MNIST and Fashion-MNIST: the idx files, from Debian's package, any folder, or torchvision ----

IDX_DATASETS = {
    # name: (torchvision class, folder torchvision downloads into, class names in label order)
    "fashion-mnist": ("FashionMNIST", "FashionMNIST", FASHION_MNIST_CLASSES),
    "mnist": ("MNIST", "MNIST", MNIST_CLASSES),
}
DEBIAN_FOLDERS = {"fashion-mnist": Path("/usr/share/datasets/fashion-mnist")}  # apt-get install dataset-fashion-mnist
IDX_FILES = {
    "train": ("train-images-idx3-ubyte", "train-labels-idx1-ubyte"),
    "test": ("t10k-images-idx3-ubyte", "t10k-labels-idx1-ubyte"),
}


def read_idx(path: Path) -> np.ndarray:
    """An idx file (the format of MNIST and Fashion-MNIST), gzipped or not, as an array: a zero
    byte twice, a type byte (0x08: unsigned bytes), the number of dimensions, each size as a
    big-endian int32, then the values."""
    raw = Path(path).read_bytes()
    if raw[:2] == b"\x1f\x8b":
        raw = gzip.decompress(raw)
    if len(raw) < 4 or raw[:2] != b"\x00\x00" or raw[2] != 0x08:
        raise ValueError(f"{Path(path).name} is not an idx file of unsigned bytes.")
    ndim = raw[3]
    shape = tuple(int.from_bytes(raw[4 + 4 * i : 8 + 4 * i], "big") for i in range(ndim))
    values = np.frombuffer(raw, dtype=np.uint8, offset=4 + 4 * ndim)
    if values.size != int(np.prod(shape)):
        raise ValueError(f"{Path(path).name} holds {values.size} values, not {shape}.")
    return values.reshape(shape)


def _idx_file(folder: Path, stem: str) -> Path | None:
    for name in (f"{stem}.gz", stem):
        if (folder / name).is_file():
            return folder / name
    return None


def find_idx_folder(root: Path) -> Path | None:
    """The folder holding the four idx files: ``root`` itself, or torchvision's <root>/<Name>/raw."""
    root = Path(root)
    candidates = [root, root / "raw", *(root / folder / "raw" for _, folder, _ in IDX_DATASETS.values())]
    for folder in candidates:
        if all(_idx_file(folder, stem) for pair in IDX_FILES.values() for stem in pair):
            return folder
    return None


def load_idx_split(folder: Path, split: str, name: str) -> ImageSet:
    """One split of MNIST or Fashion-MNIST (``name``) from a folder of its idx files."""
    image_file, label_file = (_idx_file(Path(folder), stem) for stem in IDX_FILES[split])
    images = torch.from_numpy(read_idx(image_file).copy())[:, None]  # (N, 1, 28, 28)
    labels = torch.from_numpy(read_idx(label_file).astype(np.int64))
    digest = hashlib.sha256(images.numpy().tobytes() + labels.numpy().tobytes()).hexdigest()
    files = [f"{name}/{split}/{i}" for i in range(len(labels))]
    return ImageSet(images, labels, list(IDX_DATASETS[name][2]), files, str(folder), digest)


def named_folder(name: str) -> Path | None:
    """Where MNIST or Fashion-MNIST (``name``) is on this machine without downloading: Debian's
    installed copy, or an earlier download in the cache folder; None when neither is."""
    candidates = (DEBIAN_FOLDERS.get(name), cache_dir() / "data" / IDX_DATASETS[name][1] / "raw")
    for candidate in candidates:
        folder = find_idx_folder(candidate) if candidate is not None else None
        if folder is not None:
            return folder
    return None


def named_dataset(classes: Sequence[str]) -> str | None:
    """ "fashion-mnist" or "mnist" for a model that predicts those datasets' classes, else None."""
    return next((name for name, (_, _, names) in IDX_DATASETS.items() if tuple(classes) == tuple(names)), None)


def named_label(name: str) -> str:
    """How reports and pages write a named dataset: "Fashion-MNIST" or "MNIST"."""
    return {"fashion-mnist": "Fashion-MNIST", "mnist": "MNIST"}[name]


def _load_named(name: str, split: str, download: bool) -> ImageSet:
    """``--data fashion-mnist`` or ``--data mnist``: Debian's installed copy, an earlier download
    in the cache folder, or (when allowed) torchvision's download into the cache folder."""
    torchvision_class, folder_name, _ = IDX_DATASETS[name]
    root = cache_dir() / "data"
    folder = named_folder(name)
    if folder is not None:
        return load_idx_split(folder, split, name)
    if not download:
        raise FileNotFoundError(
            f"{name} is not on this machine: install Debian's dataset-fashion-mnist, or let vitviz download it "
            f"(with the network) into {root}."
        )
    import torchvision.datasets

    try:
        getattr(torchvision.datasets, torchvision_class)(str(root), train=(split == "train"), download=True)
    except (RuntimeError, OSError) as err:
        raise FileNotFoundError(f"{name} could not be downloaded to {root} ({err.__class__.__name__}).") from None
    return load_idx_split(root / folder_name / "raw", split, name)


def load_split(
    root: Path | str | None, split: str, size: tuple[int, int] | None = None, download: bool = True
) -> ImageSet:
    """One function for every place data can come from.

    "fashion-mnist" and "mnist" name those datasets (Debian's package, the cache, or a download);
    a folder holding the four idx files is read as MNIST, or Fashion-MNIST when its path says
    "fashion"; an ImageFolder (root/<split>/<class>/ or root/<class>/) is read as folders of
    images; anything else is treated as torchvision's CIFAR-10 root and downloaded if allowed.

    Args:
        root: the data folder; None means VITVIZ_DATA or the default cache folder.
        split: "train" or "test".
        size: (height, width) the images are held at; None keeps a folder's own size.
        download: whether torchvision may download CIFAR-10 when it is missing.
    """
    if str(root).lower() in IDX_DATASETS:
        return _load_named(str(root).lower(), split, download)
    root = Path(root).expanduser() if root is not None else default_data_dir()
    idx_folder = find_idx_folder(root)
    if idx_folder is not None:
        return load_idx_split(idx_folder, split, "fashion-mnist" if "fashion" in str(idx_folder).lower() else "mnist")
    folder = find_image_folder(root, split)
    if folder is not None:
        return load_image_folder(folder, size)
    try:
        return load_torchvision_cifar10(root, split, download=download)
    except RuntimeError as err:
        raise FileNotFoundError(
            f"No dataset at {root}: point --data or VITVIZ_DATA at an ImageFolder "
            f"(class subfolders of images) or let torchvision download CIFAR-10 there ({err})."
        ) from None
    except OSError as err:
        raise FileNotFoundError(
            f"CIFAR-10 could not be downloaded to {root} ({err.__class__.__name__}): with no network, "
            "point --data or VITVIZ_DATA at an ImageFolder copy such as ../shared/data/cifar10-jpeg."
        ) from None


def spread_subset(data: ImageSet, limit: int | None) -> ImageSet:
    """At most ``limit`` images taken at even steps through the set (so every class is present
    in a class-sorted folder); the whole set when limit is None or not smaller."""
    if not limit or limit >= len(data):
        return data
    return data.subset(spread_indices(len(data), limit))


def spread_indices(count: int, limit: int | None) -> list[int]:
    """At most ``limit`` of the indices 0..count-1, at even steps (``spread_subset``'s); every one
    when limit is None or not smaller."""
    if not limit or limit >= count:
        return list(range(count))
    step = count / limit
    return [int(i * step) for i in range(limit)]


def is_cifar10(classes: list[str]) -> bool:
    return tuple(classes) == CIFAR10_CLASSES


def dataset_label(data: ImageSet) -> str:
    """A name for reports and model cards: "CIFAR-10" for torchvision's files, "CIFAR-10 (JPEG
    copy)" for an ImageFolder of CIFAR-10 JPEGs such as ../shared/data/cifar10-jpeg, else the folder."""
    source = Path(data.source)
    named = data.files[0].partition("/")[0] if data.files else ""
    if named in IDX_DATASETS:
        return named_label(named)
    if is_cifar10(data.classes):
        if data.files and data.files[0].startswith("cifar10/"):
            return "CIFAR-10"
        suffixes = {os.path.splitext(f)[1].lower() for f in data.files}  # 10x Path's speed: 10,000 files a run
        return "CIFAR-10 (JPEG copy)" if suffixes <= {".jpg", ".jpeg"} else "CIFAR-10 (image folder)"
    return source.parent.name if source.name in ("train", "test") else source.name


def describe(data: ImageSet) -> dict[str, object]:
    """What a model card records about a dataset split."""
    return {"dataset": dataset_label(data), "source": data.source, "images": len(data), "fingerprint": data.fingerprint}


def find_cifar_test_folder() -> Path | None:
    """A test-split ImageFolder to browse: VITVIZ_DATA's, else the development machines'
    ``../shared/data/cifar10-jpeg`` beside the repository, else None."""
    candidates = []
    if os.environ.get("VITVIZ_DATA"):
        candidates.append(Path(os.environ["VITVIZ_DATA"]).expanduser())
    candidates.append(Path(__file__).resolve().parents[3] / "shared" / "data" / "cifar10-jpeg")
    for root in candidates:
        folder = find_image_folder(root, "test") if root.is_dir() else None
        if folder is not None:
            return folder
    return None


def folder_classes(folder: Path) -> list[str]:
    """Class names of an ImageFolder, in label order, listed again only when the folder changes
    (a class folder added, removed or renamed changes its mtime): the sidebar asks on every rerun."""
    folder = Path(folder)
    return list(_class_names(folder, folder.stat().st_mtime_ns))


@functools.lru_cache(maxsize=64)
def _class_names(folder: Path, changed_ns: int) -> tuple[str, ...]:
    return tuple(sorted(p.name for p in folder.iterdir() if p.is_dir()))


def class_files(folder: Path) -> tuple[Path, ...]:
    """A class folder's images in sorted order, listed again only when the folder changes (a file
    added, removed or renamed changes its mtime): the sidebar asks on every rerun."""
    folder = Path(folder)
    return _listing(folder, folder.stat().st_mtime_ns)


@functools.lru_cache(maxsize=256)
def _listing(folder: Path, changed_ns: int) -> tuple[Path, ...]:
    return tuple(sorted(p for p in folder.iterdir() if p.suffix.lower() in IMAGE_SUFFIXES))


def count_images(class_folder: Path) -> int:
    return len(class_files(class_folder)) if Path(class_folder).is_dir() else 0


def random_folder_image(folder: Path, rng: random.Random | None = None) -> tuple[str, int]:
    """(class name, index within the class) of any image of an ImageFolder, each equally likely."""
    images = [(name, index) for name in folder_classes(folder) for index in range(count_images(Path(folder) / name))]
    if not images:
        raise FileNotFoundError(f"{folder} holds no images.")
    return (rng or random).choice(images)


def folder_image_bytes(folder: Path, class_name: str, index: int) -> bytes | None:
    """The bytes of the index-th image (in sorted order) of a class, or None if out of range."""
    class_folder = Path(folder) / Path(class_name).name
    if not class_folder.is_dir():
        return None
    files = class_files(class_folder)
    return files[index].read_bytes() if 0 <= index < len(files) else None
