"""Reduced precision where the hardware has it: bf16 autocast for the model's forward passes.

CPUs with AVX-512 BF16 or AMX (and CUDA GPUs with bf16) multiply bf16 matrices natively, about
twice as fast as float32 for ViT-B/16; on other CPUs bf16 is emulated and slower. A small model
(the CIFAR ViT's 65 tokens) can be slower in bf16 even where it is native, because casting costs
more than its matrix products save.

What the app serves (``served``) is never a timing: every pass the pages run shows its numbers to a
class (the maps, the probabilities, the occlusion curves, the CNN beside the ViT), and a precision
picked by a timing taken at the server's start can give the same image "72%" in one process and
"74%" in the next. So the app computes in float32, unless the server's VITVIZ_PRECISION sets
bfloat16 on a device that has it: a choice made once, the same on every run. A Trace made in bf16
is handed on in float32 (``explain``), each tensor converted when a page first reads it
(``Trace.read_in_float32``), not the whole trace up front.

``choose`` measures what bf16 would buy for a model (the benchmark reports it); nothing the app
shows depends on it.
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

from vitviz.models.trace import Trace


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


@dataclass(frozen=True)
class Precision:
    """The precision a model's explained forward pass runs in, and what was measured to choose it.

    Attributes:
        dtype: torch.bfloat16 (autocast) or torch.float32.
        float32_ms: median time of one explained image in float32 (None when bf16 was not tried).
        bf16_ms: the same in bf16 autocast (None when the device has no native bf16).
        attention_diff: the largest change bf16 made to an attention weight of the probe images
            (None when bf16 was not tried).
    """

    dtype: torch.dtype = torch.float32
    float32_ms: float | None = None
    bf16_ms: float | None = None
    attention_diff: float | None = None

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


SETTINGS = ("float32", "bfloat16")  # a server's VITVIZ_PRECISION; float32 unless it says otherwise


def served(setting: str | None, device: torch.device) -> Precision:
    """The precision a server runs the passes its pages show in: float32, or bf16 autocast where
    the server's ``setting`` (VITVIZ_PRECISION) says bfloat16 and ``device`` has it natively.
    Nothing is timed: a number shown to a class never depends on a timing.

    Raises:
        ValueError: for a setting not in SETTINGS ("auto", a timing, included: say which).
    """
    setting = setting or "float32"
    if setting not in SETTINGS:
        raise ValueError(f"VITVIZ_PRECISION must be one of {', '.join(SETTINGS)}, not {setting!r}.")
    return Precision(torch.bfloat16) if setting == "bfloat16" and native_bf16(device) else Precision()


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
    repeats: int = 2,
    clock: Callable[[], float] = time.perf_counter,
) -> Precision:
    """What bf16 would buy for a model: time the explained pass in float32 and in bf16 (after one
    warm-up each, alternating) and call bf16 worth it only where the device has it natively, it
    was clearly faster (``BF16_WORTH``) and it moved no attention weight of the probe by more
    than ``ATTENTION_TOLERANCE`` (ViT-B/16: 3x; the shipped CIFAR ViT: about 1.1x, so float32;
    bf16 moved a weight of an earlier CIFAR ViT's attention on the cat sample by 0.013). The
    benchmark reports it; the app serves what ``served`` says, never a timing.

    Args:
        model: the model measured.
        probes: preprocessed images (N, C, H, W) on the model's device, explained one at a time:
            the rounds go through them (at least one round each), and bf16 must leave every
            one's attention maps within ``ATTENTION_TOLERANCE``. Real photos, not noise: a
            sharper map moves more (that CIFAR ViT: 0.005 on noise, 0.013 on a cat).
        repeats: timed runs of each, after the warm-up.
        clock: seconds (a test can give a clock of its own).
    """
    if not native_bf16(probes.device):
        return Precision()
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
