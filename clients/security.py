"""How clients (and nodes dialing nodes) secure channels: kafka-python's option names, Kafka's
client properties (--command-config), TLS credentials from PEM files; every channel opens here."""

from __future__ import annotations

import dataclasses
import pathlib
import re
from collections.abc import Mapping
from typing import Any

import grpc

PROTOCOLS = ("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL")
MECHANISMS = ("SCRAM-SHA-256", "SCRAM-SHA-512")
# The metadata key carrying a SCRAM session token on every call after authentication.
SESSION_METADATA_KEY = "kraft-session"

_PEM_BLOCK = re.compile(rb"-----BEGIN ([A-Z ]+)-----.+?-----END \1-----\s*", re.DOTALL)


class SecurityConfigError(ValueError):
    """A security setting that cannot be used; the message names the setting."""


@dataclasses.dataclass(frozen=True)
class ClientSecurity:
    """kafka-python's names. `ssl_certfile` may hold the key too (one PEM with key and chain)."""

    security_protocol: str = "PLAINTEXT"
    ssl_cafile: str | None = None
    ssl_certfile: str | None = None
    ssl_keyfile: str | None = None
    sasl_mechanism: str = "SCRAM-SHA-256"
    sasl_plain_username: str | None = None
    sasl_plain_password: str | None = dataclasses.field(default=None, repr=False)
    # PEM given as data rather than files (Kafka's ssl.truststore.certificates, and
    # ssl.keystore.key with ssl.keystore.certificate.chain): CA certificates, key + chain.
    ssl_cadata: bytes | None = dataclasses.field(default=None, repr=False)
    ssl_certdata: bytes | None = dataclasses.field(default=None, repr=False)

    def __post_init__(self) -> None:
        protocol = self.security_protocol.upper()
        object.__setattr__(self, "security_protocol", protocol)
        if protocol not in PROTOCOLS:
            raise SecurityConfigError(
                f"security_protocol: {self.security_protocol!r} is not one "
                f"of {', '.join(PROTOCOLS)}"
            )
        if self.uses_sasl:
            if self.sasl_mechanism.upper() not in MECHANISMS:
                raise SecurityConfigError(
                    f"sasl_mechanism: {self.sasl_mechanism!r} is not "
                    f"supported; use {' or '.join(MECHANISMS)}"
                )
            if not self.sasl_plain_username or self.sasl_plain_password is None:
                raise SecurityConfigError(
                    f"security_protocol {protocol} needs a user name and "
                    "password (sasl_plain_username, sasl_plain_password)"
                )

    @property
    def uses_tls(self) -> bool:
        return self.security_protocol in ("SSL", "SASL_SSL")

    @property
    def uses_sasl(self) -> bool:
        return self.security_protocol.startswith("SASL_")


PLAINTEXT = ClientSecurity()


SECURITY_OPTIONS = frozenset(f.name for f in dataclasses.fields(ClientSecurity))


def client_security(**options: Any) -> ClientSecurity | None:
    """kafka-python's keyword arguments (security_protocol="SASL_SSL", ssl_cafile=...,
    sasl_plain_username=...) as a ClientSecurity; None when none is given (PLAINTEXT). An
    unknown keyword is a TypeError, as for any other constructor argument."""
    unknown = sorted(set(options) - SECURITY_OPTIONS)
    if unknown:
        raise TypeError(
            f"unexpected keyword argument {unknown[0]!r} (security options are "
            f"{', '.join(sorted(SECURITY_OPTIONS))})"
        )
    given = {k: v for k, v in options.items() if v is not None}
    return ClientSecurity(**given) if given else None


def security_options(security: ClientSecurity) -> dict[str, Any]:
    """The kafka-python keyword arguments that make `security` (none for PLAINTEXT)."""
    if security.security_protocol == "PLAINTEXT":
        return {}
    return {k: v for k, v in dataclasses.asdict(security).items() if v is not None}


def read_pem_file(path: str, what: str) -> bytes:
    file = pathlib.Path(path)
    if not file.is_file():
        raise SecurityConfigError(f"{what}: {path} does not exist")
    data = file.read_bytes()
    if b"-----BEGIN" not in data:
        raise SecurityConfigError(f"{what}: {path} is not a PEM file (only PEM is supported)")
    return data


def split_pem(data: bytes) -> tuple[bytes, bytes]:
    """A PEM keystore (key and certificate chain in one file) -> (private key, chain)."""
    key, chain = b"", b""
    for match in _PEM_BLOCK.finditer(data):
        if match.group(1).endswith(b"PRIVATE KEY"):
            if b"ENCRYPTED" in match.group(1):
                raise SecurityConfigError(
                    "the private key is encrypted; kraft reads unencrypted "
                    "PEM keys only (openssl pkey -in key.pem -out plain.pem)"
                )
            key += match.group(0)
        elif match.group(1) == b"CERTIFICATE":
            chain += match.group(0)
    return key, chain


