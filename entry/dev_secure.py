"""`kraft dev --secure`: dev certificates, mTLS between nodes, SASL_SSL (SCRAM) for clients, ACLs on
with the admin and nodes as super users; the admin's password goes to DATA/client.properties."""

from __future__ import annotations

import dataclasses
import os
import pathlib
import secrets
import time
from collections.abc import Callable
from typing import Any

from broker.security.principals import node_principal
from entry.dev_certs import DevCa, create_ca, issue
from entry.dev_cluster import DevClusterError, NodePlan, free_ports

ADMIN = "admin"
MECHANISM = "SCRAM-SHA-256"


@dataclasses.dataclass(frozen=True)
class SecureSetup:
    data: pathlib.Path
    truststore: pathlib.Path
    admin_keystore: pathlib.Path  # CN=admin: mTLS on the brokers' INTERNAL listener
    admin_password: str = dataclasses.field(repr=False)
    internal: dict[int, str]  # broker id -> its INTERNAL listener (host:port)

    @property
    def client_properties(self) -> pathlib.Path:
        return self.data / "client.properties"

    @property
    def admin_tls_properties(self) -> pathlib.Path:
        """The admin's certificate: for the controllers (kraft quorum describe), which serve
        certificates only."""
        return self.data / "admin-tls.properties"

    def admin_mtls(self) -> dict[str, Any]:
        return {
            "security_protocol": "SSL",
            "ssl_cafile": str(self.truststore),
            "ssl_certfile": str(self.admin_keystore),
        }

    def admin_scram(self) -> dict[str, Any]:
        return {
            "security_protocol": "SASL_SSL",
            "ssl_cafile": str(self.truststore),
            "sasl_mechanism": MECHANISM,
            "sasl_plain_username": ADMIN,
            "sasl_plain_password": self.admin_password,
        }


def _ca(pki: pathlib.Path) -> DevCa:
    """The CA of an earlier --secure run in this data dir, else a new one."""
    from cryptography import x509
    from cryptography.hazmat.primitives import serialization

    key_path = pki / "ca-key.pem"
    if key_path.exists() and (pki / "ca.pem").exists():
        key = serialization.load_pem_private_key(key_path.read_bytes(), password=None)
        cert = x509.load_pem_x509_certificate((pki / "ca.pem").read_bytes())
        return DevCa(key, cert, pki / "ca.pem")
    ca = create_ca(pki)
    key_path.touch(mode=0o600)
    key_path.write_bytes(
        ca.key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )
    return ca


def _old_password(path: pathlib.Path) -> str | None:
    if not path.exists():
        return None
    for line in path.read_text().splitlines():
        if line.startswith("sasl.password="):
            return line.split("=", 1)[1]
    return None


def node_security_properties(truststore: pathlib.Path, node_ids: list[int]) -> dict[str, str]:
    """What every node of a secure dev cluster shares: mTLS on CONTROLLER and INTERNAL, SCRAM on
    SASL_SSL, ACLs on with the admin and the nodes as super users."""
    return {
        "listener.security.protocol.map": "CONTROLLER:SSL,INTERNAL:SSL,SASL_SSL:SASL_SSL",
        "ssl.truststore.location": str(truststore),
        "ssl.client.auth": "required",
        "listener.name.sasl_ssl.ssl.client.auth": "none",
        "sasl.enabled.mechanisms": "SCRAM-SHA-256,SCRAM-SHA-512",
        # ACLs on; the admin and the nodes (which call each other) bypass them, every
        # other user needs `kraft acl add`.
        "authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
        "super.users": ";".join([f"User:{ADMIN}"] + [node_principal(i) for i in node_ids]),
    }


def secure_plans(
    data: pathlib.Path,
    plans: list[NodePlan],
    host: str,
    *,
    pick_ports: Callable[[str, int], list[int]] = free_ports,
) -> tuple[list[NodePlan], SecureSetup]:
    """The plans with TLS: controllers serve CONTROLLER over mTLS; each broker serves SASL_SSL on
    its address for clients and INTERNAL (mTLS) on a free port for followers and the admin."""
    pki = data / "pki"
    pki.mkdir(parents=True, exist_ok=True)
    ca = _ca(pki)
    brokers = [p for p in plans if "broker" in p.roles]
    internal_ports = pick_ports(host, len(brokers))
    internal = {p.id: f"{host}:{port}" for p, port in zip(brokers, internal_ports)}
    common = node_security_properties(ca.truststore, [p.id for p in plans])
    out = []
    for p in plans:
        props = dict(p.properties)
        props.update(common)
        props["ssl.keystore.location"] = str(issue(ca, pki, f"kraft-node-{p.id}"))
        if p.id in internal:
            props["listeners"] = f"SASL_SSL://{p.address},INTERNAL://{internal[p.id]}"
            props["inter.broker.listener.name"] = "INTERNAL"
        # No Kafka wire listener here: it serves PLAINTEXT only so far.
        out.append(dataclasses.replace(p, properties=props, kafka_address=None))
    admin = issue(ca, pki, ADMIN)
    password = _old_password(data / "client.properties") or secrets.token_urlsafe(18)
    return out, SecureSetup(data, ca.truststore, admin, password, internal)


def write_client_properties(setup: SecureSetup) -> None:
    text = (
        f"# kraft dev --secure: the admin's client settings (Kafka's names)\n"
        f"security.protocol=SASL_SSL\nsasl.mechanism={MECHANISM}\n"
        f"sasl.username={ADMIN}\nsasl.password={setup.admin_password}\n"
        f"ssl.truststore.location={setup.truststore}\n"
    )
    tls = (
        f"# kraft dev --secure: the admin's certificate (for the controllers' listeners)\n"
        f"security.protocol=SSL\nssl.truststore.location={setup.truststore}\n"
        f"ssl.keystore.location={setup.admin_keystore}\n"
    )
    for path, content in ((setup.client_properties, text), (setup.admin_tls_properties, tls)):
        path.touch(mode=0o600)
        os.chmod(path, 0o600)
        path.write_text(content)


def bootstrap_admin(setup: SecureSetup, brokers: list[NodePlan], timeout_s: float) -> None:
    """Create the admin's SCRAM credential through a broker's INTERNAL listener (the admin
    certificate), then wait until every broker's SASL_SSL listener accepts the password."""
    from clients.admin import Admin
    from clients.errors import KraftError

    first = setup.internal[brokers[0].id]
    with Admin(first, request_timeout_ms=int(timeout_s * 1000), **setup.admin_mtls()) as admin:
        admin.upsert_user_scram_credential(ADMIN, setup.admin_password, MECHANISM)
    write_client_properties(setup)
    deadline = time.monotonic() + timeout_s
    for broker in brokers:
        while True:
            time.sleep(0.2)  # each broker replays the credential from the metadata log
            try:
                with Admin(broker.address, request_timeout_ms=5000, **setup.admin_scram()) as admin:
                    admin.describe_cluster()
                break
            except KraftError as exc:
                if time.monotonic() > deadline:
                    raise DevClusterError(
                        f"{broker.label} does not accept the admin's password "
                        f"after {timeout_s:g} s ({exc})"
                    ) from None
