"""A Kafka listener: raw TCP on trio, one Connection (connection.py) per client. Plaintext
only for now; the security protocol map decides, so SSL and SASL_* can be added here."""

from __future__ import annotations

import logging

import trio

from broker.kafka import codec
from broker.kafka.connection import Connection
from broker.kafka.handlers import Dispatcher

log = logging.getLogger(__name__)


class KafkaListenerError(ValueError):
    """The Kafka listener cannot serve as configured; the message says what to change."""


def check_protocol(name: str, protocol: str) -> None:
    if protocol != "PLAINTEXT":
        raise KafkaListenerError(
            f"listener {name}: the Kafka wire listener serves PLAINTEXT only so far, but "
            f"listener.security.protocol.map gives it {protocol}; use {name}:PLAINTEXT (the "
            "gRPC listeners serve SSL and SASL)"
        )


async def serve_kafka_listener(
    name: str,
    host: str,
    port: int,
    dispatcher: Dispatcher,
    *,
    max_request_bytes: int,
    task_status=trio.TASK_STATUS_IGNORED,
) -> None:
    """Listen on host:port; `task_status.started(port)` (the port picked if 0)."""
    listeners = await trio.open_tcp_listeners(port, host=host)
    bound = listeners[0].socket.getsockname()[1]

    async def handle(stream: trio.SocketStream) -> None:
        try:
            peer = stream.socket.getpeername()[0]
        except OSError:
            return
        try:
            await Connection(
                stream,
                dispatcher.dispatch,
                max_request_bytes=max_request_bytes,
                peer=peer,
                listener=name,
            ).serve()
        except Exception:
            # A bug in a connection must not end the listener, nor the node with it.
            log.exception("Kafka listener %s: the connection from %s failed", name, peer)

    async with trio.open_nursery() as nursery:
        await nursery.start(trio.serve_listeners, handle, listeners)
        # kio's schema modules load in a thread: a first client must not stall the node's loop.
        nursery.start_soon(trio.to_thread.run_sync, codec.warm_up, dispatcher.common_versions())
        # The node's one start line names the Kafka address; this line is for debugging.
        log.debug("Kafka listener %s on %s:%d", name, host, bound)
        task_status.started(bound)
