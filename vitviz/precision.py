"""Reduced precision where the hardware has it: bf16 autocast for the explained forward pass.

CPUs with AVX-512 BF16 or AMX (and CUDA GPUs with bf16) multiply bf16 matrices natively, about
twice as fast as float32 for ViT-B/16; on other CPUs bf16 is emulated and slower. A small model
(the CIFAR ViT's 65 tokens) can be slower in bf16 even where it is native, because casting costs
more than its matrix products save. So the app measures both on the model it serves
(``choose``) and keeps float32 unless bf16 is clearly faster there and leaves the attention
maps within 0.01. A Trace made in bf16 is handed on in float32 (``explain``): every page
computes and draws from float32 tensors either way, each converted when a page first reads it
(``Trace.read_in_float32``), not the whole trace up front.

Batched passes (the occlusion curves' 34 images, the CNN beside the ViT) are measured apart
(``choose_batched``): a batch fills the matrix units that one small image leaves idle, so there
bf16 can be worth it where the explained pass is not; they answer in float32 logits either way.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any, TypeVar

import torch
from torch import Tensor, nn

from vitviz.trace import Trace


@cache
def _cpu_flags() -> frozenset[str]:
    cpuinfo = Path("/proc/cpuinfo")
    if not cpuinfo.exists():
        return frozenset()
    for line in cpuinfo.read_text().splitlines():
        if line.startswith("flags"):
            return frozenset(line.split(":", 1)[1].split())
    return frozenset()


def native_bf16(device: torch.device) -> bool:
    """Whether ``device`` multiplies bf16 natively: a CUDA GPU with bf16, or a CPU with AVX-512 BF16 or AMX."""
    if device.type == "cuda":
        return torch.cuda.is_bf16_supported()
    if device.type == "cpu":
        return bool({"avx512_bf16", "amx_bf16"} & _cpu_flags())
    return False


BF16_WORTH = 0.8  # bf16 at most this fraction of float32's time
ATTENTION_TOLERANCE = 1e-2  # the most bf16 may move an attention weight
PROBABILITY_TOLERANCE = 1e-2  # the most bf16 may move a class probability of a batched pass
BATCH = 16  # images in the batched pass measured (the prediction page's occlusion curves: 2 x 17)


@dataclass(frozen=True)
class Batched:
    """The precision a model's batched forward passes run in (the occlusion curves, the CNN
    beside the ViT, the comparison's experiments), and what was measured to choose it.

    A batch fills the matrix units that one image of a small model leaves idle: the shipped
    CIFAR ViT explains one image about as fast in bf16 as in float32, but a batch of its occluded
    copies in about 0.6 of the time (docs/benchmarks.md).

    Attributes:
        dtype: torch.bfloat16 (autocast) or torch.float32.
        float32_ms, bf16_ms: median time of one batch of ``BATCH`` images in each (None when bf16
            was not tried).
        probability_diff: the largest change bf16 made to a class probability of the batch (None
            when bf16 was not tried).
    """

    dtype: torch.dtype = torch.float32
    float32_ms: float | None = None
    bf16_ms: float | None = None
    probability_diff: float | None = None

    @property
    def speedup(self) -> float | None:
        """float32 time over bf16 time, when both were measured."""
        if self.float32_ms is None or self.bf16_ms is None:
            return None
        return self.float32_ms / self.bf16_ms


@dataclass(frozen=True)
class Precision:
    """The precision a model's explained forward pass runs in, and what was measured to choose it.

    Attributes:
        dtype: torch.bfloat16 (autocast) or torch.float32.
        float32_ms: median time of one explained image in float32 (None when bf16 was not tried).
        bf16_ms: the same in bf16 autocast (None when the device has no native bf16).
        attention_diff: the largest change bf16 made to an attention weight of the probe images
            (None when bf16 was not tried).
        batched: the precision of the model's batched passes, measured apart (``choose_batched``).
    """

    dtype: torch.dtype = torch.float32
    float32_ms: float | None = None
    bf16_ms: float | None = None
    attention_diff: float | None = None
    batched: Batched = Batched()

    @property
    def name(self) -> str:
        return "bfloat16" if self.dtype == torch.bfloat16 else "float32"

    @property
    def speedup(self) -> float | None:
        """float32 time over bf16 time, when both were measured."""
        if self.float32_ms is None or self.bf16_ms is None:
            return None
        return self.float32_ms / self.bf16_ms


def attention_moved(exact: Trace, reduced: Trace) -> float:
    """The largest difference between two traces' attention weights (every layer, head, query, key)."""
    return max((a - b).abs().max().item() for a, b in zip(exact.attentions, reduced.attentions, strict=True))


def explain(model: nn.Module, pixels: Tensor, dtype: torch.dtype = torch.float32) -> Trace:
    """``model.explain(pixels)`` without gradients, under bf16 autocast when asked, on the CPU,
    read in float32: a bf16 trace keeps its per-block tensors in bf16 until a reader asks for
    one (``Trace.read_in_float32``), and a float32 trace has the same read-only lists.

    Args:
        model: a VisionTransformer (anything with ``explain`` returning a Trace).
        pixels: (B, C, H, W) on the model's device.
        dtype: torch.float32, or torch.bfloat16 for autocast.
    """
    reduced = dtype == torch.bfloat16
    with torch.no_grad(), torch.autocast(pixels.device.type, dtype=torch.bfloat16, enabled=reduced):
        trace = model.explain(pixels)
    trace = trace.detach().read_in_float32()
    return dataclasses.replace(trace, computed_in="bfloat16") if reduced else trace


