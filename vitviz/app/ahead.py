"""Work a session will ask for, done before it asks: while a student reads the first steps of the
tour, pages 7's and 8's heaviest work for their image is computed by one worker thread.

Page 7's occlusion test runs the model on 34 occluded copies of the image, and page 8 runs the
CNN forwards and backwards, the ViT backwards and an experiment through both: the tour's two
heaviest steps. A class that presses Next together reaches them together, and thirty students'
curves then queue behind each other (docs/benchmarks.md). Computed ahead, one job at a time on
one torch thread beside the sessions' turns (``vitviz.app.turns``: at most one core's worth,
taken while the light steps before them leave the cores idle), page 7's first and then page
8's, they are ready when the class gets there: the pages find them in their caches
(``caches.cached_occlusion``, ``cached_comparison``, ``cached_experiment``), the same caches they
fill themselves when they get there first. For the shipped ViT's own test images those caches
read what ships beside the weights (``vitviz.analyses.occlusion``, ``vitviz.analyses.comparison``),
so the work ahead is left for photos and other models. Nothing here changes what a page shows.

Server option: ``streamlit run app.py -- --no-read-ahead`` (or VITVIZ_READ_AHEAD=0) turns it off.
"""

from __future__ import annotations

import argparse
import atexit
import functools
import heapq
import itertools
import os
import sys
import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable, Mapping, Sequence

from vitviz.app.turns import torch_threads
from vitviz.server import deadline

REMEMBERED = 512  # keys of work asked for, so a session's every rerun does not ask again
STOP_S = 5.0  # how long the server's exit waits for the worker (it stops at its model's next block)


class Ahead:
    """One worker thread that runs jobs, by rank and then oldest first, on one torch thread.

    Args:
        log: called with (key, exception) when a job fails (the page computes it itself then).
        set_threads: sets torch's threads for the worker's thread (a test passes its own).
    """

    def __init__(self, log: Callable[[Hashable, BaseException], None] | None = None, set_threads=None) -> None:
        self.log, self._set_threads = log, set_threads or torch_threads
        self._jobs: list[tuple[int, int, Hashable, Callable[[], object]]] = []  # a heap: (rank, order, key, job)
        self._order = itertools.count()
        self._asked: OrderedDict[Hashable, None] = OrderedDict()
        self._ready = threading.Condition()
        self._stopping = threading.Event()
        self._worker: threading.Thread | None = None
        self.done = 0  # jobs finished (tests and the bench read it)

    def ask(self, key: Hashable, job: Callable[[], object], rank: int = 0) -> bool:
        """Queue ``job`` unless a job with this key was asked for lately; True when queued. Jobs of
        a lower ``rank`` go first (the page a class reaches first), then the oldest."""
        with self._ready:
            if self._stopping.is_set():
                return False
            if key in self._asked:
                self._asked.move_to_end(key)
                return False
            self._asked[key] = None
            while len(self._asked) > REMEMBERED:
                self._asked.popitem(last=False)
            heapq.heappush(self._jobs, (rank, next(self._order), key, job))
            if self._worker is None:
                self._worker = threading.Thread(target=self._work, name="vitviz-ahead", daemon=True)
                self._worker.start()
                # before the interpreter tears down: a thread inside torch then aborts the process
                atexit.register(self.stop)
            self._ready.notify()
            return True

    @property
    def queued(self) -> int:
        return len(self._jobs)

    def stop(self, timeout: float = STOP_S) -> bool:
        """Stop the worker: forget the queued jobs, stop the running one at its model's next block,
        and wait for the thread (at most ``timeout`` seconds). True when it has ended."""
        self._stopping.set()
        with self._ready:
            self._jobs.clear()
            self._ready.notify_all()
        worker = self._worker
        if worker is None or worker is threading.current_thread():
            return True
        worker.join(timeout)
        return not worker.is_alive()

    def wait_for(self, ready: Callable[[], bool], longest: float, every: float = 0.02) -> bool:
        """For a job: wait until ``ready()`` (looked at every ``every`` seconds), at most ``longest``
        seconds, and not past the server's stop; whether it came."""
        waited = 0.0
        while not ready():
            if waited >= longest or self._stopping.wait(every):
                return False
            waited += every
        return not self._stopping.is_set()

    def _work(self) -> None:
        self._set_threads(1)  # one core's worth at most, whatever the sessions do
        while True:
            with self._ready:
                while not self._jobs and not self._stopping.is_set():
                    self._ready.wait()
                if self._stopping.is_set():
                    return
                _, _, key, job = heapq.heappop(self._jobs)
            try:
                with deadline.limit(stopped=self._stopping.is_set):
                    job()
            except deadline.Stopped:
                return
            except Exception as err:  # the page computes it itself, and says what is wrong
                if self.log is not None:
                    self.log(key, err)
            self.done += 1


_MAKING = threading.Lock()
_server: Ahead | None = None


def server_ahead() -> Ahead:
    """The server's worker, made once."""
    global _server
    with _MAKING:
        if _server is None:
            from vitviz.app import log

            _server = Ahead(log=lambda key, err: log.warning("work ahead %s failed: %s", key, err))
        return _server


@functools.lru_cache(maxsize=8)
def _enabled(argv: tuple[str, ...], setting: str | None) -> bool:
    """``enabled`` for one set of server settings, worked out once: every tour page's run asks."""
    return enabled(argv, {} if setting is None else {"VITVIZ_READ_AHEAD": setting})


