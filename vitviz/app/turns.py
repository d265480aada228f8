"""Sessions compute in turns: at most a few runs of the app at once, the others queued in order.

Every session's run is a thread of the server's one process. Thirty students pressing Next in
the same second start thirty threads that share the cores: every student waits as long as the
slowest, and handing the interpreter and the cores round thirty threads costs CPU of its own
(system time, torch's thread teams). Here a run computes only in a turn: ``Turns.slots`` runs at
once (by default one per core), the others wait in the order they came, so the first students
are answered first, and nothing goes to switching (docs/benchmarks.md has the class measured).

A session alone on the server (no other session's run in the last ``QUIET_S`` seconds) gets
every core for torch; sessions that share it share the cores (``torch.set_num_threads`` holds for
the calling thread where torch runs on OpenMP, as its CPU builds do): in a class whose students
press Next within a second of each other, a team of threads a run would cost CPU for nothing.

Work that may take long (a download, a whole test split) ``step_aside``: it goes on beside the
turns, so a student on page 1 never waits for another's evaluation. A run takes its turn once,
before it holds any cache's lock, and never waits for one again: no run holding a lock can wait
for a turn that a run waiting on that lock holds. (``vitviz.app.ahead``'s worker computes beside
the turns too, on one thread.)

Server option: ``streamlit run app.py -- --runs-at-once N`` (or VITVIZ_RUNS_AT_ONCE).
"""

from __future__ import annotations

import argparse
import os
import sys
import threading
import time
from collections import deque
from collections.abc import Hashable, Iterator, Mapping, Sequence
from contextlib import contextmanager

from vitviz.app import internals

QUIET_S = 10.0  # a session that ran within this many seconds still shares the server


def usable_cores() -> int:
    """The cores this process may run on (its affinity, where the system says)."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


def runs_at_once(argv: Sequence[str], environ: Mapping[str, str], cores: int) -> int:
    """How many runs compute at once: ``--runs-at-once N`` in ``argv``, else VITVIZ_RUNS_AT_ONCE,
    else one per core; at least 1 (a value that is not a whole number counts as unset)."""
    parser = argparse.ArgumentParser(add_help=False, allow_abbrev=False)
    parser.add_argument("--runs-at-once", default=None)
    given = parser.parse_known_args(list(argv))[0].runs_at_once or environ.get("VITVIZ_RUNS_AT_ONCE")
    try:
        return max(1, int(given)) if given else max(1, cores)
    except ValueError:
        return max(1, cores)


class Turns:
    """At most ``slots`` runs at once, the others served first come, first served.

    Args:
        slots: how many runs compute at once.
        cores: the cores torch may use; a run shares them with the runs in turn beside it.
        set_threads: sets torch's threads for the calling thread (a test passes its own).
        clock: seconds, for ``QUIET_S`` (a test passes its own).
    """

    def __init__(self, slots: int, cores: int, set_threads=None, clock=time.monotonic) -> None:
        self.slots, self.cores = max(1, slots), max(1, cores)
        self._set_threads, self._clock = set_threads or torch_threads, clock
        self._recent: dict[Hashable, float] = {}  # session -> when its last run took its turn
        self._lock = threading.Lock()
        self._running = 0  # runs in a turn now
        self._queue: deque[threading.Event] = deque()  # runs waiting, oldest first
        self._mine = threading.local()  # whether this thread holds a turn

    @property
    def running(self) -> int:
        return self._running

    @property
    def waiting(self) -> int:
        return len(self._queue)

    def idle(self) -> bool:
        """Whether no run computes or waits for a turn now."""
        return self._running == 0 and not self._queue

    @contextmanager
    def turn(self, session: Hashable = None) -> Iterator[int]:
        """Wait for a turn, then compute in it; yields the torch threads this run was given.

        Args:
            session: whose run this is (Streamlit's session id): a session's own earlier runs do
                not count as sharing the server with it.
        """
        self._enter()
        try:
            threads = max(1, self.cores // self._sharing(session))
            before = self._set_threads(threads)
            try:
                yield threads
            finally:
                if before is not None:
                    self._set_threads(before)
        finally:
            self.step_aside()

    def step_aside(self) -> None:
        """Give this run's turn to the next in the queue; the run goes on beside the turns (for
        work that may take long). Nothing happens in a thread without a turn."""
        if not getattr(self._mine, "held", False):
            return
        self._mine.held = False
        with self._lock:
            if self._queue:
                self._queue.popleft().set()  # the turn passes on: as many running as before
            else:
                self._running -= 1

    def _sharing(self, session: Hashable) -> int:
        """How many sessions share the server now: those with a run in a turn or queued, or one
        that took its turn within ``QUIET_S`` seconds, this one included."""
        now = self._clock()
        with self._lock:
            self._recent = {who: at for who, at in self._recent.items() if now - at < QUIET_S and who != session}
            sharing = max(len(self._recent) + 1, self._running + len(self._queue))
            self._recent[session] = now
        return sharing

    def _enter(self) -> None:
        if getattr(self._mine, "held", False):
            raise RuntimeError("This thread is already in a turn.")
        with self._lock:
            if self._running < self.slots and not self._queue:
                self._running += 1
                ready = None
            else:
                ready = threading.Event()
                self._queue.append(ready)
        if ready is not None:
            ready.wait()  # the run that leaves hands its turn over (``step_aside``)
        self._mine.held = True


_MAKING = threading.Lock()
_server: Turns | None = None


def server_turns() -> Turns:
    """The server's turns, made once from its options (``--runs-at-once``, VITVIZ_RUNS_AT_ONCE)."""
    global _server
    with _MAKING:
        if _server is None:
            cores = usable_cores()
            _server = Turns(runs_at_once(sys.argv[1:], os.environ, cores), cores)
        return _server


def session_id() -> str | None:
    """The Streamlit session whose run this thread is (None outside one)."""
    return internals.session_id()


def session_alive(session: str | None) -> bool:
    """Whether a session still has a browser (True outside a server, as under AppTest)."""
    return internals.session_alive(session)


def step_aside() -> None:
    """This run's work from here on may take long: it gives its turn to the next in the queue."""
    server_turns().step_aside()


def torch_threads(threads: int) -> int | None:
    """Set torch's threads for this thread; returns the number before (None: torch not loaded)."""
    torch = sys.modules.get("torch")
    if torch is None:
        return None
    before = torch.get_num_threads()
    torch.set_num_threads(threads)
    return before
