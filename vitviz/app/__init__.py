"""The Streamlit glue: the only part of vitviz that imports Streamlit (caches, the session's
choices and the URL, navigation, the sidebar, widgets). ``import vitviz`` never loads it."""

import atexit
import contextlib
import gc
import importlib
import threading
import time
from collections.abc import AsyncIterator, Callable, Iterator
from types import ModuleType

from vitviz.app import internals

log = internals.logger(__name__)  # Streamlit's console format and level (--logger.level)

_IMPORTING = threading.Lock()
# Imported by Streamlit, Plotly and the pages only when first used: the first sessions of a cold
# server, each in a thread of its own, would import them at the same moment, and one of them got
# a partially initialised pandas ("module 'pandas' has no attribute 'Series'"; the classroom
# benchmark, 3 students at once).
_LAZY = ("pandas", "plotly.graph_objects", "plotly.io", "pyarrow")


_frozen = False

# The startup (``warm_up``): begun, and ready (the libraries and the default model loaded, or
# failed to). Between the two a session's first run on the overview draws it without torch
# (``vitviz.app.first_view``), and the page asks for the app's run once the startup is ready.
STARTUP_BEGUN = threading.Event()
STARTUP_READY = threading.Event()
_NEEDED = threading.Event()  # a run of the app's own waits for the startup: it imports at once


def startup_needed() -> None:
    """A run that is not a first view (another page, another choice) needs what the startup loads:
    the startup stops waiting for a first view and loads it now."""
    if not STARTUP_READY.is_set() and not _NEEDED.is_set():
        with _RUNS:
            _NEEDED.set()
            _RUNS.notify_all()


def load_app() -> ModuleType:
    """The app's glue (``vitviz.app.sidebar``, which imports the rest) and the libraries it needs,
    imported by one session at a time.

    After the first import the garbage collector is told to leave everything that exists then
    (torch, Plotly's validators, pandas: objects that live as long as the server) out of its
    collections (``gc.freeze``), so each full collection only walks what the sessions made.
    """
    global _frozen
    with _IMPORTING:
        for name in _LAZY:
            importlib.import_module(name)
        glue = importlib.import_module("vitviz.app.sidebar")
        if not _frozen:
            gc.freeze()
            _frozen = True
        return glue


@contextlib.asynccontextmanager
async def warm_up(app: object) -> AsyncIterator[None]:
    """The server's startup (app.py's ``st.App`` lifespan): it answers browsers at once, while a
    thread loads the libraries, the default model and its precision, then the default model's test
    split and the shipped predictions the lab opens with.

    ``streamlit run app.py`` runs a session only when a browser connects, so without this the first
    visitor of a fresh server waited for torch to load after their browser had loaded the page
    (a fresh server's first lab visit: 4.6 s, docs/benchmarks.md); now the two overlap, and a
    visitor who comes later waits for neither. A session that starts before the thread is done
    waits for what it needs (the imports' lock, Streamlit's per-value cache locks), never loads it
    twice. Whatever fails here is logged and left for the page that needs it to explain in the
    user's language."""
    from vitviz.app import sockets

    log.info("Nagle's algorithm turned off on %d listening socket(s)", sockets.no_delay())
    warming = threading.Thread(target=_warm, name="vitviz-warm-up", daemon=True)
    STARTUP_BEGUN.set()
    warming.start()
    atexit.register(_stop_at_exit, warming)  # the test split's predictions may still be computing
    shut_down_on_sigterm()
    yield


STOP_S = 5.0


def _stop_at_exit(warming: threading.Thread) -> None:
    """At the process's exit, the warm-up's models stop at their next block, and it is waited for:
    a thread inside torch when Python tears down aborts the process (exit 134)."""
    from vitviz.server import deadline

    deadline.stop_everything()
    _STOPPING.set()  # a warm-up still waiting for the first view goes on to its end at once
    warming.join(STOP_S)


def shut_down_on_sigterm() -> bool:
    """SIGTERM shuts the server down as it does now, and the process then exits 0.

    Serving an ``st.App``, Streamlit runs uvicorn, whose SIGTERM handler records the signal, shuts
    the server down and then raises the signal again with the default handler: the process dies
    of it (exit -15) without Python's exit, so the read-ahead worker's ``atexit`` never runs. Here
    the handler asks uvicorn's server to exit (its public ``should_exit``) without recording the
    signal: the same shutdown, then Python's own exit, which stops the worker and returns 0. Where
    the handler is not uvicorn's (another Streamlit, another server), nothing changes. Returns
    whether it took over."""
    import signal

    if threading.current_thread() is not threading.main_thread():
        return False
    server = getattr(signal.getsignal(signal.SIGTERM), "__self__", None)
    if server is None or type(server).__module__ != "uvicorn.server" or not hasattr(server, "should_exit"):
        return False

    def shut_down(signum: int, frame: object) -> None:
        server.should_exit = True

    signal.signal(signal.SIGTERM, shut_down)
    return True


STARTUP_DONE = "startup done"  # the last line the startup logs (the benchmark waits for it)