def key_and_chain(
    certfile: str | None, keyfile: str | None, what: str
) -> tuple[bytes, bytes] | None:
    """The private key and certificate chain from one or two PEM files (None: no keystore)."""
    if not certfile and not keyfile:
        return None
    key, chain = split_pem(read_pem_file(certfile or keyfile, what))
    if keyfile and keyfile != certfile:
        key = split_pem(read_pem_file(keyfile, what))[0]
    if not key or not chain:
        raise SecurityConfigError(
            f"{what}: {certfile or keyfile} needs a private key and a certificate (PEM)"
        )
    return key, chain


def normalize_pem(text: str) -> bytes:
    """PEM blocks as grpc reads them, from a value whose line breaks were lost (a .properties
    value continued with backslashes joins the lines): each body re-wrapped at 64 columns."""
    out = []
    for match in re.finditer(r"-----BEGIN ([A-Z ]+)-----(.*?)-----END \1-----", text, re.DOTALL):
        body = "".join(match.group(2).split())
        lines = [body[i : i + 64] for i in range(0, len(body), 64)]
        out.append(
            "\n".join(
                [f"-----BEGIN {match.group(1)}-----", *lines, f"-----END {match.group(1)}-----"]
            )
            + "\n"
        )
    if not out:
        raise SecurityConfigError("the value holds no PEM block (-----BEGIN ...-----)")
    return "".join(out).encode()


def channel_credentials(security: ClientSecurity) -> grpc.ChannelCredentials:
    root = security.ssl_cadata or (
        read_pem_file(security.ssl_cafile, "ssl_cafile") if security.ssl_cafile else None
    )
    if security.ssl_certdata is not None:
        pair = split_pem(security.ssl_certdata)
    else:
        pair = key_and_chain(security.ssl_certfile, security.ssl_keyfile, "ssl_certfile")
    if pair is None:
        return grpc.ssl_channel_credentials(root_certificates=root)
    return grpc.ssl_channel_credentials(
        root_certificates=root, private_key=pair[0], certificate_chain=pair[1]
    )


def open_secure_channel(address: str, security: ClientSecurity, options: list) -> grpc.Channel:
    if security.uses_tls:
        channel = grpc.secure_channel(address, channel_credentials(security), options=options)
    else:
        channel = grpc.insecure_channel(address, options=options)
    from clients.channel_thread import keep_thread

    keep_thread(channel)
    if not security.uses_sasl:
        return channel
    from clients.sasl_client import with_session  # imports this module

    return with_session(channel, security)


# -- Kafka's client properties (--command-config) ----------------------------------------------
_JAAS = re.compile(r'(\w+)\s*=\s*"((?:[^"\\]|\\.)*)"')


def from_properties(props: Mapping[str, str]) -> ClientSecurity:
    """Kafka's client properties: security.protocol, sasl.mechanism, sasl.jaas.config (or
    sasl.username / sasl.password), ssl.truststore.location, ssl.keystore.location (one PEM
    file with the key and the certificate chain)."""
    username, password = props.get("sasl.username"), props.get("sasl.password")
    jaas = props.get("sasl.jaas.config", "")
    if jaas:
        fields = dict(_JAAS.findall(jaas))
        username = fields.get("username", username)
        password = fields.get("password", password)
    for key in ("ssl.truststore.type", "ssl.keystore.type"):
        if props.get(key, "PEM").upper() != "PEM":
            raise SecurityConfigError(
                f"{key}: only PEM is supported (convert a JKS/PKCS12 store with keytool/openssl)"
            )
    try:
        return ClientSecurity(
            security_protocol=props.get("security.protocol", "PLAINTEXT"),
            ssl_cafile=props.get("ssl.truststore.location") or None,
            ssl_certfile=props.get("ssl.keystore.location") or None,
            sasl_mechanism=props.get("sasl.mechanism", "SCRAM-SHA-256"),
            sasl_plain_username=username,
            sasl_plain_password=password,
        )
    except SecurityConfigError as exc:
        raise SecurityConfigError(f"{exc} (in the client properties)") from None


def load_command_config(path: str | None) -> ClientSecurity:
    """The `--command-config FILE` of every kraft command (PLAINTEXT without one)."""
    if not path:
        return PLAINTEXT
    file = pathlib.Path(path)
    if not file.is_file():
        raise SecurityConfigError(f"--command-config: {path} does not exist")
    props: dict[str, str] = {}
    for raw in file.read_text().splitlines():
        line = raw.strip()
        if not line or line[0] in "#!":
            continue
        key, sep, value = line.partition("=")
        if not sep:
            raise SecurityConfigError(f"--command-config {path}: {raw!r} is not key=value")
        props[key.strip()] = value.strip()
    return from_properties(props)
