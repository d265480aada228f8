"""Sessions compute in turns (vitviz.app.turns): at most ``slots`` runs at once, the others in the
order they came, each with its share of torch's threads; long work steps aside."""

from __future__ import annotations

import threading
import time

import pytest

from vitviz.app import ahead, turns
from vitviz.app.turns import QUIET_S, Turns

WAIT_S = 10.0  # the longest a test waits for a thread to get where it must


def _until(condition, what: str) -> None:
    deadline = time.monotonic() + WAIT_S
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.005)


class Threads:
    """A stand-in for torch's per-thread setting: what each thread was given, and its value now."""

    def __init__(self, start: int = 8) -> None:
        self.start, self.now, self.given = start, threading.local(), []

    def __call__(self, threads: int) -> int:
        before = getattr(self.now, "value", self.start)
        self.now.value = threads
        self.given.append(threads)
        return before


class Clock:
    def __init__(self) -> None:
        self.t = 1000.0

    def __call__(self) -> float:
        return self.t


def test_runs_at_once_from_the_flag_then_the_environment_then_the_cores() -> None:
    assert turns.runs_at_once(["--runs-at-once", "3"], {"VITVIZ_RUNS_AT_ONCE": "5"}, cores=2) == 3
    assert turns.runs_at_once(["--data", "x"], {"VITVIZ_RUNS_AT_ONCE": "5"}, cores=2) == 5
    assert turns.runs_at_once([], {}, cores=16) == 16
    assert turns.runs_at_once(["--runs-at-once", "0"], {}, cores=4) == 1  # at least one
    assert turns.runs_at_once([], {"VITVIZ_RUNS_AT_ONCE": "many"}, cores=4) == 4  # not a number: unset


