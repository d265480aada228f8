"""A thread's time limit and stop signal, as the models check them between blocks."""

from __future__ import annotations

import threading

import pytest
import torch

from vitviz.models.config import ViTConfig
from vitviz.models.model import VisionTransformer
from vitviz.server import deadline


def test_no_limit_no_stop():
    deadline.check()  # outside any block
    with deadline.limit():
        deadline.check()  # a block without a limit yet


def test_a_limit_passed_or_a_stop_raises_with_its_reason():
    with deadline.limit(0.0), pytest.raises(deadline.Stopped) as caught:
        deadline.check()
    assert caught.value.reason == "time" and caught.value.seconds == 0.0
    with deadline.limit(None, stopped=lambda: True), pytest.raises(deadline.Stopped) as caught:
        deadline.check()
    assert caught.value.reason == "stopped"
    with deadline.limit(3600):
        deadline.check()  # far from its end


def test_tighten_sets_a_limit_once_and_only_inside_a_block():
    assert not deadline.tighten(0.0)  # outside a block: nothing
    deadline.check()
    with deadline.limit():
        assert deadline.tighten(0.0)
        assert not deadline.tighten(3600)  # the first one stands
        with pytest.raises(deadline.Stopped):
            deadline.check()
    deadline.check()  # the block's end restores none


def test_limits_nest_and_belong_to_their_thread():
    seen = []
    with deadline.limit(0.0):
        with deadline.limit(3600):
            deadline.check()  # the inner one applies
        with pytest.raises(deadline.Stopped):
            deadline.check()  # the outer one again
        other = threading.Thread(target=lambda: seen.append(deadline.check()))
        other.start()
        other.join()
    assert seen == [None]  # another thread has no limit


def test_a_model_stops_at_its_first_block():
    model = VisionTransformer(ViTConfig(image_size=32, patch_size=8, num_classes=3, embed_dim=32, depth=2, num_heads=2))
    pixels = torch.zeros(1, 3, 32, 32)
    with deadline.limit(0.0):
        for run in (model, model.explain):
            with pytest.raises(deadline.Stopped):
                run(pixels)
    model(pixels)  # without a limit it runs
