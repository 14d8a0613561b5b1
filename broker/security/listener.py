"""One listener's security at the gRPC edge: its TLS server credentials, and who sent each request
(a certificate's principal, a SCRAM session's user, or ANONYMOUS), refusing what must not pass."""

from __future__ import annotations

import time
from typing import Any

import grpc

from broker.security.config import SecurityConfig
from broker.security.principals import ANONYMOUS, node_id_of
from broker.security.sessions import SessionTable
from clients.bridge import SESSION_EXPIRED
from clients.grpc_server import Authenticator, Refused, RequestContext, peer_host
from clients.security import (
    SESSION_METADATA_KEY,
    ClientSecurity,
    key_and_chain,
    read_pem_file,
    split_pem,
)

# Methods that run before a SASL client has a session (the SCRAM exchange itself).
SASL_METHODS = frozenset({"Sasl.SaslAuthenticate"})
# On the controller listener anyone authenticated may read the quorum's state; all else is
# node-to-node traffic.
OPEN_ON_CONTROLLER = frozenset({"Quorum.DescribeQuorum"})


def monotonic_ms() -> int:
    return int(time.monotonic() * 1000)


def server_credentials(config: SecurityConfig, listener: str) -> grpc.ServerCredentials | None:
    """TLS for `listener` from the PEM keystore; None for a listener without TLS. grpcio can
    require a client certificate or not ask for one: "requested" asks for none (see README)."""
    if not config.uses_tls(listener):
        return None
    key, chain = (
        split_pem(config.keystore_pem)
        if config.keystore_pem
        else key_and_chain(config.keystore, None, "ssl.keystore.location")
    )
    required = config.client_auth.get(listener, "none") == "required"
    root = config.truststore_pem or (
        read_pem_file(config.truststore, "ssl.truststore.location") if config.truststore else None
    )
    return grpc.ssl_server_credentials(
        [(key, chain)], root_certificates=root if required else None, require_client_auth=required
    )


def node_client_security(config: SecurityConfig, listener: str | None) -> ClientSecurity | None:
    """How this node dials another node's `listener`: TLS with its own certificate (so the peer
    sees User:kraft-node-<id>) when that listener uses TLS; None for PLAINTEXT."""
    if listener is None or not config.uses_tls(listener):
        return None
    return ClientSecurity(
        security_protocol="SSL",
        ssl_cafile=config.truststore,
        ssl_certfile=config.keystore,
        ssl_cadata=config.truststore_pem,
        ssl_certdata=config.keystore_pem,
    )


def authenticator(
    config: SecurityConfig,
    listener: str,
    *,
    controller: bool = False,
    sessions: SessionTable | None = None,
) -> Authenticator:
    protocol = config.protocol(listener)
    tls = config.uses_tls(listener)
    sasl = protocol.startswith("SASL_")
    rules = config.principal_rules

    def authenticate(method: str, context: Any) -> RequestContext:
        host = peer_host(context.peer())
        principal = ANONYMOUS
        if tls:
            subject = context.auth_context().get("x509_subject")
            if subject:
                principal = rules.principal(subject[0].decode())
        if sasl and method not in SASL_METHODS:
            token = next(
                (v for k, v in context.invocation_metadata() or () if k == SESSION_METADATA_KEY),
                None,
            )
            if token is not None and sessions is not None:
                principal = sessions.principal(token, host, monotonic_ms())
                if principal is None:
                    raise Refused(
                        SESSION_EXPIRED,
                        "the SASL session expired or this node "
                        "restarted; the client authenticates again",
                    )
            elif principal == ANONYMOUS:
                raise Refused(
                    "SASL_AUTHENTICATION_FAILED",
                    f"listener {listener} ({protocol}) needs SASL authentication; "
                    "set security_protocol, sasl_mechanism, sasl_plain_username and "
                    "sasl_plain_password (kraft commands: --command-config FILE)",
                )
        if (
            controller
            and protocol != "PLAINTEXT"
            and node_id_of(principal) is None
            and not (method in OPEN_ON_CONTROLLER and principal != ANONYMOUS)
        ):
            raise Refused(
                "CLUSTER_AUTHORIZATION_FAILED",
                f"{principal} may not call {method} on the controller listener "
                f"{listener}: only kraft nodes (User:kraft-node-<id>) may",
                unauthenticated=False,
            )
        return RequestContext(
            principal=principal, host=host, listener=listener, security_protocol=protocol
        )

    return authenticate
