"""`kraft dev-certs`: the CA, node certificates naming the given hosts, the admin's settings and the
nodes' shared settings; a second run keeps the CA and the admin's password."""

from __future__ import annotations

import ipaddress

from cryptography import x509

from clients.security import load_command_config
from entry.main import main


def _san(path) -> set[str]:
    cert = x509.load_pem_x509_certificates(path.read_bytes())[0]
    names = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    return {str(n.value) if isinstance(n.value, ipaddress.IPv4Address) else n.value for n in names}


def _cn(path) -> str:
    cert = x509.load_pem_x509_certificates(path.read_bytes())[0]
    return cert.subject.get_attributes_for_oid(x509.oid.NameOID.COMMON_NAME)[0].value


def test_writes_certificates_and_settings(tmp_path, capsys):
    out = tmp_path / "secure"
    assert (
        main(["dev-certs", str(out), "--node", "1=controller1", "--node", "4=broker1,10.77.0.4"])
        == 0
    )
    pki = out / "pki"
    assert _san(pki / "kraft-node-4.pem") == {"broker1", "10.77.0.4", "localhost", "127.0.0.1"}
    assert _cn(pki / "kraft-node-1.pem") == "kraft-node-1" and _cn(pki / "admin.pem") == "admin"
    assert (pki / "kraft-node-1.pem").stat().st_mode & 0o077 == 0  # keys: owner only
    scram = load_command_config(str(out / "client.properties"))
    assert (scram.security_protocol, scram.sasl_plain_username) == ("SASL_SSL", "admin")
    assert scram.ssl_cafile == str(pki / "ca.pem") and len(scram.sasl_plain_password) > 16
    tls = load_command_config(str(out / "admin-tls.properties"))
    assert (tls.security_protocol, tls.ssl_certfile) == ("SSL", str(pki / "admin.pem"))
    shared = dict(
        line.split("=", 1)
        for line in (out / "server-security.properties").read_text().splitlines()
        if line and not line.startswith("#")
    )
    assert shared["super.users"] == "User:admin;User:kraft-node-1;User:kraft-node-4"
    assert shared["ssl.truststore.location"] == str(pki / "ca.pem")

    ca = (pki / "ca.pem").read_bytes()
    assert main(["dev-certs", str(out), "--node", "1=controller1"]) == 0
    assert (pki / "ca.pem").read_bytes() == ca
    assert (
        load_command_config(str(out / "client.properties")).sasl_plain_password
        == scram.sasl_plain_password
    )


def test_a_node_given_twice_is_refused(tmp_path, capsys):
    assert main(["dev-certs", str(tmp_path), "--node", "1=a", "--node", "1=b"]) == 1
    assert "node id is given twice" in capsys.readouterr().err
