"""SCRAM-SHA-256/512 (RFC 5802, RFC 7677) as pure code: the credential a server stores (salt,
iterations, StoredKey, ServerKey; never the password) and both sides of the exchange."""

from __future__ import annotations

import base64
import dataclasses
import hashlib
import hmac
import secrets

HASHES = {"SCRAM-SHA-256": "sha256", "SCRAM-SHA-512": "sha512"}
# Kafka's minimum and the default of kafka-configs; the maximum bounds a client's PBKDF2 cost.
MIN_ITERATIONS = 4096
MAX_ITERATIONS = 16384
DEFAULT_ITERATIONS = 4096
_GS2_HEADER = "n,,"


class ScramError(ValueError):
    """The exchange failed; `error_name` is Kafka's error for it."""

    def __init__(self, error_name: str, message: str) -> None:
        super().__init__(message)
        self.error_name = error_name


@dataclasses.dataclass(frozen=True)
class ScramCredential:
    """What the metadata log keeps for one user and mechanism."""

    mechanism: str
    salt: bytes
    iterations: int
    stored_key: bytes
    server_key: bytes


def _hash(mechanism: str) -> str:
    try:
        return HASHES[mechanism]
    except KeyError:
        raise ScramError(
            "UNSUPPORTED_SASL_MECHANISM",
            f"{mechanism!r} is not supported; use {' or '.join(HASHES)}",
        ) from None


def _hmac(mechanism: str, key: bytes, data: bytes) -> bytes:
    return hmac.new(key, data, _hash(mechanism)).digest()


def salted_password(mechanism: str, password: str, salt: bytes, iterations: int) -> bytes:
    """RFC 5802's Hi(): the costly step, run by the client once per credential."""
    return hashlib.pbkdf2_hmac(_hash(mechanism), password.encode(), salt, iterations)


def credential_from_salted(
    mechanism: str, salted: bytes, salt: bytes, iterations: int
) -> ScramCredential:
    client_key = _hmac(mechanism, salted, b"Client Key")
    stored_key = hashlib.new(_hash(mechanism), client_key).digest()
    return ScramCredential(
        mechanism, salt, iterations, stored_key, _hmac(mechanism, salted, b"Server Key")
    )


def new_credential(
    mechanism: str, password: str, iterations: int = DEFAULT_ITERATIONS, salt: bytes | None = None
) -> ScramCredential:
    salt = salt if salt is not None else secrets.token_bytes(32)
    return credential_from_salted(
        mechanism, salted_password(mechanism, password, salt, iterations), salt, iterations
    )


def check_iterations(iterations: int) -> None:
    if not MIN_ITERATIONS <= iterations <= MAX_ITERATIONS:
        raise ScramError(
            "UNACCEPTABLE_CREDENTIAL",
            f"iterations {iterations} is out of range; use {MIN_ITERATIONS} to {MAX_ITERATIONS}",
        )


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


def _unb64(text: str, what: str) -> bytes:
    try:
        return base64.b64decode(text, validate=True)
    except ValueError:
        raise ScramError("ILLEGAL_SASL_STATE", f"{what} is not base64") from None


def _escape(name: str) -> str:
    return name.replace("=", "=3D").replace(",", "=2C")


def _unescape(name: str) -> str:
    return name.replace("=2C", ",").replace("=3D", "=")


def _attributes(message: str, what: str) -> dict[str, str]:
    out = {}
    for part in message.split(","):
        key, sep, value = part.partition("=")
        if not sep or len(key) != 1:
            raise ScramError("ILLEGAL_SASL_STATE", f"{what} is not a SCRAM message")
        out.setdefault(key, value)
    return out


def _xor(a: bytes, b: bytes) -> bytes:
    return bytes(x ^ y for x, y in zip(a, b))


