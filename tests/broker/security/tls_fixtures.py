"""Certificates and secured gRPC servers for the security tests: a dev CA, node and client
keystores, and a server config with TLS listeners."""

from __future__ import annotations

import pathlib
import sys

from broker.server.config import build_config
from entry.dev_certs import create_ca, issue

# pytest runs with --import-mode=importlib: sibling helpers import by name.
sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[2] / "clients"))
from test_grpc_server import Servicer  # noqa: E402,F401 - records each request's context


def make_pki(tmp: pathlib.Path) -> dict[str, pathlib.Path]:
    """ca.pem, kraft-node-1..3.pem, alice.pem, and rogue.pem signed by another CA."""
    ca = create_ca(tmp / "ca")
    paths = {"ca": ca.truststore}
    for name in ("kraft-node-1", "kraft-node-2", "kraft-node-3", "alice"):
        paths[name] = issue(ca, tmp / "ca", name)
    other = create_ca(tmp / "other", "rogue CA")
    paths["rogue-node-2"] = issue(other, tmp / "other", "kraft-node-2")
    return paths


def secure_config(pki: dict[str, pathlib.Path], node_id: int = 1, **extra: str):
    props = {
        "node.id": str(node_id),
        "process.roles": "broker,controller",
        "listeners": "SSL://127.0.0.1:0,CONTROLLER://127.0.0.1:0",
        "listener.security.protocol.map": "SSL:SSL,CONTROLLER:SSL",
        "ssl.keystore.location": str(pki[f"kraft-node-{node_id}"]),
        "ssl.truststore.location": str(pki["ca"]),
        "ssl.client.auth": "required",
    }
    props.update(extra)
    return build_config(props)
