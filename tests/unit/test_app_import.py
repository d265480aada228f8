"""vitviz.app.load_ui: the app's imports, one session at a time, and the collector told to skip them; app.py's OpenMP setting."""

import gc
import os
import subprocess
import sys
from pathlib import Path

import pytest

from vitviz.app import load_ui

APP = Path(__file__).resolve().parents[2] / "app.py"


def test_load_ui_freezes_the_startup_heap_once():
    ui = load_ui()
    assert ui.__name__ == "vitviz.app.ui"
    frozen = gc.get_freeze_count()
    assert frozen > 100_000  # torch, Plotly, pandas, Streamlit: objects that live as long as the server
    assert load_ui() is ui and gc.get_freeze_count() == frozen  # later runs freeze nothing more


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
