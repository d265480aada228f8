"""The server's listening socket, without Nagle's delay.

Streamlit 1.67 binds the socket its server listens on itself (``socket.socket(family=...)``), and
asyncio turns Nagle's algorithm off (``TCP_NODELAY``) only on connections whose socket says it is
TCP by its protocol number, which a socket made so does not. Every answer on a kept-alive
connection (a page's scripts, its pictures, the class's polls) and every burst of a run's messages
then waited for the browser's delayed acknowledgement: 44 ms a request, where the same answer from
uvicorn's own socket takes 0.4 ms (docs/benchmarks.md). On Linux a connection takes the option
from the socket it was accepted on, so it is set there, once, as the server starts.
"""

from __future__ import annotations

import os
import socket
from collections.abc import Iterator

from vitviz.app import internals

log = internals.logger(__name__)

MAX_FD = 1024  # where the process's open files cannot be listed (no /proc): the descriptors tried


def no_delay() -> int:
    """Turn Nagle's algorithm off on every TCP socket this process listens on (the app's server:
    nothing else in it listens). Returns how many it changed; 0 where there is none, or the
    system refuses (then nothing is different from before)."""
    changed = 0
    for listening in _listening_tcp_sockets():
        with listening:
            try:
                if not listening.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY):
                    listening.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
                    changed += 1
            except OSError as error:
                log.info("could not turn Nagle's algorithm off on the server's socket: %s", error)
    return changed


def _listening_tcp_sockets() -> Iterator[socket.socket]:
    """A copy of each TCP socket the process listens on (closing it leaves the original open)."""
    for fd in _open_descriptors():
        try:
            copied = os.dup(fd)
        except OSError:  # closed since it was listed
            continue
        try:
            copy = socket.socket(fileno=copied)
        except OSError:  # not a socket
            os.close(copied)
            continue
        if _listens_on_tcp(copy):
            yield copy
        else:
            copy.close()


def _listens_on_tcp(candidate: socket.socket) -> bool:
    if candidate.family not in (socket.AF_INET, socket.AF_INET6) or candidate.type != socket.SOCK_STREAM:
        return False
    try:
        return bool(candidate.getsockopt(socket.SOL_SOCKET, socket.SO_ACCEPTCONN))
    except OSError:
        return False


def _open_descriptors() -> list[int]:
    try:
        return sorted(int(name) for name in os.listdir("/proc/self/fd"))
    except OSError:
        return list(range(3, MAX_FD))