# The lab's data (the test folder and the stored predictions, about 1 CPU-s) waits for the first
# view: on 2 cores the warm-up thread took the CPU and the GIL while the first session ran and,
# after its run, while the browser drew the overview's figures, and the overview never reads that
# data (docs/benchmarks.md). Lowering the thread's priority instead was slower: a
# starved thread holding the GIL stalled the server's event loop.
_RUNS = threading.Condition()
_running = 0  # sessions' runs in progress
_drawn = False  # a session's run has drawn its page to the end since the server started
_last_seen = 0.0  # time.monotonic() when a run last started or ended
_STOPPING = threading.Event()
IDLE_S = 2.0  # with no run in progress, the lab's data waits this long after the last one for a visitor
QUIET_S = 2.0  # and, once a page is drawn, for this long without a run starting or ending
QUIET_MAX_S = 120.0  # but never longer than this (a class that never pauses: its first lab visitor would load it)
FIRST_VIEW_MAX_S = 60.0  # and never longer than this (a first view stuck on something else)
DRAW_S = 5.0  # after a run has drawn its page, the browser's Plotly draws its figures: seconds left to it


@contextlib.contextmanager
def session_run() -> Iterator[None]:
    """Around a session's run (app.py's ``main``): the startup's lab data waits until one has drawn
    its page to the end. A run that stops early to start again (``st.rerun``, ``st.switch_page``:
    a session's first run often does) leaves by an exception and does not count."""
    global _running, _drawn, _last_seen
    with _RUNS:
        _running += 1
        _last_seen = time.monotonic()
    drawn = False
    try:
        yield
        drawn = True
    finally:
        with _RUNS:
            _running -= 1
            _drawn = _drawn or drawn
            _last_seen = time.monotonic()
            _RUNS.notify_all()


def _wait_until(
    ready: Callable[[float, float], bool], max_s: float, poll_s: float, unless: threading.Event | None = None
) -> bool:
    """Wait, looking at the runs under their lock, until ``ready(now, started)``, or ``max_s``
    passed, or the process is exiting, or ``unless`` is set. Returns whether it was ready."""
    started = time.monotonic()
    with _RUNS:
        while not _STOPPING.is_set() and not (unless is not None and unless.is_set()):
            now = time.monotonic()
            if ready(now, started):
                return True
            if now - started >= max_s:
                return False
            _RUNS.wait(poll_s)
        return False


def wait_for_first_view(
    idle_s: float = IDLE_S, max_s: float = FIRST_VIEW_MAX_S, unless: threading.Event | None = None
) -> bool:
    """Wait until a session's run has drawn its page, or no run has been in progress for ``idle_s``
    (nobody is visiting yet), or ``max_s`` passed, or the process is exiting, or ``unless`` is set.
    Returns whether a page had been drawn."""

    def drawn_or_idle(now: float, started: float) -> bool:
        return _drawn or (_running == 0 and now - max(started, _last_seen) >= idle_s)

    _wait_until(drawn_or_idle, max_s, 0.1, unless)
    with _RUNS:
        return _drawn


def wait_for_quiet(quiet_s: float = QUIET_S, max_s: float = QUIET_MAX_S) -> bool:
    """Wait until no session's run has been in progress, started or ended for ``quiet_s`` (a
    teacher between two clicks), or ``max_s`` passed, or the process is exiting. Returns whether
    it was quiet."""
    return _wait_until(lambda now, _: _running == 0 and now - _last_seen >= quiet_s, max_s, 0.05)


FULL_COLLECTION_EVERY = 100  # collections of the middle generation between two full ones (Python's default: 10)


def settle_collector() -> None:
    """The end of the startup: what it loaded (the models, the test split) lives as long as the
    server, so the collector leaves it out (``gc.freeze``, as ``load_app`` does for the imports);
    and a full collection, which walks every object the sessions keep (their figures, traces,
    states), comes a tenth as often. A class's runs each leave thousands of cycles behind, and
    full collections took about a twelfth of a 30-student lesson's server CPU (8 of about 0.1 s
    each; docs/benchmarks.md). The young generations still free most cycles as they are made."""
    gc.freeze()
    young, middle, _ = gc.get_threshold()
    gc.set_threshold(young, middle, FULL_COLLECTION_EVERY)


def _warm() -> None:
    started = time.perf_counter()
    # A first visitor's overview (vitviz.app.first_view) is drawn before the imports take a core
    # and the GIL: on 2 cores they slowed Streamlit's frontend and its first run by about 1 s.
    # A first visitor on another page needs them at once; with no visitor, they begin after IDLE_S.
    wait_for_first_view(IDLE_S, FIRST_VIEW_MAX_S, unless=_NEEDED)
    waited = time.perf_counter() - started
    try:
        try:
            load_app()
            from vitviz.app import caches, testset

            caches.warm_model()
        finally:
            STARTUP_READY.set()  # the pages say what failed, if anything did
        log.info(
            "ready for visitors: the libraries, the default model and its precision in %.1f s (after %.1f s for the first view)",
            time.perf_counter() - started - waited,
            waited,
        )
        if wait_for_first_view(IDLE_S, FIRST_VIEW_MAX_S):  # then the browser draws its figures, on the same cores
            _STOPPING.wait(DRAW_S)
        # and a visitor who clicks on (the teacher's first Next) is not kept waiting behind it: on 2
        # cores, the first Next took 1.2-1.5 s while this loaded, 0.5 s after (docs/benchmarks.md)
        wait_for_quiet(QUIET_S, QUIET_MAX_S)
        if not _STOPPING.is_set():  # a server exiting loads nothing more: its exit waits for this thread
            testset.warm_test_split()
        settle_collector()
    except Exception:  # the pages say what went wrong, in the user's language
        log.exception("loading the default model or its test split at startup failed")
    log.info("%s in %.1f s", STARTUP_DONE, time.perf_counter() - started)
