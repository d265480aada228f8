"""A store shared by every session of the server, bounded by the bytes of what it holds.

Streamlit's caches bound a function's results by their number (``max_entries``), which fits
results of one size. A class of thirty students on thirty images of their own needs thirty
traces at once: twelve entries, enough for ViT-B/16's 48 MB traces, made every student's trace
fall out before their next step (the class recomputed it on every page, docs/benchmarks.md),
while thirty of the CIFAR ViT's traces take about 40 MB. A ``Shelf`` keeps as many as fit in its bytes.
"""

from __future__ import annotations

import collections
import threading
import time
from collections.abc import Callable, Hashable
from typing import Generic, TypeVar

T = TypeVar("T")


class Shelf(Generic[T]):
    """A least-recently-used store, bounded by ``max_bytes`` (``size`` of each value), that builds
    each value once even when many sessions ask for it at the same moment. Values are shared:
    read-only, like every other cached object.

    Args:
        max_bytes: what the values may take together; the least recently used go first (the
            newest always stays, however large).
        size: bytes of a value.
        ttl_s: seconds after which a value is built again (None: never).
        prepare: called on a new value, before it is measured and shared.
    """

    def __init__(
        self,
        max_bytes: int,
        size: Callable[[T], int],
        ttl_s: float | None = None,
        prepare: Callable[[Hashable, T], None] | None = None,
    ) -> None:
        self.max_bytes, self.size, self.ttl_s, self.prepare = max_bytes, size, ttl_s, prepare
        self.values: collections.OrderedDict[Hashable, T] = collections.OrderedDict()
        self.sizes: dict[Hashable, int] = {}
        self.made: dict[Hashable, float] = {}  # key -> when it was built (time.monotonic)
        self.lock = threading.Lock()
        self.building: dict[Hashable, threading.Lock] = {}
        self.built = 0  # values built (misses), for tests and the bench

    def _fresh(self, key: Hashable) -> bool:
        if key not in self.values:
            return False
        if self.ttl_s is not None and time.monotonic() - self.made[key] > self.ttl_s:
            self._drop(key)
            return False
        return True

    def _drop(self, key: Hashable) -> None:
        del self.values[key], self.sizes[key], self.made[key]

    def get(self, key: Hashable, build: Callable[[], T]) -> T:
        with self.lock:
            if self._fresh(key):
                self.values.move_to_end(key)
                return self.values[key]
            one_at_a_time = self.building.setdefault(key, threading.Lock())
        with one_at_a_time:
            with self.lock:
                if self._fresh(key):
                    return self.values[key]
            value = build()
            self.built += 1
            if self.prepare is not None:
                self.prepare(key, value)
            size = self.size(value)
            with self.lock:
                self.values[key], self.sizes[key], self.made[key] = value, size, time.monotonic()
                self.building.pop(key, None)
                while sum(self.sizes.values()) > self.max_bytes and len(self.values) > 1:
                    self._drop(next(iter(self.values)))
        return value

    def clear(self) -> None:
        with self.lock:
            self.values.clear()
            self.sizes.clear()
            self.made.clear()
