"""vitviz.app.load_app: the app's imports, one session at a time, and the collector told to skip them; app.py's OpenMP setting."""

import gc
import os
import subprocess
import sys
from pathlib import Path

import pytest

from vitviz.app import load_app

APP = Path(__file__).resolve().parents[2] / "app.py"


def test_load_app_freezes_the_startup_heap_once():
    glue = load_app()
    assert glue.__name__ == "vitviz.app.sidebar"
    frozen = gc.get_freeze_count()
    assert frozen > 100_000  # torch, Plotly, pandas, Streamlit: objects that live as long as the server
    assert load_app() is glue and gc.get_freeze_count() == frozen  # later runs freeze nothing more


def test_the_end_of_the_startup_freezes_what_it_loaded_and_spaces_out_full_collections():
    import vitviz.app as glue

    before = gc.get_threshold()
    try:
        kept = [[n] for n in range(1000)]  # what a startup loads: lists, which the collector tracks
        frozen = gc.get_freeze_count()
        glue.settle_collector()
        assert gc.get_freeze_count() >= frozen + len(kept)
        assert (
            gc.get_threshold() == (*before[:2], glue.FULL_COLLECTION_EVERY) and before[2] < glue.FULL_COLLECTION_EVERY
        )
    finally:
        gc.set_threshold(*before)


@pytest.mark.parametrize(("asked", "spin"), [(None, "0"), ("ACTIVE", "30000000000")])
def test_the_server_s_openmp_threads_sleep_while_they_wait_unless_told_otherwise(asked, spin):
    # A fresh process, as a server's: app.py runs before anything has loaded torch (and OpenMP).
    env = {k: v for k, v in os.environ.items() if k != "OMP_WAIT_POLICY"} | {"OMP_DISPLAY_ENV": "VERBOSE"}
    if asked:
        env["OMP_WAIT_POLICY"] = asked
    script = f"from streamlit.testing.v1 import AppTest; at = AppTest.from_file({str(APP)!r}, default_timeout=120).run(); print('exceptions', len(at.exception))"
    done = subprocess.run(
        [sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=300, cwd=APP.parent
    )
    assert "exceptions 0" in done.stdout, done.stderr[-2000:]
    assert f"GOMP_SPINCOUNT = '{spin}'" in done.stderr  # OpenMP's own report of its settings


def test_streamlit_run_app_py_serves_the_app_with_its_startup():
    # `streamlit run app.py` looks for an ASGI app in the file (its source, not run) and serves it.
    from streamlit.web.server.app_discovery import discover_asgi_app

    found = discover_asgi_app(APP)
    assert found.is_asgi_app and found.import_string == "app:app"


def start_the_server_s_startup() -> None:
    """What app.py's st.App does as the server starts and stops (its lifespan), and the wait for
    the startup's thread to finish."""
    import asyncio
    import threading

    from vitviz.app import STARTUP_BEGUN, warm_up

    async def start_and_stop() -> None:
        async with warm_up(None):
            pass

    asyncio.run(start_and_stop())
    for thread in threading.enumerate():
        if thread.name == "vitviz-warm-up":
            thread.join(timeout=300)
    STARTUP_BEGUN.clear()  # the process's next test is not a server that has begun its startup


def test_the_startup_loads_the_default_model_and_its_test_split_once(tmp_path, monkeypatch):
    from tests.helpers import make_image_folder
    from vitviz.models import precision, zoo

    load_app()
    from vitviz.app import caches, models, testset

    monkeypatch.setenv("VITVIZ_DATA", str(make_image_folder(tmp_path / "data", per_class=2)))
    for cache in (models.cached_model, caches.cached_precision, testset.cached_test_set, testset.cached_evaluation):
        cache.clear()
    loads, choices, reads, evaluations = [], [], [], []
    real_load, real_choose, real_read = zoo.load, precision.choose, testset.vdata.load_split
    monkeypatch.setattr(zoo, "load", lambda name, *a, **k: loads.append(name) or real_load(name, *a, **k))
    monkeypatch.setattr(precision, "choose", lambda *a, **k: choices.append(1) or real_choose(*a, **k))
    monkeypatch.setattr(
        testset.vdata, "load_split", lambda root, *a, **k: reads.append(root) or real_read(root, *a, **k)
    )
    real_evaluate = testset.evaluate  # reading what is stored is allowed; running the model is not
    monkeypatch.setattr(
        testset, "evaluate", lambda *a, **k: real_evaluate(*a, **k) if k.get("run") is False else evaluations.append(1)
    )
    start_the_server_s_startup()
    name = zoo.default_name()
    split = testset.test_split(name)
    models = [name, models.lab_pair(name)]  # and the model the lab sets beside it
    assert loads == models and choices == [] and split is not None and reads == [split.location]  # nothing timed
    caches.cached_precision(name)  # a visitor's first run: everything is there already
    testset.cached_test_set(split.location)
    assert loads == models and choices == [] and reads == [split.location]
    # random images are not the ones the shipped predictions were made on: no evaluation at startup
    assert evaluations == []


@pytest.mark.cifar10
def test_the_startup_reads_the_shipped_predictions_for_the_lab(monkeypatch):
    from tests.conftest import CIFAR10
    from vitviz.models import zoo

    load_app()
    from vitviz.app import models, testset

    monkeypatch.setenv("VITVIZ_DATA", str(CIFAR10))
    for cache in (testset.cached_test_set, testset.cached_evaluation):
        cache.clear()
    evaluations, real_evaluate = [], testset.evaluate
    monkeypatch.setattr(testset, "evaluate", lambda *a, **k: evaluations.append(k["name"]) or real_evaluate(*a, **k))
    start_the_server_s_startup()
    name = zoo.default_name()
    assert evaluations == [name, models.lab_pair(name)] == [zoo.SHIPPED, zoo.SHIPPED_CNN]
    for model_name in evaluations:  # the lab's first open: the model and the one beside it
        result = testset.cached_evaluation(model_name, testset.test_split(name).location)
        assert result.cached and len(result.labels) == 10_000
        assert abs(result.accuracy - zoo.load(model_name).spec.card.test_accuracy) < 1e-9
    assert len(evaluations) == 2


@pytest.mark.cifar10
def test_a_fresh_server_loads_the_default_model_before_anyone_visits():
    import urllib.request

    from benchmarks.bench import app_server
    from tests.conftest import CIFAR10
    from vitviz.app import STARTUP_DONE

    # the shipped predictions match these images: the lab's evaluations are read at startup too
    with app_server(env={"VITVIZ_DATA": str(CIFAR10)}) as server:
        server.wait_for_output(STARTUP_DONE, timeout=120)
        server.output.seek(0)
        text = server.output.read().decode(errors="replace")
        # no browser has connected, so no session ran: the server loaded the model by itself
        assert "ready for visitors" in text and "failed" not in text, text[-2000:]
        assert "Nagle's algorithm turned off on 1 listening socket(s)" in text  # vitviz.app.sockets
        assert "ScriptRunContext" not in text  # nothing drawn outside a page: a clean console for the teacher
        assert urllib.request.urlopen(f"{server.url}/_stcore/health", timeout=2).read() == b"ok"
