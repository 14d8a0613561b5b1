"""The client's half of SaslAuthenticate: one SCRAM exchange over a channel, answering the
session token that later calls carry. Salted passwords are cached per process, so PBKDF2 runs
once per credential, not once per connection."""
from __future__ import annotations

import threading

import grpc

from clients.errors import ErrorCode, KraftError
from clients.scram import ScramClient, ScramError
from clients.security import ClientSecurity
from clients.wire import security_pb2, security_pb2_grpc

AUTHENTICATE_TIMEOUT_S = 10.0
_SALTED: dict = {}          # (mechanism, password, salt, iterations) -> salted password
_SALTED_LOCK = threading.Lock()
_SALTED_MAX = 64


class _Cache(dict):
    """A small bounded view of _SALTED shared by every exchange of this process."""

    def get(self, key, default=None):
        with _SALTED_LOCK:
            return _SALTED.get(key, default)

    def __setitem__(self, key, value) -> None:
        with _SALTED_LOCK:
            if len(_SALTED) >= _SALTED_MAX:
                _SALTED.clear()
            _SALTED[key] = value


def _answer(stub, request) -> security_pb2.SaslAuthenticateResponse:
    from clients.bridge import as_kraft_error
    try:
        response = stub.SaslAuthenticate(request, timeout=AUTHENTICATE_TIMEOUT_S)
    except grpc.RpcError as exc:
        raise as_kraft_error(exc) from None
    if response.error_code:
        raise KraftError(response.error_code, response.error_message)
    return response


def authenticate(channel: grpc.Channel, security: ClientSecurity) -> tuple[str, float]:
    """SCRAM over `channel` (blocking; a few ms): (session token, its lifetime in seconds).
    Raises KraftError: SASL_AUTHENTICATION_FAILED for a wrong user or password (or a server
    that does not know the password), NETWORK_EXCEPTION when the node is unreachable."""
    mechanism = security.sasl_mechanism.upper()
    stub = security_pb2_grpc.SaslStub(channel)
    client = ScramClient(mechanism, security.sasl_plain_username, security.sasl_plain_password,
                         salted_cache=_Cache())
    first = _answer(stub, security_pb2.SaslAuthenticateRequest(mechanism=mechanism,
                                                                auth_bytes=client.first()))
    try:
        final = client.final(first.auth_bytes)
    except ScramError as exc:
        raise KraftError(ErrorCode[exc.error_name], str(exc)) from None
    done = _answer(stub, security_pb2.SaslAuthenticateRequest(
        mechanism=mechanism, auth_bytes=final, conversation_id=first.conversation_id))
    try:
        client.verify(done.auth_bytes)
    except ScramError as exc:
        raise KraftError(ErrorCode[exc.error_name], str(exc)) from None
    return done.session_token, done.session_lifetime_ms / 1000