def test_no_more_than_slots_runs_at_once_and_every_run_gets_its_turn() -> None:
    gate = Turns(slots=2, cores=2, set_threads=Threads())
    lock, inside, most, done = threading.Lock(), [0], [0], []

    def run(i: int) -> None:
        with gate.turn(session=i):
            with lock:
                inside[0] += 1
                most[0] = max(most[0], inside[0])
            time.sleep(0.02)
            with lock:
                inside[0] -= 1
        done.append(i)

    threads = [threading.Thread(target=run, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(WAIT_S)
    assert sorted(done) == list(range(8))
    assert most[0] == 2
    assert gate.running == 0 and gate.waiting == 0


def test_runs_that_wait_are_served_in_the_order_they_came() -> None:
    gate = Turns(slots=1, cores=2, set_threads=Threads())
    release, order = threading.Event(), []

    def first() -> None:
        with gate.turn(session="a"):
            release.wait(WAIT_S)

    def later(name: str) -> None:
        with gate.turn(session=name):
            order.append(name)

    holder = threading.Thread(target=first)
    holder.start()
    _until(lambda: gate.running == 1, "the first run's turn")
    waiting = []
    for n, name in enumerate(["b", "c", "d", "e"]):
        waiting.append(threading.Thread(target=later, args=(name,)))
        waiting[-1].start()
        _until(lambda n=n: gate.waiting == n + 1, f"{name} in the queue")  # each queued before the next comes
    assert order == []  # nobody overtakes the run in its turn
    release.set()
    for t in [holder, *waiting]:
        t.join(WAIT_S)
    assert order == ["b", "c", "d", "e"]


def test_a_run_that_steps_aside_hands_its_turn_to_the_next_and_goes_on() -> None:
    gate = Turns(slots=1, cores=2, set_threads=Threads())
    aside, finish, entered = threading.Event(), threading.Event(), threading.Event()

    def long_run() -> None:
        with gate.turn(session="long"):
            gate.step_aside()  # e.g. a download
            aside.set()
            finish.wait(WAIT_S)  # still working, without a turn

    def next_run() -> None:
        with gate.turn(session="next"):
            entered.set()

    first = threading.Thread(target=long_run)
    first.start()
    _until(aside.is_set, "the long run to step aside")
    second = threading.Thread(target=next_run)
    second.start()
    assert entered.wait(WAIT_S), "the next run waited for a run that had stepped aside"
    second.join(WAIT_S)
    finish.set()
    first.join(WAIT_S)
    assert gate.running == 0 and gate.waiting == 0  # the turn given away is not given back twice


def test_a_run_that_fails_leaves_its_turn() -> None:
    gate = Turns(slots=1, cores=2, set_threads=Threads())
    with pytest.raises(ZeroDivisionError), gate.turn():
        _ = 1 / 0
    assert gate.running == 0
    with gate.turn():  # the next one gets it at once
        assert gate.running == 1


def test_a_thread_in_a_turn_cannot_wait_for_another() -> None:
    gate = Turns(slots=2, cores=2, set_threads=Threads())
    with gate.turn(), pytest.raises(RuntimeError), gate.turn():
        pass
    assert gate.running == 0


def test_a_session_alone_gets_every_core_and_sessions_that_share_share_them() -> None:
    threads, clock = Threads(start=7), Clock()
    gate = Turns(slots=4, cores=4, set_threads=threads, clock=clock)
    with gate.turn(session="alone") as given:
        assert given == 4
        assert threads.now.value == 4
    assert threads.now.value == 7  # the thread's own setting again afterwards
    clock.t += 1
    with gate.turn(session="alone") as given:  # its own reruns are not company
        assert given == 4
    clock.t += 1
    with gate.turn(session="other") as given:  # "alone" ran a second ago: two share the cores
        assert given == 2
    clock.t += 1
    with gate.turn(session="third") as given:
        assert given == 1  # 4 cores // 3 sessions
    clock.t += QUIET_S + 1
    with gate.turn(session="third") as given:  # the others have been quiet for QUIET_S
        assert given == 4


def test_runs_in_a_turn_at_the_same_moment_share_the_cores() -> None:
    threads = Threads()
    gate = Turns(slots=2, cores=2, set_threads=threads)
    hold, got = threading.Event(), []

    def run(name: str) -> None:
        with gate.turn(session=name) as given:
            got.append(given)
            hold.wait(WAIT_S)

    first = threading.Thread(target=run, args=("a",))
    first.start()
    _until(lambda: got, "the first run")
    second = threading.Thread(target=run, args=("b",))
    second.start()
    _until(lambda: len(got) == 2, "the second run")
    hold.set()
    first.join(WAIT_S)
    second.join(WAIT_S)
    assert got == [2, 1]  # the first came alone; the second found it there


def test_the_server_makes_its_turns_once_from_its_options(monkeypatch) -> None:
    monkeypatch.setattr(turns, "_server", None)
    monkeypatch.setattr(turns.sys, "argv", ["app.py", "--runs-at-once", "3"])
    made = turns.server_turns()
    assert made.slots == 3
    assert turns.server_turns() is made
    turns.step_aside()  # outside any turn: nothing to give


def test_torch_threads_are_set_for_the_calling_thread_only() -> None:
    import torch

    if "OpenMP" not in torch.__config__.parallel_info():
        pytest.skip("torch without OpenMP: its thread count is one for the whole process")
    main_before, seen = torch.get_num_threads(), {}

    def run() -> None:
        before = turns.torch_threads(1)
        seen["inside"] = torch.get_num_threads()
        turns.torch_threads(before)

    worker = threading.Thread(target=run)
    worker.start()
    worker.join(WAIT_S)
    assert seen["inside"] == 1
    assert torch.get_num_threads() == main_before


def test_work_ahead_runs_once_per_key_by_rank_then_oldest_first_on_one_thread() -> None:
    threads, failures = Threads(start=4), []
    worker = ahead.Ahead(log=lambda key, err: failures.append((key, err)), set_threads=threads)
    ran, thread_counts, hold = [], [], threading.Event()

    def job(name: str):
        def do() -> None:
            hold.wait(WAIT_S)
            thread_counts.append(threads.now.value)
            ran.append(name)

        return do

    assert worker.ask("a", job("a"))  # the worker takes it at once and waits in it
    _until(lambda: worker.queued == 0, "the worker to take the first job")
    assert worker.ask("later", job("later"), rank=1)
    assert worker.ask("b", job("b"))
    assert not worker.ask("a", job("a again"))  # asked lately: not queued twice
    assert worker.ask("c", job("c"))
    hold.set()
    _until(lambda: worker.done == 4, "the work ahead")
    assert ran == ["a", "b", "c", "later"]  # by rank, then oldest first, one at a time
    assert thread_counts == [1, 1, 1, 1]  # one core's worth, beside the sessions' turns

    def broken() -> None:
        raise ValueError("no such image")

    worker.ask("d", broken)
    assert worker.ask("e", job("e"))
    _until(lambda: worker.done == 6, "the jobs after a failing one")
    assert [key for key, _ in failures] == ["d"] and ran[-1] == "e"  # logged, and the worker goes on


def test_work_ahead_forgets_the_oldest_keys_beyond_what_it_remembers(monkeypatch) -> None:
    monkeypatch.setattr(ahead, "REMEMBERED", 2)
    worker = ahead.Ahead(set_threads=Threads())
    for key in ("a", "b", "c"):
        assert worker.ask(key, lambda: None)
    assert not worker.ask("c", lambda: None)
    assert worker.ask("a", lambda: None)  # forgotten: asked again
    _until(lambda: worker.done == 4, "the work ahead")


def test_reading_ahead_is_on_unless_the_server_turns_it_off() -> None:
    assert ahead.enabled([], {})
    assert not ahead.enabled(["--data", "x", "--no-read-ahead"], {})
    assert not ahead.enabled([], {"VITVIZ_READ_AHEAD": "0"})
    assert not ahead.enabled([], {"VITVIZ_READ_AHEAD": "off"})
    assert ahead.enabled([], {"VITVIZ_READ_AHEAD": "1"})


def _busy_model():
    import torch

    from vitviz.models.config import ViTConfig
    from vitviz.models.model import VisionTransformer

    config = ViTConfig(image_size=64, patch_size=4, num_classes=3, embed_dim=64, depth=8, num_heads=2)
    return VisionTransformer(config).eval(), torch.zeros(8, 3, 64, 64)


def test_stopping_the_worker_stops_its_model_at_the_next_block() -> None:
    import torch

    model, pixels = _busy_model()
    started, passes = threading.Event(), []

    def job() -> None:
        started.set()
        with torch.no_grad():
            for _ in range(10_000):  # minutes of work
                model(pixels)
                passes.append(1)

    worker = ahead.Ahead(set_threads=lambda n: None)
    worker.ask("long", job)
    assert started.wait(30)
    begun = time.monotonic()
    assert worker.stop(timeout=ahead.STOP_S)
    assert time.monotonic() - begun < ahead.STOP_S and len(passes) < 10_000
    assert worker.done == 0  # stopped, not finished
    assert not worker.ask("later", job)  # a stopped worker takes no more work


EXIT_DURING_WORK = """
import atexit, sys, threading, time
import torch
from tests.unit.test_turns import _busy_model
from vitviz.app.ahead import Ahead

model, pixels = _busy_model()
started = threading.Event()

def job():
    started.set()
    with torch.no_grad():
        for _ in range(10_000):
            model(pixels)

exited = []
atexit.register(lambda: print(time.monotonic() - exited[0], flush=True))  # runs after the worker's stop
Ahead(set_threads=lambda n: None).ask("long", job)
started.wait()
time.sleep(0.3)
exited.append(time.monotonic())
sys.exit(0)
"""


def test_the_interpreter_exits_cleanly_while_the_worker_computes() -> None:
    """Python's exit while the worker is inside torch once aborted the process ("terminate called
    without an active exception", exit 134): it now exits 0, its worker stopped within STOP_S of
    the exit (the interpreter's own teardown of torch after that is timed by the machine, not us)."""
    import subprocess
    import sys
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    process = subprocess.run(
        [sys.executable, "-c", EXIT_DURING_WORK], cwd=root, capture_output=True, text=True, timeout=300
    )
    assert process.returncode == 0, process.stderr[-2000:]
    assert "terminate called" not in process.stderr
    assert float(process.stdout.split()[-1]) < ahead.STOP_S
