"""The client's half of SaslAuthenticate: one SCRAM exchange per channel (PBKDF2 once per credential
and process), and an interceptor that puts the session token on every later call."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any

import grpc

from clients.errors import ErrorCode, KraftError
from clients.scram import ScramClient, ScramError
from clients.security import SESSION_METADATA_KEY, ClientSecurity
from clients.wire import security_pb2, security_pb2_grpc

AUTHENTICATE_TIMEOUT_S = 10.0
_SALTED: dict = {}  # (mechanism, password, salt, iterations) -> salted password
_SALTED_LOCK = threading.Lock()
_SALTED_MAX = 64
# Refresh a session this long (at most a tenth of its life) before the broker would expire it.
SESSION_REFRESH_MARGIN_S = 60.0


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
    client = ScramClient(
        mechanism, security.sasl_plain_username, security.sasl_plain_password, salted_cache=_Cache()
    )
    first = _answer(
        stub, security_pb2.SaslAuthenticateRequest(mechanism=mechanism, auth_bytes=client.first())
    )
    try:
        final = client.final(first.auth_bytes)
    except ScramError as exc:
        raise KraftError(ErrorCode[exc.error_name], str(exc)) from None
    done = _answer(
        stub,
        security_pb2.SaslAuthenticateRequest(
            mechanism=mechanism, auth_bytes=final, conversation_id=first.conversation_id
        ),
    )
    try:
        client.verify(done.auth_bytes)
    except ScramError as exc:
        raise KraftError(ErrorCode[exc.error_name], str(exc)) from None
    return done.session_token, done.session_lifetime_ms / 1000


def with_session(channel: grpc.Channel, security: ClientSecurity) -> grpc.Channel:
    """`channel` with a SCRAM session: every call carries its token."""
    return grpc.intercept_channel(channel, _SessionInterceptor(_ScramSession(channel, security)))


class _ScramSession:
    """Holds the session token of one channel. The SCRAM exchange runs on first use and when the
    token nears its end or the node forgot it (restart): a few ms once, not per request."""

    def __init__(
        self,
        channel: grpc.Channel,
        security: ClientSecurity,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.channel, self.security, self.clock = channel, security, clock
        self._lock = threading.Lock()
        self._token: str | None = None
        self._refresh_at = 0.0

    def current(self) -> str | None:
        """The token, or None when an exchange is due (no blocking)."""
        with self._lock:
            if self._token is None or self.clock() >= self._refresh_at:
                return None
            return self._token

    def authenticate(self) -> str:
        """Run the SCRAM exchange (blocking: never on the caller's event loop thread)."""
        with self._lock:
            if self._token is not None and self.clock() < self._refresh_at:
                return self._token  # another call authenticated meanwhile
            token, lifetime_s = authenticate(self.channel, self.security)
            self._token = token
            margin = min(SESSION_REFRESH_MARGIN_S, lifetime_s / 10)
            self._refresh_at = self.clock() + lifetime_s - margin
            return token

    def forget(self, token: str) -> None:
        with self._lock:
            if self._token == token:
                self._token = None


class _ClientCallDetails(grpc.ClientCallDetails):
    def __init__(self, details: grpc.ClientCallDetails, metadata: list) -> None:
        self.method = details.method
        self.timeout = details.timeout
        self.metadata = metadata
        self.credentials = details.credentials
        self.wait_for_ready = details.wait_for_ready
        self.compression = details.compression


class _AfterAuthentication(grpc.Future):
    """A call that first needs a session: the exchange runs on a thread of its own (the caller
    may be a trio loop that must not block, or the very node it authenticates with), then the
    call starts; result() and callbacks behave as the call's."""

    def __init__(self, session: _ScramSession, start: Callable[[str], Any]) -> None:
        self._session, self._start = session, start
        self._done = threading.Event()
        self._lock = threading.Lock()
        self._callbacks: list = []
        self._call: Any = None
        self._error: BaseException | None = None
        self._cancelled = False
        threading.Thread(target=self._run, name="kraft-scram", daemon=True).start()

    def _run(self) -> None:
        try:
            token = self._session.authenticate()
        except BaseException as exc:  # noqa: BLE001 - handed to whoever waits on the call
            self._finish(error=exc)
            return
        with self._lock:
            if self._cancelled:
                return
            self._call = self._start(token)
        self._call.add_done_callback(lambda _call: self._finish())

    def _finish(self, error: BaseException | None = None) -> None:
        with self._lock:
            self._error = error
            self._done.set()
            callbacks, self._callbacks = self._callbacks, []
        for fn in callbacks:
            fn(self)

    def add_done_callback(self, fn) -> None:
        with self._lock:
            if not self._done.is_set():
                self._callbacks.append(fn)
                return
        fn(self)

    def cancel(self) -> bool:
        with self._lock:
            self._cancelled = True
            call = self._call
        if call is not None:
            return call.cancel()
        self._finish(error=grpc.FutureCancelledError())
        return True

    def cancelled(self) -> bool:
        return self._cancelled

    def running(self) -> bool:
        return not self._done.is_set()

    def done(self) -> bool:
        return self._done.is_set()

    def result(self, timeout: float | None = None) -> Any:
        if not self._done.wait(timeout):
            raise grpc.FutureTimeoutError()
        if self._error is not None:
            raise self._error
        return self._call.result()

    def exception(self, timeout: float | None = None) -> BaseException | None:
        if not self._done.wait(timeout):
            raise grpc.FutureTimeoutError()
        return self._error if self._error is not None else self._call.exception()

    def traceback(self, timeout: float | None = None) -> Any:
        return None if self._call is None else self._call.traceback(timeout)

    def code(self) -> Any:
        return None if self._call is None else self._call.code()

    def details(self) -> Any:
        return None if self._call is None else self._call.details()


class _SessionInterceptor(grpc.UnaryUnaryClientInterceptor):
    def __init__(self, session: _ScramSession) -> None:
        self.session = session

    def _start(self, continuation, details, request, token: str) -> Any:
        metadata = list(details.metadata or ()) + [(SESSION_METADATA_KEY, token)]
        call = continuation(_ClientCallDetails(details, metadata), request)

        def forget_if_refused(finished: Any) -> None:
            if finished.code() == grpc.StatusCode.UNAUTHENTICATED:
                self.session.forget(token)  # the next call authenticates again

        call.add_done_callback(forget_if_refused)
        return call

    def intercept_unary_unary(self, continuation, details, request):
        token = self.session.current()
        if token is not None:
            return self._start(continuation, details, request, token)
        return _AfterAuthentication(
            self.session, lambda new: self._start(continuation, details, request, new)
        )
