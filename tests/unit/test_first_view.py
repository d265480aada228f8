"""The startup waits for the first view (issue 58): a fresh server's warm-up imports the libraries
and loads the default model once a session's run has drawn its page (the shipped overview,
vitviz.app.first_view), a run of the app's own needs them (``startup_needed``), or nobody has been
visiting for IDLE_S; it loads the lab's test split once the browser has then had DRAW_S to draw
and no run has started or ended for QUIET_S."""

import threading
import time

import pytest

import vitviz.app as glue


@pytest.fixture
def fresh(monkeypatch):
    """A server where no session has run yet (its warm-up leaves the tests' collector as it is)."""
    monkeypatch.setattr(glue, "settle_collector", lambda: None)
    monkeypatch.setattr(glue, "_running", 0)
    monkeypatch.setattr(glue, "_drawn", False)
    monkeypatch.setattr(glue, "_last_seen", 0.0)
    monkeypatch.setattr(glue, "_STOPPING", threading.Event())
    monkeypatch.setattr(glue, "_NEEDED", threading.Event())
    monkeypatch.setattr(glue, "STARTUP_READY", threading.Event())


@pytest.fixture
def order(monkeypatch):
    """What the warm-up loaded, in order: the default model, then the lab data (each only noted)."""
    from vitviz.app import caches, testset

    glue.load_app()
    loaded = []
    monkeypatch.setattr(caches, "warm_model", lambda: loaded.append("model"))
    monkeypatch.setattr(testset, "warm_test_split", lambda: loaded.append("lab data"))
    return loaded


def test_the_startup_waits_until_a_run_has_drawn_its_page(fresh, order, monkeypatch):
    monkeypatch.setattr(glue, "IDLE_S", 0.2)  # a run in progress holds it however long it takes
    monkeypatch.setattr(glue, "DRAW_S", 0.5)
    entered, leave = threading.Event(), threading.Event()

    def first_run() -> None:
        with glue.session_run():
            entered.set()
            leave.wait(10)

    session = threading.Thread(target=first_run)
    session.start()
    entered.wait(10)
    warming = threading.Thread(target=glue._warm)
    warming.start()
    time.sleep(1.0)  # five idle periods: the run (a first view) is still in progress
    assert order == [] and not glue.STARTUP_READY.is_set()
    leave.set()
    session.join(10)
    time.sleep(0.2)  # the page drawn: the model now, the lab data after the browser's time to draw it
    assert order == ["model"] and glue.STARTUP_READY.is_set()
    warming.join(10)
    assert order == ["model", "lab data"]


def test_a_run_that_needs_the_startup_starts_it_at_once(fresh, order, monkeypatch):
    monkeypatch.setattr(glue, "DRAW_S", 0.1)
    with glue._RUNS:
        glue._running = 1  # a run in progress, on another page than the first view's
    warming = threading.Thread(target=glue._warm)
    warming.start()
    time.sleep(0.3)
    assert order == []
    glue.startup_needed()  # what app.py's main says before it loads the app
    assert glue.STARTUP_READY.wait(5) and order == ["model"]
    with glue._RUNS:
        glue._running = 0
    warming.join(10)
    assert order == ["model", "lab data"]


def test_a_startup_that_fails_is_ready_all_the_same(fresh, monkeypatch):
    """The pages say what failed; a first view's page does not wait for a startup that never comes."""
    from vitviz.app import caches

    glue.load_app()

    def broken() -> None:
        raise OSError("no weights")

    monkeypatch.setattr(caches, "warm_model", broken)
    monkeypatch.setattr(glue, "IDLE_S", 0.1)
    warming = threading.Thread(target=glue._warm)
    warming.start()
    warming.join(10)
    assert glue.STARTUP_READY.is_set()


def test_a_run_that_starts_again_is_not_a_first_view(fresh):
    with pytest.raises(RuntimeError), glue.session_run():
        raise RuntimeError("st.rerun")  # Streamlit's RerunException leaves the same way
    started = time.monotonic()
    assert glue.wait_for_first_view(idle_s=0.3, max_s=5) is False
    assert time.monotonic() - started >= 0.3
    with glue.session_run():
        pass
    assert glue.wait_for_first_view(idle_s=5, max_s=5) is True


def test_nobody_visiting_delays_the_lab_data_by_the_idle_period_only(fresh):
    started = time.monotonic()
    assert glue.wait_for_first_view(idle_s=0.3, max_s=5) is False
    assert 0.3 <= time.monotonic() - started < 3


def test_a_stuck_first_run_delays_it_by_max_s_only(fresh):
    with glue._RUNS:
        glue._running = 1  # a run that never ends
    started = time.monotonic()
    assert glue.wait_for_first_view(idle_s=0.1, max_s=0.5) is False
    assert 0.5 <= time.monotonic() - started < 3


def test_the_exit_does_not_wait_for_a_first_view(fresh):
    with glue._RUNS:
        glue._running = 1
    threading.Timer(0.2, glue._STOPPING.set).start()
    started = time.monotonic()
    assert glue.wait_for_first_view(idle_s=60, max_s=60) is False
    assert time.monotonic() - started < 5


def test_a_server_exiting_during_the_wait_loads_no_lab_data(fresh, order, monkeypatch):
    monkeypatch.setattr(glue, "DRAW_S", 60.0)
    with glue.session_run():
        pass  # a page drawn: the warm-up now leaves the browser DRAW_S
    warming = threading.Thread(target=glue._warm)
    warming.start()
    time.sleep(0.5)
    glue._STOPPING.set()  # what _stop_at_exit does
    warming.join(10)
    assert not warming.is_alive() and order == ["model"]


def test_the_lab_data_waits_for_a_pause_between_clicks(fresh, order, monkeypatch):
    """Once the first view is drawn, the lab's data waits until no run has started or ended for
    QUIET_S: a teacher clicking Next is not kept waiting behind it. A class that never pauses
    waits QUIET_MAX_S at most."""
    monkeypatch.setattr(glue, "DRAW_S", 0.1)
    monkeypatch.setattr(glue, "QUIET_S", 0.5)
    with glue.session_run():
        pass  # the first view drawn
    warming = threading.Thread(target=glue._warm)
    warming.start()
    clicking_until = time.monotonic() + 1.5
    while time.monotonic() < clicking_until:  # a run every 0.2 s: never 0.5 s quiet
        with glue.session_run():
            time.sleep(0.05)
        last_run = time.monotonic()
        time.sleep(0.15)
        assert "lab data" not in order
    warming.join(10)
    assert order == ["model", "lab data"] and time.monotonic() - last_run >= 0.5


def test_a_class_that_never_pauses_waits_quiet_max_s_only(fresh):
    with glue._RUNS:
        glue._running = 1  # a run in progress all along
    started = time.monotonic()
    assert glue.wait_for_quiet(quiet_s=0.2, max_s=0.5) is False
    assert 0.5 <= time.monotonic() - started < 3
    with glue._RUNS:
        glue._running = 0
        glue._last_seen = time.monotonic()
    assert glue.wait_for_quiet(quiet_s=0.2, max_s=5) is True
    assert time.monotonic() - started < 4
