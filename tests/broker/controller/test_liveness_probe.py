"""The controller's probe before fencing a reported broker: True only when the address refuses
connections (nothing listens); a listening port, or a name that does not resolve, is False."""

from __future__ import annotations

import socket

from broker.controller.liveness_probe import refuses_connections


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


async def test_a_closed_port_refuses_and_a_listening_one_does_not():
    assert await refuses_connections("127.0.0.1", _free_port()) is True
    with socket.socket() as listening:
        listening.bind(("127.0.0.1", 0))
        listening.listen()
        assert await refuses_connections("127.0.0.1", listening.getsockname()[1]) is False


async def test_a_name_that_does_not_resolve_proves_nothing():
    assert await refuses_connections("no-such-host.invalid", 9092) is False