def enabled(argv: Sequence[str], environ: Mapping[str, str]) -> bool:
    """Whether the server reads ahead: not with ``--no-read-ahead`` in ``argv``, nor with
    VITVIZ_READ_AHEAD set to 0, false, no or off."""
    parser = argparse.ArgumentParser(add_help=False, allow_abbrev=False)
    parser.add_argument("--no-read-ahead", action="store_true")
    if parser.parse_known_args(list(argv))[0].no_read_ahead:
        return False
    return environ.get("VITVIZ_READ_AHEAD", "1").strip().lower() not in ("0", "false", "no", "off")


def server_enabled() -> bool:
    """Whether this server reads ahead (``enabled`` for its command line and environment)."""
    return _enabled(tuple(sys.argv[1:]), os.environ.get("VITVIZ_READ_AHEAD"))


PREDICTION = "app_pages/7_prediction.py"
COMPARE = "app_pages/8_compare.py"


def read_ahead(script: str) -> None:
    """app.py, before a page of the tour runs: on a step before the prediction, ask for that page's
    occlusion curves for the session's model and image; on a step before the comparison with the
    CNN, for that page's first view as this session would open it (unless asked for lately)."""
    from vitviz.app import caches, current
    from vitviz.app.tour import TOUR
    from vitviz.models import zoo

    order = [file for file, _, _ in TOUR]
    if not server_enabled() or script not in order:
        return
    step = order.index(script)
    if step >= order.index(COMPARE):
        return
    name, data = current.model_name(), current.image_bytes()
    if data is None:
        return
    try:
        model, spec = caches.cached_model(name)
    except zoo.ModelLoadError:  # the page says why
        return
    if spec.is_cnn or model.config.num_classes == 0:
        return
    image = caches.image_key(data)
    worker = server_ahead()
    if step < order.index(PREDICTION):
        worker.ask(("occlusion", name, image), lambda: _occlusion(name, data), rank=0)
    comparison = _comparison_view(name, model)
    if comparison is not None:
        key = ("comparison", name, image, *comparison.values())
        worker.ask(key, lambda: _comparison(name, data, **comparison), rank=1)  # after every page 7


def _occlusion(name: str, data: bytes) -> None:
    """Page 7's curves, as the page asks for them."""
    from vitviz.analyses import analysis
    from vitviz.app import caches

    model, _ = caches.cached_model(name)
    steps = analysis.occlusion_steps(model)
    for kind in analysis.OCCLUSION_ORDERS:
        caches.cached_occlusion(name, data, kind, steps)


def _comparison_view(name: str, model) -> dict | None:
    """What page 8 would open with for this session: the CNN its list shows, the class chosen (None:
    the page's default), integrated gradients on or off, and the chosen experiment with its
    setting; None where a typed CNN makes that the page's own affair."""
    from vitviz.analyses import compare
    from vitviz.app import current, models, state

    cnns = models.cnn_models()
    if not cnns or state.get("compare_cnn_path"):
        return None
    cnn_name = state.get("compare_cnn", cnns[0])
    if cnn_name not in cnns:
        return None
    chosen = state.get("compare_class")
    kind = state.get("compare_experiment", compare.EXPERIMENTS[0])  # the radio's first option
    hidden = [i for i in state.get("compare_hidden", []) if 0 <= i < model.config.num_patches]
    return {
        "cnn_name": cnn_name,
        "chosen": chosen if isinstance(chosen, int) and 0 <= chosen < model.config.num_classes else None,
        "true_name": current.true_class(),
        "with_ig": bool(state.get("compare_ig", False)),
        "kind": kind,
        # as the page passes them: only the chosen experiment's setting is part of its key
        "shift": int(_widget_value("compare_shift", compare.DEFAULT_SHIFT)) if kind == "shift" else 0,
        "seed": int(_widget_value("compare_seed", compare.DEFAULT_SEED)) if kind == "shuffle" else 0,
        "hidden": tuple(hidden) if kind == "hide" else (),
    }


def _widget_value(key: str, default: int) -> int:
    """A plain widget's value in the session (page 8's shift slider and seed box), else its default."""
    import streamlit as st

    value = st.session_state.get(key, default)
    return value if isinstance(value, int) else default


def _comparison(
    name: str,
    data: bytes,
    cnn_name: str,
    chosen: int | None,
    true_name: str | None,
    with_ig: bool,
    kind: str,
    shift: int,
    seed: int,
    hidden: tuple[int, ...],
) -> None:
    """Page 8's maps and its experiment, as the page asks for them (nothing where its CNN predicts
    other classes: the page says so)."""
    from vitviz.analyses import compare
    from vitviz.app import caches

    vit, _ = caches.cached_model(name)
    cnn, _ = caches.cached_model(cnn_name)
    names = list(vit.config.class_names)
    if list(cnn.config.class_names) != names:
        return
    trace = caches.cached_trace(name, data)
    class_index = chosen if chosen is not None else compare.explained_class(names, trace.logits[0], true_name)
    caches.cached_comparison(name, cnn_name, data, class_index, with_ig)
    caches.cached_experiment(name, cnn_name, data, kind, shift=shift, seed=seed, hidden=hidden)
