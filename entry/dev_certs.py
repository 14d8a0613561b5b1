"""A throwaway CA for `kraft dev --secure` and the tests: per node a key and certificate with
CN=kraft-node-<id> for localhost and 127.0.0.1, written as one PEM keystore (key + chain)."""

from __future__ import annotations

import dataclasses
import datetime
import ipaddress
import pathlib

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

VALID_DAYS = 30


@dataclasses.dataclass(frozen=True)
class DevCa:
    key: ec.EllipticCurvePrivateKey
    cert: x509.Certificate
    truststore: pathlib.Path  # the CA certificate, PEM


def _name(common_name: str, organization: str = "kraft dev") -> x509.Name:
    # Most significant first, as CAs issue them: RFC 2253 (what grpc and Java print, and what
    # ssl.principal.mapping.rules match) then reads "CN=<name>,O=kraft dev".
    return x509.Name(
        [
            x509.NameAttribute(NameOID.ORGANIZATION_NAME, organization),
            x509.NameAttribute(NameOID.COMMON_NAME, common_name),
        ]
    )


def _now() -> datetime.datetime:
    return datetime.datetime.now(datetime.UTC)


def create_ca(directory: pathlib.Path, common_name: str = "kraft dev CA") -> DevCa:
    directory.mkdir(parents=True, exist_ok=True)
    key = ec.generate_private_key(ec.SECP256R1())
    name = _name(common_name)
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(_now() - datetime.timedelta(minutes=5))
        .not_valid_after(_now() + datetime.timedelta(days=VALID_DAYS))
        .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
        .add_extension(
            x509.KeyUsage(
                digital_signature=True,
                key_cert_sign=True,
                crl_sign=True,
                content_commitment=False,
                key_encipherment=False,
                data_encipherment=False,
                key_agreement=False,
                encipher_only=False,
                decipher_only=False,
            ),
            critical=True,
        )
        .sign(key, hashes.SHA256())
    )
    truststore = directory / "ca.pem"
    truststore.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    return DevCa(key, cert, truststore)


def issue(
    ca: DevCa,
    directory: pathlib.Path,
    common_name: str,
    hosts: tuple[str, ...] = ("localhost", "127.0.0.1"),
) -> pathlib.Path:
    """A keystore (PEM: private key, certificate, CA certificate) for `common_name`, valid as a
    server for `hosts` and as a client; written to <directory>/<common_name>.pem (mode 600)."""
    key = ec.generate_private_key(ec.SECP256R1())
    names: list[x509.GeneralName] = []
    for host in hosts:
        try:
            names.append(x509.IPAddress(ipaddress.ip_address(host)))
        except ValueError:
            names.append(x509.DNSName(host))
    cert = (
        x509.CertificateBuilder()
        .subject_name(_name(common_name))
        .issuer_name(ca.cert.subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(_now() - datetime.timedelta(minutes=5))
        .not_valid_after(_now() + datetime.timedelta(days=VALID_DAYS))
        .add_extension(x509.SubjectAlternativeName(names), critical=False)
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(
            x509.ExtendedKeyUsage(
                [x509.oid.ExtendedKeyUsageOID.SERVER_AUTH, x509.oid.ExtendedKeyUsageOID.CLIENT_AUTH]
            ),
            critical=False,
        )
        .sign(ca.key, hashes.SHA256())
    )
    path = directory / f"{common_name}.pem"
    path.touch(mode=0o600)
    path.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
        + cert.public_bytes(serialization.Encoding.PEM)
        + ca.cert.public_bytes(serialization.Encoding.PEM)
    )
    return path
