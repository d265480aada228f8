"""A class server stops cleanly: SIGTERM while the read-ahead worker computes ends the process
with exit 0 within seconds (it died of the signal, exit -15, and a Python exit in the middle of
torch work aborted with exit 134: tests/unit/test_turns.py has that one)."""

from __future__ import annotations

import asyncio
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

from benchmarks.light_client import LightStudent

ROOT = Path(__file__).resolve().parents[2]
STOP_S = 5.0


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def test_sigterm_while_the_read_ahead_computes_exits_0_within_seconds():
    port = _free_port()
    env = dict(os.environ, VITVIZ_READ_AHEAD="1", STREAMLIT_BROWSER_GATHER_USAGE_STATS="false")
    command = [sys.executable, "-m", "streamlit", "run", "app.py", "--server.headless", "true"]
    command += ["--server.address", "127.0.0.1", "--server.port", str(port)]
    with tempfile.TemporaryFile() as output:
        server = subprocess.Popen(command, cwd=ROOT, env=env, stdout=output, stderr=subprocess.STDOUT)
        try:
            started = time.monotonic()
            while True:
                try:
                    urllib.request.urlopen(f"http://127.0.0.1:{port}/_stcore/health", timeout=1)
                    break
                except OSError:
                    assert server.poll() is None and time.monotonic() - started < 240, "the server did not start"
                    time.sleep(0.2)
            # the overview of ViT-B/16: its run asks the worker for page 7's curves, seconds of work
            student = LightStudent(f"http://127.0.0.1:{port}", "model=untrained-vit-b16&sample=cat-chelsea.jpg")
            assert asyncio.run(student.open()).exceptions == []
            time.sleep(1.0)  # the worker is inside torch now
            stopped = time.monotonic()
            server.send_signal(signal.SIGTERM)
            code = server.wait(timeout=60)
            took = time.monotonic() - stopped
        finally:
            if server.poll() is None:
                server.kill()
        output.seek(0)
        said = output.read().decode(errors="replace")
    assert code == 0, said[-2000:]
    assert "terminate called" not in said
    assert took < STOP_S, took
