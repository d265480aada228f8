"""A redis-server of a test's own (Debian's, as .ci/run installs it), on a port the system picks.

Without the program a test is skipped here, with the line that installs it; where ``CI=true`` it
fails instead, as a test whose data is missing does (tests/conftest.py): CI installs redis-server,
so a missing one is a broken setup, not a reason to leave the Redis store out of the report."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import time

import pytest

from tests.conftest import on_ci

REDIS = shutil.which("redis-server", path="/usr/bin:/usr/sbin:" + os.environ.get("PATH", ""))
MISSING = "needs Debian's redis-server (apt-get install -y redis-server; .ci/run installs it)"


def need() -> str:
    """The program's path; the test is skipped without it (failed where ``CI=true``)."""
    if REDIS is None:
        if on_ci():
            pytest.fail(f"CI=true and this test {MISSING}")
        pytest.skip(MISSING)
    return REDIS


def free_port() -> int:
    """A port nothing listens on now, as the system hands one out."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def start(port: int) -> subprocess.Popen:
    """redis-server on 127.0.0.1:``port``, keeping nothing on disk, once it answers a connection."""
    server = subprocess.Popen(
        [need(), "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no", "--daemonize", "no"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        with socket.socket() as probe:
            if probe.connect_ex(("127.0.0.1", port)) == 0:
                return server
        time.sleep(0.05)
    server.kill()
    server.wait()
    raise RuntimeError(f"redis-server did not start on {port}")
