"""A broker serves every broker listener and advertises each as advertised.listeners says (a port
of 0 is the one picked); a SASL_PLAINTEXT listener works but warns that tokens travel in clear."""

from __future__ import annotations

import logging

import trio

from broker.security.sessions import SessionTable
from broker.server.config import build_config
from broker.server.listeners import listener_server, serve_broker_listeners


def _config(**extra: str):
    return build_config(
        {
            "node.id": "1",
            "process.roles": "broker,controller",
            "listeners": "PLAINTEXT://127.0.0.1:0,REPLICATION://127.0.0.1:0,"
            "CONTROLLER://127.0.0.1:0",
            "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,REPLICATION:PLAINTEXT,CONTROLLER:PLAINTEXT",
            **extra,
        }
    )


async def test_every_broker_listener_is_served_and_advertised():
    config = _config(**{"advertised.listeners": "PLAINTEXT://broker-1.example:19092"})
    async with trio.open_nursery() as nursery:
        endpoints = await serve_broker_listeners(
            nursery, config, [], SessionTable(1000), lambda user, mechanism: None
        )
        [(first, host, port), (second, internal_host, internal_port)] = endpoints
        assert (first, host, port) == ("PLAINTEXT", "broker-1.example", 19092)
        assert (second, internal_host) == ("REPLICATION", "127.0.0.1") and internal_port > 0
        nursery.cancel_scope.cancel()


def test_sasl_plaintext_warns(caplog):
    config = _config(
        **{
            "listener.security.protocol.map": "PLAINTEXT:SASL_PLAINTEXT,REPLICATION:PLAINTEXT,CONTROLLER:PLAINTEXT",
            "inter.broker.listener.name": "REPLICATION",
        }
    )
    with caplog.at_level(logging.WARNING, logger="broker.server.listeners"):
        listener_server(config, "127.0.0.1:0", "PLAINTEXT", SessionTable(1000))
    assert "SASL_PLAINTEXT" in caplog.text and "use SASL_SSL" in caplog.text
