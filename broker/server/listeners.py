"""A node's gRPC servers, one per listener, each with its listener's TLS, authentication and (on
SASL listeners) Sasl service; brokers serve every broker listener and advertise each."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any

import trio

from broker.metrics.interceptor import RequestMetricsInterceptor
from broker.security.listener import (
    authenticator,
    monotonic_ms,
    node_client_security,
    server_credentials,
)
from broker.security.sasl_servicer import Lookup, SaslServicer
from broker.security.sessions import SessionTable
from broker.server.config import ServerConfig
from clients import bridge
from clients.grpc_server import TrioGrpcServer
from clients.wire import security_pb2

log = logging.getLogger(__name__)

# (servicer, pb2 module, service name[, raw methods, only these methods]) as
# TrioGrpcServer.add_servicer takes them.
Service = tuple[Any, ...]


def listener_server(
    config: ServerConfig,
    address: str,
    listener: str,
    sessions: SessionTable,
    *,
    controller: bool = False,
    metrics=None,
) -> TrioGrpcServer:
    """A gRPC server for `listener` with its TLS and authentication (none on PLAINTEXT), its
    requests counted in `metrics` (a NodeMetrics) if given."""
    security = config.security
    interceptors = (RequestMetricsInterceptor(metrics.requests, listener),) if metrics else ()
    if security is None or security.protocol(listener) == "PLAINTEXT":
        return TrioGrpcServer(address, listener_name=listener, interceptors=interceptors)
    if security.protocol(listener) == "SASL_PLAINTEXT":
        log.warning(
            "listener %s is SASL_PLAINTEXT: SCRAM keeps passwords off the wire, but "
            "session tokens and all data travel unencrypted; use SASL_SSL",
            listener,
        )
    return TrioGrpcServer(
        address,
        listener_name=listener,
        credentials=server_credentials(security, listener),
        authenticate=authenticator(security, listener, controller=controller, sessions=sessions),
        interceptors=interceptors,
    )


def node_channel_opener(config: ServerConfig, listener: str | None):
    """How this node dials other nodes' `listener`: with its own certificate over TLS."""
    security = None if config.security is None else node_client_security(config.security, listener)

    def open_channel(address: str):
        return bridge.open_channel(address, security)

    return open_channel


def broker_listener_names(config: ServerConfig) -> list[str]:
    return [
        n
        for n in config.listeners
        if n not in config.controller_listener_names and n not in config.kafka_listener_names
    ] or [config.broker_listener_name]


async def serve_broker_listeners(
    nursery: trio.Nursery,
    config: ServerConfig,
    services: Sequence[Service],
    sessions: SessionTable,
    credentials: Lookup,
    metrics=None,
    bound_ports: dict[str, int] | None = None,
) -> list[tuple[str, str, int]]:
    """Start a server on every broker listener; [(name, advertised host, port)], the first
    listener first (a port of 0 is the one picked). `bound_ports` gets each listener's own port
    (where its connections arrive, whatever it advertises)."""
    endpoints = []
    for name in broker_listener_names(config):
        host, port = config.listeners[name]
        server = listener_server(config, f"{host}:{port}", name, sessions, metrics=metrics)
        for service in services:
            server.add_servicer(*service)
        security = config.security
        if security is not None and security.protocol(name).startswith("SASL_"):
            server.add_servicer(
                SaslServicer(
                    credentials,
                    sessions,
                    security.sasl_mechanisms,
                    monotonic_ms,
                    failed_delay_ms=security.failed_auth_delay_ms,
                ),
                security_pb2,
                "Sasl",
            )
        port = await nursery.start(server.serve)
        if bound_ports is not None:
            bound_ports[name] = port
        advertised = security.advertised.get(name) if security is not None else None
        endpoints.append((name, *(advertised if advertised and advertised[1] else (host, port))))
    return endpoints
