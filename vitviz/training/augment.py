"""Batched augmentation: a whole batch of images augmented at once, on the device it sits on.

``vitviz.training.train`` with ``loader="device"`` keeps the training split on the device as one uint8
tensor (CIFAR-10's 50,000 images: 150 MB) and builds every batch here, with no DataLoader
processes: reflect-padded random crops and mirror flips (two gathers), a policy (AutoAugment's
CIFAR-10 policy, TrivialAugment or RandAugment), normalisation, random erasing and cutout, each a
few tensor operations over the whole batch.

Everything a batch draws is drawn first, on the CPU, from the batch's own generator
(``BatchAugment.draw`` returns it as ``Draws``), and then applied where the images are: a batch draws
the same numbers on a CPU and a GPU, a GPU never waits on a random number, and a test can check every
image against what it drew.

The policies are torchvision's (``v2.AutoAugment``, ``v2.TrivialAugmentWide``,
``v2.RandAugment``): the same operations, magnitudes, probabilities and signs, read from
torchvision's own tables. Each operation takes a magnitude per image and keeps the pixels as
integer levels 0-255 in float32, rounded as torchvision's uint8 kernels round them; the shears,
translations and rotations sample a grid built as torchvision builds it (nearest pixel, black
outside). On the CPU every operation gives torchvision's result bit for bit
(``tests/unit/test_augment.py``); what differs from the one-image-at-a-time path is only which
random numbers each image gets.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import Tensor
from torchvision.transforms import v2
from torchvision.transforms.v2 import functional as TF

from vitviz.models.config import Preprocess
from vitviz.models.data import normalise

# Every operation a policy may draw, in one order: a batch's draws index into it.
OPS = (
    "Identity", "ShearX", "ShearY", "TranslateX", "TranslateY", "Rotate", "Brightness", "Color",
    "Contrast", "Sharpness", "Posterize", "Solarize", "AutoContrast", "Equalize", "Invert",
)  # fmt: skip
POLICIES = {"autoaugment": v2.AutoAugment, "trivialaugment": v2.TrivialAugmentWide, "randaugment": v2.RandAugment}


def to_device(tensor: Tensor, device: torch.device) -> Tensor:
    """A small CPU tensor (indices, draws) on ``device``, copied without making the CPU wait."""
    if device.type == "cpu":
        return tensor
    return tensor.pin_memory().to(device, non_blocking=True)


# ---------------------------------------------------------------------------------------------
# The policies' operations on (n, C, H, W) float32 levels 0-255, one magnitude per image
# ---------------------------------------------------------------------------------------------


def _each(values: Tensor) -> Tensor:
    """(n,) -> (n, 1, 1, 1) float32, to scale each image by its own value."""
    return values.float().view(-1, 1, 1, 1)


def _blend(levels: Tensor, other: Tensor, ratio: Tensor) -> Tensor:
    """ratio * levels + (1 - ratio) * other, clamped and rounded down as a uint8 result is."""
    return torch.addcmul(levels * _each(ratio), other, _each(1.0 - ratio)).clamp_(0, 255).floor_()


def _grey(levels: Tensor) -> Tensor:
    """(n, 1, H, W) luma levels, rounded down (torchvision's weights)."""
    if levels.shape[1] == 1:
        return levels.clone()
    red, green, blue = levels.unbind(dim=1)
    return red.mul(0.2989).add_(green, alpha=0.587).add_(blue, alpha=0.114).unsqueeze(1).floor_()


def _warp(levels: Tensor, matrix: Tensor) -> Tensor:
    """Sample each image at its (n, 2, 3) inverse affine ``matrix``, which maps an output pixel's
    centre (x, y, 1), counted from the image's centre in pixels, to where it reads from; nearest
    pixel, black outside (torchvision's ``affine`` with fill None)."""
    n, _, height, width = levels.shape
    device = levels.device
    xs = torch.linspace((1.0 - width) * 0.5, (width - 1.0) * 0.5, width, device=device)
    ys = torch.linspace((1.0 - height) * 0.5, (height - 1.0) * 0.5, height, device=device)
    base = torch.stack(torch.meshgrid(ys, xs, indexing="ij")[::-1] + (torch.ones(height, width, device=device),), -1)
    scale = torch.tensor([0.5 * width, 0.5 * height], device=device)
    rescaled = matrix.float().transpose(1, 2) / scale  # (n, 3, 2): to grid_sample's [-1, 1]
    grid = (base.view(1, height * width, 3) @ rescaled).view(n, height, width, 2)
    return F.grid_sample(levels, grid, mode="nearest", padding_mode="zeros", align_corners=False)


def _affine(rows: list[list[Tensor | float]], like: Tensor) -> Tensor:
    """(n, 2, 3) float64 matrices from rows of per-image values and constants."""
    n = like.shape[0]
    return torch.stack([torch.stack([torch.as_tensor(v, dtype=torch.float64, device=like.device).expand(n) for v in row], -1) for row in rows], 1)  # fmt: skip


def _shear_x(levels: Tensor, magnitude: Tensor) -> Tensor:
    """x reads from x + m * y, y counted from the top edge (PIL's and torchvision's centre [0, 0])."""
    m = torch.tan(torch.atan(magnitude))  # torchvision passes atan(m) degrees and takes its tangent
    half = levels.shape[2] * 0.5
    return _warp(levels, _affine([[1.0, m, m * half], [0.0, 1.0, 0.0]], magnitude))


def _shear_y(levels: Tensor, magnitude: Tensor) -> Tensor:
    m = torch.tan(torch.atan(magnitude))
    half = levels.shape[3] * 0.5
    return _warp(levels, _affine([[1.0, 0.0, 0.0], [m, 1.0, m * half]], magnitude))


def _translate_x(levels: Tensor, magnitude: Tensor) -> Tensor:
    """Shift by a whole number of pixels (the magnitude truncated, as ``int()`` does)."""
    return _warp(levels, _affine([[1.0, 0.0, -magnitude.trunc()], [0.0, 1.0, 0.0]], magnitude))


def _translate_y(levels: Tensor, magnitude: Tensor) -> Tensor:
    return _warp(levels, _affine([[1.0, 0.0, 0.0], [0.0, 1.0, -magnitude.trunc()]], magnitude))


def _rotate(levels: Tensor, magnitude: Tensor) -> Tensor:
    """Rotate about the centre by ``magnitude`` degrees, counter-clockwise."""
    angle = torch.deg2rad(magnitude)
    cos, sin = torch.cos(angle), torch.sin(angle)
    return _warp(levels, _affine([[cos, -sin, 0.0], [sin, cos, 0.0]], magnitude))


def _brightness(levels: Tensor, magnitude: Tensor) -> Tensor:
    return (levels * _each(1.0 + magnitude)).clamp_(0, 255).floor_()


def _color(levels: Tensor, magnitude: Tensor) -> Tensor:
    if levels.shape[1] == 1:  # a grey image has no saturation (PIL's behaviour)
        return levels
    return _blend(levels, _grey(levels), 1.0 + magnitude)


def _contrast(levels: Tensor, magnitude: Tensor) -> Tensor:
    mean = _grey(levels).mean(dim=(1, 2, 3), keepdim=True)
    return _blend(levels, mean, 1.0 + magnitude)


def _sharpness(levels: Tensor, magnitude: Tensor) -> Tensor:
    """Blend with a 3 x 3 smoothing (5 in the middle, 1 around, over 13); the border keeps its pixels."""
    channels = levels.shape[1]
    kernel = torch.tensor([[1.0, 1.0, 1.0], [1.0, 5.0, 1.0], [1.0, 1.0, 1.0]], device=levels.device) / 13.0
    blurred = F.conv2d(levels, kernel.expand(channels, 1, 3, 3), groups=channels).round_()  # (n, C, H-2, W-2)
    out = levels.clone()
    inner = out[..., 1:-1, 1:-1]
    inner.addcmul_(blurred - inner, _each(-magnitude))  # 1 - (1 + m): how far towards the smoothing
    return out.clamp_(0, 255).floor_()


def _posterize(levels: Tensor, magnitude: Tensor) -> Tensor:
    """Keep the top ``int(m)`` bits of every level."""
    bits = magnitude.long().view(-1, 1, 1, 1)
    mask = ((1 << bits) - 1) << (8 - bits)  # 8 bits: 255, nothing changes
    return (levels.long() & mask).float()


def _solarize(levels: Tensor, magnitude: Tensor) -> Tensor:
    """Invert every level at or above 255 * m (compared in float32, as torchvision's uint8 kernel
    compares a level with its threshold)."""
    threshold = (255.0 * magnitude).float().view(-1, 1, 1, 1)
    return torch.where(levels >= threshold, 255.0 - levels, levels)


def _autocontrast(levels: Tensor, magnitude: Tensor) -> Tensor:
    """Stretch each channel to 0-255 (a flat channel stays as it is)."""
    low = levels.amin(dim=(2, 3), keepdim=True)
    high = levels.amax(dim=(2, 3), keepdim=True)
    flat = high == low
    step = (high - low) * (1.0 / 255.0)
    low, step = low.masked_fill(flat, 0.0), step.masked_fill(flat, 1.0)
    return ((levels - low) / step).clamp_(0, 255).floor_()


def _equalize(levels: Tensor, magnitude: Tensor) -> Tensor:
    return TF.equalize(levels.to(torch.uint8)).float()  # torchvision's, already batched


def _invert(levels: Tensor, magnitude: Tensor) -> Tensor:
    return 255.0 - levels


OPERATIONS: dict[str, Callable[[Tensor, Tensor], Tensor]] = {
    "ShearX": _shear_x, "ShearY": _shear_y, "TranslateX": _translate_x, "TranslateY": _translate_y,
    "Rotate": _rotate, "Brightness": _brightness, "Color": _color, "Contrast": _contrast,
    "Sharpness": _sharpness, "Posterize": _posterize, "Solarize": _solarize,
    "AutoContrast": _autocontrast, "Equalize": _equalize, "Invert": _invert,
}  # fmt: skip


def apply_ops(levels: Tensor, ops: Tensor, magnitudes: Tensor) -> Tensor:
    """Each image's own operation: the batch sorted by operation (on the CPU, where the draws
    are), each operation applied to its run of images, then the batch put back in order.

    Args:
        levels: (B, C, H, W) float32 levels 0-255 on any device.
        ops: (B,) CPU indices into OPS.
        magnitudes: (B,) CPU float64, each image's magnitude (signed where the operation is).
    """
    counts = torch.bincount(ops, minlength=len(OPS)).tolist()
    if counts[0] == len(ops):  # every image drew Identity
        return levels
    order = torch.argsort(ops, stable=True)
    device = levels.device
    ordered = levels[to_device(order, device)]
    values = to_device(magnitudes[order], device)
    start = 0
    for name, count in zip(OPS, counts, strict=True):
        if count and name != "Identity":
            ordered[start : start + count] = OPERATIONS[name](
                ordered[start : start + count], values[start : start + count]
            )
        start += count
    return ordered[to_device(torch.argsort(order), device)]


# ---------------------------------------------------------------------------------------------
# The policies: what each image draws
# ---------------------------------------------------------------------------------------------


class Policy:
    """torchvision's policy ``name`` as tables, drawn for a whole batch at once.

    "autoaugment": AutoAugment's CIFAR-10 policy (25 pairs of operations, each applied with its
    probability at its magnitude); "trivialaugment": TrivialAugmentWide (one operation, a
    magnitude bin of 31 drawn uniformly); "randaugment": RandAugment (two operations at bin 9 of
    31). A signed magnitude is negated with probability 1/2, as torchvision does.
    """

    def __init__(self, name: str, height: int, width: int) -> None:
        if name not in POLICIES:
            raise ValueError(f"--augment must be one of {', '.join(POLICIES)} or none, not {name!r}.")
        self.name = name
        transform = v2.AutoAugment(v2.AutoAugmentPolicy.CIFAR10) if name == "autoaugment" else POLICIES[name]()
        space = transform._AUGMENTATION_SPACE  # name -> (magnitudes of each bin, signed)
        if name == "autoaugment":
            pairs = transform._policies  # ((name, probability, bin), (name, probability, bin))
            self.ops = torch.tensor([[OPS.index(op) for op, _, _ in pair] for pair in pairs])  # (25, 2)
            self.probability = torch.tensor([[p for _, p, _ in pair] for pair in pairs], dtype=torch.float64)
            self.magnitude = torch.tensor(
                [[_bin(space, op, 10, height, width, index) for op, _, index in pair] for pair in pairs],
                dtype=torch.float64,
            )
            self.signed = torch.tensor([[space[op][1] for op, _, _ in pair] for pair in pairs])
            return
        self.space_ops = torch.tensor([OPS.index(op) for op in space])  # (K,): the space's operations
        bins = transform.num_magnitude_bins
        self.bins = torch.tensor(
            [[_bin(space, op, bins, height, width, index) for index in range(bins)] for op in space],
            dtype=torch.float64,
        )  # (K, bins)
        self.space_signed = torch.tensor([space[op][1] for op in space])
        self.slots = 1 if name == "trivialaugment" else transform.num_ops
        self.fixed_bin = None if name == "trivialaugment" else transform.magnitude

    def draw(self, n: int, generator: torch.Generator) -> tuple[Tensor, Tensor]:
        """(slots, n) operations (indices into OPS) and (slots, n) float64 magnitudes."""
        if self.name == "autoaugment":
            pair = torch.randint(len(self.ops), (n,), generator=generator)
            applied = torch.rand(n, 2, generator=generator, dtype=torch.float64) <= self.probability[pair]
            negated = self.signed[pair] & (torch.rand(n, 2, generator=generator) <= 0.5)
            ops = torch.where(applied, self.ops[pair], 0)  # 0: Identity
            magnitudes = torch.where(negated, -self.magnitude[pair], self.magnitude[pair])
            return ops.T.contiguous(), magnitudes.masked_fill(~applied, 0.0).T.contiguous()
        which = torch.randint(len(self.space_ops), (self.slots, n), generator=generator)
        if self.fixed_bin is None:
            index = torch.randint(self.bins.shape[1], (self.slots, n), generator=generator)
        else:
            index = torch.full((self.slots, n), self.fixed_bin)
        magnitudes = self.bins[which, index]
        negated = self.space_signed[which] & (torch.rand(self.slots, n, generator=generator) <= 0.5)
        return self.space_ops[which], torch.where(negated, -magnitudes, magnitudes)


def _bin(space: dict, op: str, bins: int, height: int, width: int, index: int | None) -> float:
    """The magnitude of bin ``index`` of an operation in torchvision's space (0 for none)."""
    values = space[op][0](bins, height, width)
    return 0.0 if values is None or index is None else float(values[index])


# ---------------------------------------------------------------------------------------------
# A batch: draws, then crop + flip, policy, normalise, erase, cut out
# ---------------------------------------------------------------------------------------------


@dataclass
class Draws:
    """Everything one batch of B images drew, on the CPU.

    Attributes:
        top, left: (B,) where each crop begins in the image padded by ``padding`` a side (0 to 2 p).
        flip: (B,) bool, mirrored left to right after the crop.
        ops, magnitudes: (slots, B) the policy's operations (indices into OPS) and magnitudes.
        erase: (B, 4) top, left, height, width of each erased box (height 0: not erased).
        cutout: (B, 2) top, left of each cut-out square.
    """

    top: Tensor
    left: Tensor
    flip: Tensor
    ops: Tensor
    magnitudes: Tensor
    erase: Tensor
    cutout: Tensor


def reflect(index: Tensor, size: int) -> Tensor:
    """Indices into a padded row mapped back into [0, size) by reflection about the edge pixels
    (``F.pad(..., mode="reflect")``: index -1 reads 1, index size reads size - 2)."""
    index = index.abs()
    return torch.where(index > size - 1, 2 * (size - 1) - index, index)


def crop_and_flip(images: Tensor, top: Tensor, left: Tensor, flip: Tensor, padding: int) -> Tensor:
    """(B, C, H, W) crops of the images reflect-padded by ``padding``, each beginning at its (top,
    left) of the padded image and mirrored where ``flip``: one gather of rows, one of columns.
    The draws may be on the CPU; the result stays where the images are."""
    batch, channels, height, width = images.shape
    if padding == 0 and not flip.any():
        return images
    device = images.device
    rows = reflect(top[:, None] - padding + torch.arange(height), height)  # (B, H)
    cols = left[:, None] - padding + torch.arange(width)  # (B, W)
    cols = reflect(torch.where(flip[:, None], cols.flip(1), cols), width)
    rows, cols = to_device(rows, device), to_device(cols, device)
    images = images.gather(2, rows.view(batch, 1, height, 1).expand(batch, channels, height, width))
    return images.gather(3, cols.view(batch, 1, 1, width).expand(batch, channels, height, width))


def box_mask(boxes: Tensor, height: int, width: int) -> Tensor:
    """(B, H, W) bool: inside each image's (top, left, box height, box width)."""
    rows = torch.arange(height, device=boxes.device).view(1, -1, 1)
    cols = torch.arange(width, device=boxes.device).view(1, 1, -1)
    top, left, tall, wide = (boxes[:, i].view(-1, 1, 1) for i in range(4))
    return (rows >= top) & (rows < top + tall) & (cols >= left) & (cols < left + wide)


def draw_erasing(n: int, height: int, width: int, prob: float, generator: torch.Generator) -> Tensor:
    """(n, 4) boxes as ``v2.RandomErasing(p=prob)`` draws them: 2-33% of the area, aspect ratio
    0.3-3.3 (log-uniform), up to 10 tries for a box that fits; height 0 where nothing is erased."""
    chosen = torch.rand(n, generator=generator) < prob
    area = height * width * (0.02 + 0.31 * torch.rand(n, 10, generator=generator, dtype=torch.float64))
    ratio = torch.exp(math.log(0.3) + (math.log(3.3) - math.log(0.3)) * torch.rand(n, 10, generator=generator, dtype=torch.float64))  # fmt: skip
    tall, wide = torch.sqrt(area * ratio).round().long(), torch.sqrt(area / ratio).round().long()
    fits = (tall < height) & (wide < width)
    first = fits.long().argmax(dim=1)  # the first try that fits
    tall, wide = tall.gather(1, first[:, None])[:, 0], wide.gather(1, first[:, None])[:, 0]
    erased = chosen & fits.any(dim=1)
    where = torch.rand(n, 2, generator=generator, dtype=torch.float64)
    top = (where[:, 0] * (height - tall + 1)).floor().long()
    left = (where[:, 1] * (width - wide + 1)).floor().long()
    return torch.stack([top, left, tall, wide], 1) * erased[:, None]


class BatchAugment:
    """A training batch's augmentation, whole-batch: draw on the CPU, then apply on the device.

    Args:
        size: (height, width) of the images.
        pre: the model's normalisation.
        crop_padding: random crops of the image reflect-padded this many pixels a side; 0: none.
        flip: mirror half the images left to right.
        policy: "autoaugment", "trivialaugment", "randaugment" or "none".
        random_erasing: the fraction of images with one box erased (to 0, the mean colour).
        cutout: the side of a square set to 0 inside every image; 0: none.
    """

    def __init__(
        self, size: tuple[int, int], pre: Preprocess, crop_padding: int = 0, flip: bool = False,
        policy: str = "none", random_erasing: float = 0.0, cutout: int = 0,
    ) -> None:  # fmt: skip
        self.height, self.width = size
        self.pre, self.padding, self.flip = pre, crop_padding, flip
        self.policy = Policy(policy, *size) if policy != "none" else None
        self.random_erasing, self.cutout = random_erasing, cutout

    def draw(self, n: int, generator: torch.Generator) -> Draws:
        """What n images get, in a fixed order of draws from ``generator``."""
        shift = torch.randint(0, 2 * self.padding + 1, (2, n), generator=generator)
        flip = torch.rand(n, generator=generator) < 0.5
        if self.policy is not None:
            ops, magnitudes = self.policy.draw(n, generator)
        else:
            ops, magnitudes = torch.zeros(0, n, dtype=torch.long), torch.zeros(0, n, dtype=torch.float64)
        erase = draw_erasing(n, self.height, self.width, self.random_erasing, generator)
        side = max(self.cutout, 1)
        corner = torch.stack(
            [
                torch.randint(0, self.height - side + 1, (n,), generator=generator),
                torch.randint(0, self.width - side + 1, (n,), generator=generator),
            ],
            1,
        )
        return Draws(shift[0], shift[1], flip & self.flip, ops, magnitudes, erase, corner)

    def __call__(self, images: Tensor, draws: Draws) -> Tensor:
        """(B, C, H, W) uint8 images -> the normalised (B, C, H, W) float32 batch, where they are."""
        images = crop_and_flip(images, draws.top, draws.left, draws.flip, self.padding)
        levels = images.float()
        for ops, magnitudes in zip(draws.ops, draws.magnitudes, strict=True):
            levels = apply_ops(levels, ops, magnitudes)
        pixels = normalise(levels / 255.0, self.pre)
        if self.random_erasing > 0:
            erased = box_mask(to_device(draws.erase, images.device), self.height, self.width)
            pixels = pixels.masked_fill(erased[:, None], 0.0)
        if self.cutout > 0:
            square = torch.cat([draws.cutout, torch.full_like(draws.cutout, self.cutout)], 1)
            pixels = pixels.masked_fill(
                box_mask(to_device(square, images.device), self.height, self.width)[:, None], 0.0
            )
        return pixels