def classify(model: nn.Module, pixels: Tensor, dtype: torch.dtype = torch.float32) -> Tensor:
    """``model(pixels)`` without gradients, under bf16 autocast when asked: the logits in float32."""
    with torch.no_grad(), autocast(pixels.device, dtype):
        return model(pixels).float()


def autocast(device: torch.device, dtype: torch.dtype) -> torch.autocast:
    """bf16 autocast on ``device`` for ``dtype`` torch.bfloat16; a context that changes nothing
    for float32."""
    return torch.autocast(device.type, dtype=torch.bfloat16, enabled=dtype == torch.bfloat16)


SETTINGS = ("auto", "float32", "bfloat16")

T = TypeVar("T")


def _timed(clock: Callable[[], float], device: torch.device, run: Callable[..., T], *args: Any) -> tuple[T, float]:
    """``run(*args)`` and the seconds it took on ``device`` (a GPU's queue waited for)."""
    start = clock()
    result = run(*args)
    if device.type == "cuda":
        torch.cuda.synchronize(device)
    return result, clock() - start


def choose(
    model: nn.Module,
    probes: Tensor,
    setting: str = "auto",
    repeats: int = 2,
    clock: Callable[[], float] = time.perf_counter,
) -> Precision:
    """Time the explained pass in float32 and in bf16 (after one warm-up each, alternating) and
    keep bf16 only where the device has it natively, it was clearly faster (``BF16_WORTH``) and
    it moved no attention weight of the probe by more than ``ATTENTION_TOLERANCE``: rounding the
    numbers a class reads must buy real speed (ViT-B/16: 3x; the shipped CIFAR ViT: about 1.1x,
    so float32) and change no map visibly (bf16 moved a weight of an earlier CIFAR ViT's
    attention on the cat sample by 0.013).

    Args:
        model: the model the app serves.
        probes: preprocessed images (N, C, H, W) on the model's device, explained one at a time:
            the rounds go through them (at least one round each), and bf16 must leave every
            one's attention maps within ``ATTENTION_TOLERANCE``. Real photos, not noise: a
            sharper map moves more (that CIFAR ViT: 0.005 on noise, 0.013 on a cat).
        setting: "auto" (measure), or "float32" / "bfloat16" to decide without measuring (a
            server's VITVIZ_PRECISION; bfloat16 still needs native bf16).
        repeats: timed runs of each, after the warm-up.
        clock: seconds (a test can give a clock of its own).

    Raises:
        ValueError: for a setting not in SETTINGS.
    """
    if setting not in SETTINGS:
        raise ValueError(f"VITVIZ_PRECISION must be one of {', '.join(SETTINGS)}, not {setting!r}.")
    if setting == "float32" or not native_bf16(probes.device):
        return Precision()
    if setting == "bfloat16":
        return Precision(torch.bfloat16)
    runs: dict[torch.dtype, list[float]] = {torch.float32: [], torch.bfloat16: []}
    moved = 0.0
    for round_ in range(max(repeats + 1, len(probes))):
        pixels = probes[round_ % len(probes)][None]  # (1, C, H, W)
        traces: dict[torch.dtype, Trace] = {}
        for dtype, times in runs.items():
            traces[dtype], elapsed = _timed(clock, pixels.device, explain, model, pixels, dtype)
            if round_:  # the first round warms up
                times.append(elapsed)
        moved = max(moved, attention_moved(traces[torch.float32], traces[torch.bfloat16]))
    float32_ms, bf16_ms = (1e3 * sorted(times)[len(times) // 2] for times in runs.values())
    worth = bf16_ms <= BF16_WORTH * float32_ms and moved <= ATTENTION_TOLERANCE
    dtype = torch.bfloat16 if worth else torch.float32
    return Precision(dtype, float32_ms, bf16_ms, moved)


def choose_batched(
    model: nn.Module,
    probes: Tensor,
    setting: str = "auto",
    repeats: int = 2,
    clock: Callable[[], float] = time.perf_counter,
) -> Batched:
    """Time a batch of ``BATCH`` images (the probes, repeated) through ``model`` in float32 and in
    bf16 (after one warm-up each, alternating) and keep bf16 only where the device has it
    natively, it was clearly faster (``BF16_WORTH``) and it moved no class probability by more
    than ``PROBABILITY_TOLERANCE``: for any classifier (a ViT or a CNN).

    Args: as ``choose``; ``probes`` (N, C, H, W) on the model's device.
    """
    if setting not in SETTINGS:
        raise ValueError(f"VITVIZ_PRECISION must be one of {', '.join(SETTINGS)}, not {setting!r}.")
    if setting == "float32" or not native_bf16(probes.device):
        return Batched()
    if setting == "bfloat16":
        return Batched(torch.bfloat16)
    batch = probes.repeat((BATCH + len(probes) - 1) // len(probes), 1, 1, 1)[:BATCH]
    runs: dict[torch.dtype, list[float]] = {torch.float32: [], torch.bfloat16: []}
    probabilities: dict[torch.dtype, Tensor] = {}
    for round_ in range(repeats + 1):
        for dtype, times in runs.items():
            logits, elapsed = _timed(clock, batch.device, classify, model, batch, dtype)
            probabilities[dtype] = logits.softmax(dim=-1)
            if round_:  # the first round warms up
                times.append(elapsed)
    moved = (probabilities[torch.float32] - probabilities[torch.bfloat16]).abs().max().item()
    float32_ms, bf16_ms = (1e3 * sorted(times)[len(times) // 2] for times in runs.values())
    worth = bf16_ms <= BF16_WORTH * float32_ms and moved <= PROBABILITY_TOLERANCE
    return Batched(torch.bfloat16 if worth else torch.float32, float32_ms, bf16_ms, moved)
