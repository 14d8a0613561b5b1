"""chaos/run.sh --secure: the node certificates and admin settings (written by `kraft dev-certs`), the
nodes' TLS listeners, and the admin's SCRAM user, which the workload then signs in as."""

from __future__ import annotations

import dataclasses
import os
import pathlib
import subprocess
import sys
import time
from typing import Any

import trio

from chaos.node_logs import ROOT

INTERNAL_PORT = 9094  # each broker's mTLS listener (followers, the admin's certificate)
ADMIN = "admin"


class SecureSetupError(RuntimeError):
    """The secure cluster's files or its admin user could not be made; the message says why."""


def _env() -> dict[str, str]:
    path = os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH", "")) if p)
    return {**os.environ, "PYTHONPATH": path}


def _kraft(args: list[str], python: str, what: str, stdin: str | None = None) -> None:
    done = subprocess.run(
        [python, "-m", "entry.main", *args],
        input=stdin,
        capture_output=True,
        text=True,
        env=_env(),
        timeout=60,
    )
    if done.returncode != 0:
        raise SecureSetupError(f"{what} failed: {(done.stderr or done.stdout).strip()[-1000:]}")


def _properties(path: pathlib.Path) -> dict[str, str]:
    lines = (line.strip() for line in path.read_text().splitlines())
    return dict(line.split("=", 1) for line in lines if line and not line.startswith("#"))


@dataclasses.dataclass(frozen=True)
class SecureFiles:
    dir: pathlib.Path  # OUT/secure: pki/, client.properties, admin-tls.properties, ...

    @classmethod
    def create(
        cls, directory: pathlib.Path, hosts: dict[int, str], python: str = sys.executable
    ) -> SecureFiles:
        """A dev CA and a certificate per node naming its namespace address (`kraft dev-certs`)."""
        _kraft(
            ["dev-certs", str(directory), *(f"--node={i}={h}" for i, h in sorted(hosts.items()))],
            python,
            "kraft dev-certs",
        )
        return cls(directory.resolve())

    def node_properties(self, node_id: int, role: str, host: str, port: int) -> dict[str, str]:
        """What node `node_id` adds to its settings: the shared keys, its certificate, and for a
        broker SASL_SSL for clients on `port` and INTERNAL (mTLS) for followers and the admin."""
        props = _properties(self.dir / "server-security.properties")
        props["ssl.keystore.location"] = str(self.dir / "pki" / f"kraft-node-{node_id}.pem")
        if role == "broker":
            props["listeners"] = f"SASL_SSL://{host}:{port},INTERNAL://{host}:{INTERNAL_PORT}"
            props["inter.broker.listener.name"] = "INTERNAL"
        return props

    def _options(self, name: str) -> dict[str, Any]:
        from clients.security import load_command_config, security_options

        return security_options(load_command_config(str(self.dir / name)))

    def admin_scram(self) -> dict[str, Any]:
        """The workload's clients: SASL_SSL as the admin (a super user: no ACL needed)."""
        return self._options("client.properties")

    def admin_mtls(self) -> dict[str, Any]:
        """The admin's certificate: for the controllers and the brokers' INTERNAL listeners."""
        return self._options("admin-tls.properties")

    def add_admin(
        self, internal: str, brokers: list[str], timeout: float, python: str = sys.executable
    ) -> None:
        """Create the admin's SCRAM user through a broker's INTERNAL listener (`kraft user add`
        with the admin's certificate), then wait until every broker accepts its password."""
        from clients.admin import broker_views

        password = self.admin_scram()["sasl_plain_password"]
        _kraft(
            [
                "user",
                "add",
                ADMIN,
                "--password-stdin",
                "--bootstrap-server",
                internal,
                "--command-config",
                str(self.dir / "admin-tls.properties"),
            ],
            python,
            "kraft user add admin",
            stdin=password + "\n",
        )
        deadline = time.monotonic() + timeout
        while True:  # each broker replays the credential from its metadata log
            views = trio.run(lambda: broker_views(brokers, 3.0, **self.admin_scram()))
            refusing = [address for address, view in views.items() if view is None]
            if not refusing:
                return
            if time.monotonic() > deadline:
                raise SecureSetupError(
                    f"brokers {', '.join(refusing)} do not accept the admin's "
                    f"password after {timeout:g} s"
                )
            time.sleep(0.3)
