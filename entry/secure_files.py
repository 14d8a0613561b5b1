"""`kraft dev-certs`: kraft dev --secure's files for nodes started some other way (the secure
docker compose cluster, chaos/run.sh --secure): a dev CA, node certificates, the admin's settings."""

from __future__ import annotations

import argparse
import pathlib
import re
import secrets
from collections.abc import Callable

from entry.dev_certs import issue
from entry.dev_secure import (
    ADMIN,
    SecureSetup,
    _ca,
    _old_password,
    node_security_properties,
    write_client_properties,
)

SERVER_PROPERTIES = "server-security.properties"
LOCAL_HOSTS = ("localhost", "127.0.0.1")
_NODE = re.compile(r"(\d+)=([^,=\s]+(?:,[^,=\s]+)*)")

EXAMPLES = """example (docker-compose.secure.yml's init service):
  kraft dev-certs /etc/kraft/secure --node 1=controller1 --node 4=broker1 --node 5=broker2

DIR then holds pki/ca.pem (the truststore), pki/kraft-node-<id>.pem (a node's keystore: key and
chain, CN kraft-node-<id>, subjectAltName its hosts and localhost), pki/admin.pem (CN admin),
client.properties (SASL_SSL as admin, SCRAM-SHA-256, with a generated password: create the user
with it through a broker's mTLS listener, see admin-tls.properties), admin-tls.properties (the
admin's certificate) and server-security.properties (what every node adds to its own settings).
A second run keeps the CA and the password and issues the certificates again."""


def node_hosts(spec: str) -> tuple[int, tuple[str, ...]]:
    """'4=broker1,10.77.0.4' -> (4, ('broker1', '10.77.0.4'))."""
    m = _NODE.fullmatch(spec.strip())
    if not m:
        raise argparse.ArgumentTypeError(f"--node {spec!r}: give ID=HOST[,HOST...], e.g. 4=broker1")
    return int(m.group(1)), tuple(m.group(2).split(","))


def write_secure_files(directory: pathlib.Path, nodes: dict[int, tuple[str, ...]]) -> SecureSetup:
    pki = directory / "pki"
    pki.mkdir(parents=True, exist_ok=True)
    ca = _ca(pki)
    for node_id, hosts in sorted(nodes.items()):
        issue(ca, pki, f"kraft-node-{node_id}", tuple(dict.fromkeys(hosts + LOCAL_HOSTS)))
    password = _old_password(directory / "client.properties") or secrets.token_urlsafe(18)
    setup = SecureSetup(directory, ca.truststore, issue(ca, pki, ADMIN), password, {})
    write_client_properties(setup)
    props = node_security_properties(ca.truststore, sorted(nodes))
    (directory / SERVER_PROPERTIES).write_text(
        "# kraft dev-certs: the security settings every node shares; each node adds\n"
        f"# ssl.keystore.location={pki}/kraft-node-<id>.pem and its listeners\n"
        + "".join(f"{k}={v}\n" for k, v in props.items())
    )
    return setup


def register(
    sub: argparse._SubParsersAction, add_common: Callable[[argparse.ArgumentParser], None]
) -> None:
    """dev-certs writes files and talks to no cluster: add_common (the clients' options) is not used."""
    p = sub.add_parser(
        "dev-certs",
        help="write a dev CA, node certificates and the admin's settings",
        description="Write kraft dev --secure's certificates and settings for nodes "
        "started some other way (docker compose, chaos/run.sh --secure).",
        epilog=EXAMPLES,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("dir", type=pathlib.Path, help="where to write (created if missing)")
    p.add_argument(
        "--node",
        type=node_hosts,
        action="append",
        required=True,
        metavar="ID=HOST[,HOST]",
        help="a node id and the host names others dial it by (repeat for each node)",
    )
    p.set_defaults(func=cmd_dev_certs)


def cmd_dev_certs(args: argparse.Namespace) -> int:
    nodes = dict(args.node)
    if len(nodes) != len(args.node):
        raise ValueError("--node: a node id is given twice; give each node once")
    setup = write_secure_files(args.dir.resolve(), nodes)
    print(
        f"wrote certificates for nodes {sorted(nodes)} and the admin in {args.dir / 'pki'}; "
        f"admin settings {setup.client_properties} (SASL_SSL) and {setup.admin_tls_properties} "
        f"(mTLS); node settings {args.dir / SERVER_PROPERTIES}"
    )
    return 0
