"""vitviz.app.sockets: the server's listening socket without Nagle's delay (docs/benchmarks.md)."""

from __future__ import annotations

import socket

from vitviz.app import sockets


def no_delay_of(sock: socket.socket) -> int:
    return sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY)


def test_a_socket_bound_as_streamlit_binds_it_listens_without_nagles_delay_and_its_connections_too():
    listening = socket.socket(family=socket.AF_INET)  # as Streamlit 1.67's server makes it: no protocol number
    listening.bind(("127.0.0.1", 0))
    listening.listen()
    client = socket.create_connection(listening.getsockname())
    before, _ = listening.accept()
    try:
        assert no_delay_of(listening) == 0 and no_delay_of(before) == 0  # what asyncio leaves as it is
        assert sockets.no_delay() >= 1
        assert no_delay_of(listening) == 1
        assert no_delay_of(client) == 0  # a socket that does not listen is not touched
        after_client = socket.create_connection(listening.getsockname())
        after, _ = listening.accept()
        assert no_delay_of(after) == 1  # a connection takes it from the socket it was accepted on
        assert sockets.no_delay() == 0  # set once: nothing left to change
        third = socket.create_connection(listening.getsockname())  # the original still listens: its copies were closed
        listening.accept()[0].close()
        for sock in (after_client, after, third):
            sock.close()
    finally:
        for sock in (client, before, listening):
            sock.close()
