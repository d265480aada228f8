"""``Compute`` that remembers, for one process: the handout's way outside the app's caches.

The handout (``vitviz.render.handout``) runs every heavy analysis of one image once per build: the
faithfulness curves (gradient rollout, integrated gradients), the occlusion curves, the CNN beside
the ViT and its experiment, the SVD of the patch filters. A second build of the same image in the
same process (the other language, a second click of the app's button, the bench's repeats) reads
them here instead. What a result depends on is its key: the model object, the image's bytes and
the precision its trace was computed in, the method's arguments (and the CNN object beside the ViT).
Results are shared: steps only read them. The handout also keeps here the HTML of the steps about
the model alone (its card, the map of its test set), by language.
"""

from __future__ import annotations

import hashlib
import weakref
from collections import OrderedDict
from collections.abc import Callable, Hashable
from typing import TypeVar

import numpy as np

from vitviz.analyses import compare, faithfulness
from vitviz.models.model import VisionTransformer
from vitviz.steps.subject import Compute, Subject

T = TypeVar("T")

PER_MODEL = 32  # entries a model keeps (about five an image), the least recently read dropped first

# model object -> {key: result}; an entry goes with its model (a model is never changed once loaded)
_MEMORY: weakref.WeakKeyDictionary[VisionTransformer, OrderedDict[Hashable, object]] = weakref.WeakKeyDictionary()


def remember(model: VisionTransformer, key: Hashable, compute: Callable[[], T]) -> T:
    """``compute()`` once per (model, key) for this process; the newest ``PER_MODEL`` kept."""
    entries = _MEMORY.setdefault(model, OrderedDict())
    if key in entries:
        entries.move_to_end(key)
        return entries[key]  # type: ignore[return-value]
    result = compute()
    entries[key] = result  # never the model itself: it would keep its own entry alive
    while len(entries) > PER_MODEL:
        entries.popitem(last=False)
    return result


def forget() -> None:
    """Drop everything remembered (tests; a process that wants its memory back)."""
    _MEMORY.clear()


def _image(subject: Subject) -> tuple[bytes, str]:
    """What a per-image result depends on besides the model: the image's bytes and its trace's precision."""
    return hashlib.blake2b(subject.image_bytes, digest_size=16).digest(), subject.trace.computed_in


class RememberedCompute(Compute):
    """``Compute`` whose heavy analyses are computed once per process and key (see the module)."""

    def occlusion(self, subject: Subject, kind: str, steps: int) -> tuple[np.ndarray, np.ndarray]:
        key = ("occlusion", *_image(subject), kind, steps)
        return remember(subject.model, key, lambda: super(RememberedCompute, self).occlusion(subject, kind, steps))

    def comparison(self, subject: Subject, cnn_name: str, class_index: int, with_ig: bool) -> dict[str, np.ndarray]:
        cnn = self.model(cnn_name).model
        key = ("comparison", *_image(subject), cnn_name, cnn, class_index, with_ig)
        return remember(
            subject.model,
            key,
            lambda: super(RememberedCompute, self).comparison(subject, cnn_name, class_index, with_ig),
        )

    def experiment(
        self, subject: Subject, cnn_name: str, kind: str, shift: int, seed: int, hidden: tuple[int, ...]
    ) -> compare.Experiment:
        cnn = self.model(cnn_name).model
        key = ("experiment", *_image(subject), cnn_name, cnn, kind, shift, seed, hidden)
        return remember(
            subject.model,
            key,
            lambda: super(RememberedCompute, self).experiment(subject, cnn_name, kind, shift, seed, hidden),
        )

    def filter_components(self, subject: Subject) -> tuple[np.ndarray, np.ndarray]:
        return remember(
            subject.model, ("filter_components",), lambda: super(RememberedCompute, self).filter_components(subject)
        )

    def faithfulness(self, subject: Subject) -> faithfulness.Faithfulness:
        key = ("faithfulness", *_image(subject))
        return remember(subject.model, key, lambda: super(RememberedCompute, self).faithfulness(subject))
