"""The security keys of server.properties (Kafka's names): which protocol each listener speaks,
where the node's PEM keystore and truststore are, client certificates, SASL mechanisms."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping

from broker.security.principals import PrincipalRules, PrincipalRulesError
from clients.security import normalize_pem

PROTOCOLS = ("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL")
CLIENT_AUTH = ("none", "requested", "required")
MECHANISMS = ("SCRAM-SHA-256", "SCRAM-SHA-512")

# Keys read here (besides listener.name.<listener>.ssl.client.auth).
SECURITY_KEYS = frozenset(
    {
        "listener.security.protocol.map",
        "advertised.listeners",
        "inter.broker.listener.name",
        "ssl.keystore.location",
        "ssl.keystore.type",
        "ssl.truststore.location",
        "ssl.keystore.key",
        "ssl.keystore.certificate.chain",
        "ssl.truststore.certificates",
        "ssl.key.password",
        "ssl.truststore.type",
        "ssl.client.auth",
        "ssl.principal.mapping.rules",
        "sasl.enabled.mechanisms",
        "sasl.mechanism.inter.broker.protocol",
        "connections.max.reauth.ms",
        "connection.failed.authentication.delay.ms",
    }
)


class SecurityConfigError(ValueError):
    """A security key with a value that cannot be used; the message names the key."""


@dataclasses.dataclass(frozen=True)
class SecurityConfig:
    protocols: Mapping[str, str]  # listener name -> security protocol
    advertised: Mapping[str, tuple[str, int]]  # listener name -> advertised (host, port)
    inter_broker_listener: str | None
    keystore: str | None  # PEM: private key and certificate chain
    truststore: str | None  # PEM: the CA certificates trusted
    keystore_pem: bytes | None  # or the same given in the properties
    truststore_pem: bytes | None
    client_auth: Mapping[str, str]  # listener name -> none/requested/required
    principal_rules: PrincipalRules
    sasl_mechanisms: tuple[str, ...]
    session_lifetime_ms: int
    failed_auth_delay_ms: int

    def protocol(self, listener: str) -> str:
        return self.protocols.get(listener, "PLAINTEXT")

    def uses_tls(self, listener: str) -> bool:
        return self.protocol(listener) in ("SSL", "SASL_SSL")

    @property
    def secure(self) -> bool:
        return any(p != "PLAINTEXT" for p in self.protocols.values())


def _protocol_map(text: str) -> dict[str, str]:
    out = {}
    for part in (p.strip() for p in text.split(",") if p.strip()):
        name, sep, protocol = part.partition(":")
        protocol = protocol.strip().upper()
        if not sep or protocol not in PROTOCOLS:
            raise SecurityConfigError(
                f"listener.security.protocol.map: {part!r} is not NAME:PROTOCOL with PROTOCOL one "
                f"of {', '.join(PROTOCOLS)} (e.g. CONTROLLER:SSL,CLIENTS:SASL_SSL)"
            )
        out[name.strip().upper()] = protocol
    return out


def build_security(
    props: Mapping[str, str], listeners: Mapping[str, tuple[str, int]], parse_listeners
) -> SecurityConfig:
    """Kafka's rules: a listener is named in the map, or is itself named after a protocol. With
    no map at all, other names (CONTROLLER) stay PLAINTEXT as before."""
    explicit = _protocol_map(props.get("listener.security.protocol.map", ""))
    # Listeners of other nodes too: a broker dials the controllers' CONTROLLER listener.
    protocols = dict(explicit)
    for name in listeners:
        if name in explicit:
            protocols[name] = explicit[name]
        elif name in PROTOCOLS:
            protocols[name] = name
        elif not explicit:
            protocols[name] = "PLAINTEXT"
        else:
            raise SecurityConfigError(
                f"listener.security.protocol.map: listener {name} has no protocol; add "
                f"{name}:SSL (or PLAINTEXT, SASL_SSL, SASL_PLAINTEXT)"
            )
    advertised = {}
    if props.get("advertised.listeners", "").strip():
        advertised = parse_listeners("advertised.listeners", props["advertised.listeners"])
        unknown = sorted(set(advertised) - set(listeners))
        if unknown:
            raise SecurityConfigError(
                f"advertised.listeners: {', '.join(unknown)} is not in "
                "listeners; advertise only listeners this node has"
            )
    inter = props.get("inter.broker.listener.name", "").strip().upper() or None
    if inter is not None and inter not in listeners:
        raise SecurityConfigError(
            f"inter.broker.listener.name: {inter} is not one of the "
            f"listeners ({', '.join(listeners)})"
        )
    client_auth = {}
    default_auth = props.get("ssl.client.auth", "none").strip().lower()
    for name in listeners:
        value = props.get(f"listener.name.{name.lower()}.ssl.client.auth", default_auth)
        value = value.strip().lower()
        if value not in CLIENT_AUTH:
            raise SecurityConfigError(
                f"ssl.client.auth: {value!r} is not one of {', '.join(CLIENT_AUTH)}"
            )
        client_auth[name] = value
    for key in ("ssl.keystore.type", "ssl.truststore.type"):
        if props.get(key, "PEM").strip().upper() != "PEM":
            raise SecurityConfigError(
                f"{key}: only PEM is supported; convert the store "
                "(openssl pkcs12 -in store.p12 -nodes -out store.pem)"
            )
    try:
        rules = PrincipalRules(props.get("ssl.principal.mapping.rules", "DEFAULT"))
    except PrincipalRulesError as exc:
        raise SecurityConfigError(str(exc)) from None
    mechanisms = tuple(
        m.strip().upper()
        for m in props.get("sasl.enabled.mechanisms", ",".join(MECHANISMS)).split(",")
        if m.strip()
    )
    bad = [m for m in mechanisms if m not in MECHANISMS]
    if bad:
        raise SecurityConfigError(
            f"sasl.enabled.mechanisms: {', '.join(bad)} is not supported; "
            f"kraft has {', '.join(MECHANISMS)}"
        )
    config = SecurityConfig(
        protocols=protocols,
        advertised=advertised,
        inter_broker_listener=inter,
        keystore=props.get("ssl.keystore.location") or None,
        truststore=props.get("ssl.truststore.location") or None,
        keystore_pem=_inline_keystore(props),
        truststore_pem=_inline_pem(props, "ssl.truststore.certificates"),
        client_auth=client_auth,
        principal_rules=rules,
        sasl_mechanisms=mechanisms,
        session_lifetime_ms=_positive(props, "connections.max.reauth.ms", 900_000),
        failed_auth_delay_ms=_positive(props, "connection.failed.authentication.delay.ms", 100),
    )
    _check_node_listeners(config, props, listeners)
    tls = [n for n in listeners if config.uses_tls(n)]
    if tls and not (config.keystore or config.keystore_pem):
        raise SecurityConfigError(
            f"ssl.keystore.location: listener {tls[0]} uses TLS and needs "
            "the node's key and certificate chain (one PEM file)"
        )
    needs_trust = [n for n in tls if client_auth[n] != "none"]
    if needs_trust and not (config.truststore or config.truststore_pem):
        raise SecurityConfigError(
            f"ssl.truststore.location: listener {needs_trust[0]} checks "
            "client certificates and needs the CA certificates (PEM)"
        )
    return config


def _check_node_listeners(
    config: SecurityConfig, props: Mapping[str, str], listeners: Mapping[str, tuple[str, int]]
) -> None:
    """Nodes prove who they are to each other with certificates: the listeners they dial (the
    controllers' and the inter-broker one) must be PLAINTEXT or SSL, and SSL ones here must
    ask for client certificates, or no node could register."""
    controllers = [
        n.strip().upper()
        for n in props.get("controller.listener.names", "CONTROLLER").split(",")
        if n.strip()
    ]
    brokers = [n for n in listeners if n not in controllers]
    names = controllers + [config.inter_broker_listener or (brokers[0] if brokers else "")]
    for name in filter(None, names):
        protocol = config.protocol(name)
        if protocol.startswith("SASL_"):
            raise SecurityConfigError(
                f"listener.security.protocol.map: {name} carries node-to-node traffic, and nodes "
                f"authenticate with certificates, not SASL; map it to SSL (or give the nodes "
                f"their own SSL listener and name it in inter.broker.listener.name)"
            )
        if protocol == "SSL" and name in listeners and config.client_auth.get(name) != "required":
            raise SecurityConfigError(
                f"ssl.client.auth: listener {name} carries node-to-node traffic, so it must ask "
                f"for certificates; set listener.name.{name.lower()}.ssl.client.auth=required"
            )


def _inline_pem(props: Mapping[str, str], key: str) -> bytes | None:
    if not props.get(key, "").strip():
        return None
    try:
        return normalize_pem(props[key])
    except ValueError as exc:
        raise SecurityConfigError(f"{key}: {exc}") from None


def _inline_keystore(props: Mapping[str, str]) -> bytes | None:
    """Kafka's PEM keys: ssl.keystore.key (unencrypted) with ssl.keystore.certificate.chain."""
    key = _inline_pem(props, "ssl.keystore.key")
    chain = _inline_pem(props, "ssl.keystore.certificate.chain")
    if (key is None) != (chain is None):
        raise SecurityConfigError(
            "ssl.keystore.key and ssl.keystore.certificate.chain go "
            "together: give both, or ssl.keystore.location"
        )
    if key is not None and props.get("ssl.key.password"):
        raise SecurityConfigError(
            "ssl.key.password: encrypted keys are not supported; give "
            "the key unencrypted (openssl pkey -in key.pem)"
        )
    return None if key is None else key + chain


def _positive(props: Mapping[str, str], key: str, default: int) -> int:
    text = props.get(key, str(default)).strip()
    if not text.isdigit():
        raise SecurityConfigError(f"{key}: {text!r} is not a whole number of milliseconds")
    return int(text)
