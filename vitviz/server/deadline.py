"""A time limit, and a way to be stopped, for the work of one thread.

A visitor's model computes within a time limit, and stops when its visitor leaves; the server's
read-ahead worker stops when the server does. PyTorch cannot interrupt an operation, so the models
ask between their blocks (``check``): work stops at the next block, never in the middle of one.
Nothing is checked on a thread that set no limit.
"""

from __future__ import annotations

import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager

_local = threading.local()
_everything = threading.Event()  # the process is ending: every thread's model stops at its next block


def stop_everything() -> None:
    """Stop the work of every thread at its model's next block, limit or none (the process ends:
    a thread still inside torch when Python tears down aborts it)."""
    _everything.set()


class Stopped(RuntimeError):
    """The work was stopped: ``reason`` is "time" (over its limit, ``seconds``) or "stopped"."""

    def __init__(self, reason: str, seconds: float | None = None) -> None:
        super().__init__(reason if seconds is None else f"{reason} ({seconds:g} s)")
        self.reason, self.seconds = reason, seconds


@contextmanager
def limit(seconds: float | None = None, stopped: Callable[[], bool] | None = None) -> Iterator[None]:
    """Within the block, ``check`` raises ``Stopped`` once ``seconds`` have passed (None: no time
    limit) or once ``stopped()`` is True. Limits nest: the inner one applies until it ends."""
    before = getattr(_local, "limit", None)
    end = None if seconds is None else time.monotonic() + seconds
    _local.limit = (end, seconds, stopped)
    try:
        yield
    finally:
        _local.limit = before


def tighten(seconds: float | None, stopped: Callable[[], bool] | None = None) -> bool:
    """Within a ``limit`` block that has none yet, set its limit from now on (a run that learns
    midway that its model is a visitor's); True when set. Outside a block, or once set, nothing."""
    found = getattr(_local, "limit", None)
    if found is None or found != (None, None, None):
        return False
    _local.limit = (None if seconds is None else time.monotonic() + seconds, seconds, stopped)
    return True


def check() -> None:
    """Raise ``Stopped`` when this thread's limit has passed or its work was stopped (never while
    ``torch.compile`` traces a model: a compiled training step has no limit)."""
    torch = sys.modules.get("torch")
    if torch is not None and torch.compiler.is_compiling():
        return
    if _everything.is_set():
        raise Stopped("stopped")
    found = getattr(_local, "limit", None)
    if found is None:
        return
    end, seconds, stopped = found
    if stopped is not None and stopped():
        raise Stopped("stopped")
    if end is not None and time.monotonic() > end:
        raise Stopped("time", seconds)
