import dataclasses

import pytest
import torch

from vitviz.models import precision
from vitviz.models.config import ViTConfig
from vitviz.models.model import VisionTransformer

CONFIG = ViTConfig(image_size=32, patch_size=8, embed_dim=64, depth=2, num_heads=4, num_classes=10)


@pytest.fixture(scope="module")
def model():
    torch.manual_seed(0)
    return VisionTransformer(CONFIG).eval()


def test_a_bf16_trace_comes_back_in_float32_close_to_the_float32_one(model):
    pixels = torch.randn(2, 3, 32, 32, generator=torch.Generator().manual_seed(1))
    exact = precision.explain(model, pixels)
    reduced = precision.explain(model, pixels, torch.bfloat16)
    assert all(t.dtype == torch.float32 for t in [reduced.logits, reduced.tokens, *reduced.attentions])
    assert not reduced.logits.requires_grad
    difference = max((a - b).abs().max().item() for a, b in zip(exact.attentions, reduced.attentions, strict=True))
    assert 0 < difference < 1e-2  # it did run in bf16, and the maps stay within 1e-2
    assert torch.equal(exact.logits.argmax(-1), reduced.logits.argmax(-1))


def clock_of(durations):
    """A clock whose successive (start, end) readings are the given durations apart."""
    now, readings = 0.0, []
    for duration in durations:
        readings += [now, now + duration]
        now += duration + 1.0
    return iter(readings).__next__


def test_choose_keeps_the_faster_where_bf16_is_native(model, monkeypatch):
    monkeypatch.setattr(precision, "native_bf16", lambda device: True)
    pixels = torch.randn(1, 3, 32, 32)
    # rounds alternate float32, bf16; the first round warms up
    faster_bf16 = precision.choose(model, pixels, clock=clock_of([9, 9, 0.030, 0.010, 0.032, 0.011]))
    assert faster_bf16.dtype == torch.bfloat16 and faster_bf16.name == "bfloat16"
    assert faster_bf16.float32_ms == pytest.approx(32) and faster_bf16.bf16_ms == pytest.approx(11)
    assert faster_bf16.speedup == pytest.approx(32 / 11)
    slower_bf16 = precision.choose(model, pixels, clock=clock_of([9, 9, 0.010, 0.030, 0.011, 0.032]))
    assert slower_bf16.dtype == torch.float32 and slower_bf16.speedup == pytest.approx(11 / 32)


def test_choose_measures_nothing_where_bf16_is_not_native(model, monkeypatch):
    def no_clock():
        raise AssertionError("nothing should be timed")

    monkeypatch.setattr(precision, "native_bf16", lambda device: False)
    assert precision.choose(model, torch.randn(1, 3, 32, 32), clock=no_clock) == precision.Precision()


def test_the_server_serves_float32_unless_it_sets_bfloat16_and_times_nothing(monkeypatch):
    """A number shown to a class never depends on a timing (issue 55): ``served`` reads the setting."""
    cpu = torch.device("cpu")

    def no_timing(*args, **kwargs):
        raise AssertionError("nothing should be timed")

    monkeypatch.setattr(precision, "choose", no_timing)
    monkeypatch.setattr(precision, "native_bf16", lambda device: True)
    assert precision.served(None, cpu) == precision.served("float32", cpu) == precision.Precision()
    chosen = precision.served("bfloat16", cpu)
    assert chosen.dtype == torch.bfloat16 and chosen.speedup is None
    monkeypatch.setattr(precision, "native_bf16", lambda device: False)
    assert precision.served("bfloat16", cpu).dtype == torch.float32  # not native
    for setting in ("auto", "fp16"):  # "auto" timed the machine before issue 55
        with pytest.raises(ValueError, match="VITVIZ_PRECISION must be one of float32, bfloat16"):
            precision.served(setting, cpu)


def test_native_bf16_reads_the_cpu_flags(monkeypatch):
    cpu = torch.device("cpu")
    monkeypatch.setattr(precision, "_cpu_flags", lambda: frozenset({"avx2", "avx512f"}))
    assert not precision.native_bf16(cpu)  # AVX-512 alone emulates bf16
    monkeypatch.setattr(precision, "_cpu_flags", lambda: frozenset({"avx512f", "avx512_bf16"}))
    assert precision.native_bf16(cpu)
    monkeypatch.setattr(precision, "_cpu_flags", lambda: frozenset({"amx_bf16"}))
    assert precision.native_bf16(cpu)
    assert not precision.native_bf16(torch.device("meta"))


def test_bf16_must_be_clearly_faster_and_leave_the_attention_maps_within_a_hundredth(model, monkeypatch):
    monkeypatch.setattr(precision, "native_bf16", lambda device: True)
    pixels = torch.randn(1, 3, 32, 32)
    slightly = precision.choose(model, pixels, clock=clock_of([9, 9, 0.040, 0.036, 0.040, 0.036]))
    assert slightly.dtype == torch.float32 and slightly.speedup == pytest.approx(40 / 36)  # 1.1x: not worth it
    assert slightly.attention_diff is not None and slightly.attention_diff <= precision.ATTENTION_TOLERANCE
    real = precision.explain

    def rounding_too_much(model, pixels, dtype=torch.float32):
        trace = real(model, pixels, dtype)
        if dtype != torch.bfloat16:
            return trace
        return dataclasses.replace(trace, attentions=[a + 0.02 for a in trace.attentions])

    monkeypatch.setattr(precision, "explain", rounding_too_much)
    moving = precision.choose(model, pixels, clock=clock_of([9, 9, 0.030, 0.010, 0.032, 0.011]))
    assert moving.dtype == torch.float32 and moving.speedup == pytest.approx(32 / 11)  # 2.9x, but the maps moved
    assert moving.attention_diff == pytest.approx(0.02, abs=2e-3)


@pytest.mark.parametrize(("moved", "kept"), [(precision.ATTENTION_TOLERANCE, "bfloat16"), (0.0101, "float32")])
def test_bf16_is_kept_up_to_the_tolerance_whatever_the_weights(model, monkeypatch, moved, kept):
    """What the sidebar's caption says follows the measured move, not today's weights: pinned here."""
    monkeypatch.setattr(precision, "native_bf16", lambda device: True)
    monkeypatch.setattr(precision, "attention_moved", lambda exact, reduced: moved)
    chosen = precision.choose(model, torch.randn(1, 3, 32, 32), clock=clock_of([9, 9, 0.030, 0.010, 0.032, 0.011]))
    assert chosen.name == kept and chosen.attention_diff == moved


def test_classify_answers_float32_logits_close_in_bf16(model):
    pixels = torch.randn(4, 3, 32, 32, generator=torch.Generator().manual_seed(2))
    exact, reduced = precision.classify(model, pixels), precision.classify(model, pixels, torch.bfloat16)
    assert exact.dtype == reduced.dtype == torch.float32 and not reduced.requires_grad
    assert 0 < (exact - reduced).abs().max() < 0.1
    assert torch.equal(exact, model(pixels).detach())