class ScramClient:
    """first() -> final(server_first) -> verify(server_final)."""

    def __init__(
        self,
        mechanism: str,
        username: str,
        password: str,
        salted_cache: dict | None = None,
        nonce: str | None = None,
    ) -> None:
        _hash(mechanism)
        self.mechanism, self.username, self.password = mechanism, username, password
        self.nonce = nonce or secrets.token_urlsafe(24)
        self._cache = salted_cache  # (mechanism, salt, iterations) -> salted password
        self._bare = f"n={_escape(username)},r={self.nonce}"
        self._server_signature = b""

    def first(self) -> bytes:
        return (_GS2_HEADER + self._bare).encode()

    def final(self, server_first: bytes) -> bytes:
        text = server_first.decode(errors="replace")
        attrs = _attributes(text, "the server's first message")
        nonce, salt_b64, iterations = attrs.get("r", ""), attrs.get("s", ""), attrs.get("i", "")
        if not nonce.startswith(self.nonce) or len(nonce) == len(self.nonce):
            raise ScramError("ILLEGAL_SASL_STATE", "the server's nonce does not extend ours")
        if not iterations.isdigit():
            raise ScramError("ILLEGAL_SASL_STATE", "the server sent no iteration count")
        check_iterations(int(iterations))
        salt = _unb64(salt_b64, "the salt")
        key = (self.mechanism, self.password, salt, int(iterations))
        salted = self._cache.get(key) if self._cache is not None else None
        if salted is None:
            salted = salted_password(self.mechanism, self.password, salt, int(iterations))
            if self._cache is not None:
                self._cache[key] = salted
        without_proof = f"c={_b64(_GS2_HEADER.encode())},r={nonce}"
        auth_message = f"{self._bare},{text},{without_proof}".encode()
        client_key = _hmac(self.mechanism, salted, b"Client Key")
        stored_key = hashlib.new(_hash(self.mechanism), client_key).digest()
        proof = _xor(client_key, _hmac(self.mechanism, stored_key, auth_message))
        self._server_signature = _hmac(
            self.mechanism, _hmac(self.mechanism, salted, b"Server Key"), auth_message
        )
        return f"{without_proof},p={_b64(proof)}".encode()

    def verify(self, server_final: bytes) -> None:
        attrs = _attributes(server_final.decode(errors="replace"), "the server's final message")
        if "e" in attrs:
            raise ScramError("SASL_AUTHENTICATION_FAILED", f"the server said {attrs['e']}")
        if not hmac.compare_digest(
            _unb64(attrs.get("v", ""), "the server signature"), self._server_signature
        ):
            raise ScramError(
                "SASL_AUTHENTICATION_FAILED",
                "the server's signature is wrong: it does not know this password "
                "(a server impersonating the cluster?)",
            )


class ScramServer:
    """first(client_first) -> server_first; final(client_final) -> server_final, or ScramError.
    `credential` is None for an unknown user: the exchange then runs on a made-up credential and
    fails at the proof, exactly like a wrong password, so answers tell no user names apart."""

    def __init__(self, mechanism: str, lookup, fake_salt_key: bytes) -> None:
        _hash(mechanism)
        self.mechanism = mechanism
        self.lookup = lookup  # username -> ScramCredential | None
        self.fake_salt_key = fake_salt_key
        self.username: str | None = None
        self._credential: ScramCredential | None = None
        self._known = False
        self._bare = self._server_first = self._nonce = ""

    def first(self, client_first: bytes) -> bytes:
        text = client_first.decode(errors="replace")
        if not text.startswith(_GS2_HEADER):
            raise ScramError(
                "ILLEGAL_SASL_STATE",
                "channel binding and authzid are not supported "
                "(the first message must start with 'n,,')",
            )
        self._bare = text[len(_GS2_HEADER) :]
        attrs = _attributes(self._bare, "the client's first message")
        if not attrs.get("n") or not attrs.get("r"):
            raise ScramError("ILLEGAL_SASL_STATE", "the first message lacks a user name or nonce")
        self.username = _unescape(attrs["n"])
        credential = self.lookup(self.username)
        self._known = credential is not None
        if credential is None:
            salt = _hmac("SCRAM-SHA-256", self.fake_salt_key, self.username.encode())
            credential = ScramCredential(
                self.mechanism,
                salt,
                DEFAULT_ITERATIONS,
                secrets.token_bytes(32),
                secrets.token_bytes(32),
            )
        self._credential = credential
        self._nonce = attrs["r"] + secrets.token_urlsafe(24)
        self._server_first = f"r={self._nonce},s={_b64(credential.salt)},i={credential.iterations}"
        return self._server_first.encode()

    def final(self, client_final: bytes) -> bytes:
        if self._credential is None:
            raise ScramError("ILLEGAL_SASL_STATE", "the final message came before the first")
        text = client_final.decode(errors="replace")
        without_proof, sep, proof_part = text.rpartition(",p=")
        attrs = _attributes(without_proof, "the client's final message") if sep else {}
        if not sep or attrs.get("r") != self._nonce:
            raise ScramError("ILLEGAL_SASL_STATE", "the final message lacks the proof or nonce")
        if attrs.get("c") != _b64(_GS2_HEADER.encode()):
            raise ScramError("ILLEGAL_SASL_STATE", "channel binding is not supported")
        proof = _unb64(proof_part, "the proof")
        credential = self._credential
        auth_message = f"{self._bare},{self._server_first},{without_proof}".encode()
        signature = _hmac(self.mechanism, credential.stored_key, auth_message)
        client_key = _xor(proof, signature)
        candidate = hashlib.new(_hash(self.mechanism), client_key).digest()
        ok = len(proof) == len(signature) and hmac.compare_digest(candidate, credential.stored_key)
        if not (ok and self._known):
            raise ScramError(
                "SASL_AUTHENTICATION_FAILED",
                f"authentication of user {self.username!r} failed: wrong user name "
                f"or password (mechanism {self.mechanism})",
            )
        server_signature = _hmac(self.mechanism, credential.server_key, auth_message)
        return f"v={_b64(server_signature)}".encode()
