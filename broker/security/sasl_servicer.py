"""The Sasl gRPC service on SASL listeners: the server's half of SCRAM against the metadata image's
credentials; success opens a session, a failure is answered late and counted per host."""

from __future__ import annotations

import logging
import secrets
from collections.abc import Callable

import trio

from broker.security.sessions import SessionTable
from broker.security.throttle import FailedAuthThrottle
from clients.errors import ErrorCode
from clients.grpc_server import request_context
from clients.rate_limited_log import RateLimitedLog
from clients.scram import ScramCredential, ScramError, ScramServer
from clients.wire import security_pb2 as pb

log = logging.getLogger(__name__)

CONVERSATION_TIMEOUT_MS = 10_000
MAX_CONVERSATIONS = 1_000

Lookup = Callable[[str, str], ScramCredential | None]  # (user, mechanism) -> credential


class SaslServicer:
    def __init__(
        self,
        lookup: Lookup,
        sessions: SessionTable,
        mechanisms: tuple[str, ...],
        clock_ms: Callable[[], int],
        *,
        failed_delay_ms: int = 100,
        throttle: FailedAuthThrottle | None = None,
    ) -> None:
        self.lookup, self.sessions, self.mechanisms = lookup, sessions, mechanisms
        self.clock_ms, self.failed_delay_ms = clock_ms, failed_delay_ms
        self.throttle = throttle or FailedAuthThrottle()
        self._fake_salt_key = secrets.token_bytes(32)
        # conversation id -> (ScramServer, host, deadline ms)
        self._conversations: dict[str, tuple[ScramServer, str, int]] = {}
        self._failures = RateLimitedLog(logger=log)

    async def SaslAuthenticate(
        self, request: pb.SaslAuthenticateRequest
    ) -> pb.SaslAuthenticateResponse:
        host, now = request_context().host, self.clock_ms()
        blocked = self.throttle.blocked_ms(host, now)
        if blocked:
            return _error(
                ErrorCode.SASL_AUTHENTICATION_FAILED,
                f"too many failed authentications from {host}; retry in {blocked / 1000:.0f} s",
            )
        if request.mechanism not in self.mechanisms:
            return _error(
                ErrorCode.UNSUPPORTED_SASL_MECHANISM,
                f"mechanism {request.mechanism!r} is not enabled on this listener; "
                f"use {' or '.join(self.mechanisms)}",
            )
        try:
            if not request.conversation_id:
                return self._first(request, host, now)
            return await self._final(request, host, now)
        except ScramError as exc:
            return _error(ErrorCode[exc.error_name], str(exc))

    def _first(self, request, host: str, now: int) -> pb.SaslAuthenticateResponse:
        mechanism = request.mechanism
        server = ScramServer(
            mechanism, lambda user: self.lookup(user, mechanism), self._fake_salt_key
        )
        server_first = server.first(request.auth_bytes)
        self._expire(now)
        conversation_id = secrets.token_urlsafe(16)
        self._conversations[conversation_id] = (server, host, now + CONVERSATION_TIMEOUT_MS)
        return pb.SaslAuthenticateResponse(auth_bytes=server_first, conversation_id=conversation_id)

    async def _final(self, request, host: str, now: int) -> pb.SaslAuthenticateResponse:
        found = self._conversations.pop(request.conversation_id, None)
        if (
            found is None
            or found[1] != host
            or now >= found[2]
            or found[0].mechanism != request.mechanism
        ):
            return _error(
                ErrorCode.ILLEGAL_SASL_STATE,
                "no SCRAM exchange with that conversation id is under way from this "
                "host (it expired after 10 s); start again with the first message",
            )
        server = found[0]
        try:
            server_final = server.final(request.auth_bytes)
        except ScramError as exc:
            if exc.error_name == "SASL_AUTHENTICATION_FAILED":
                self.throttle.failed(host, now)
                self._failures.warning(
                    host, "failed SCRAM authentication of user %r from %s", server.username, host
                )
                await trio.sleep(self.failed_delay_ms / 1000)  # Kafka's delayed answer
            raise
        self.throttle.succeeded(host)
        token, lifetime_ms = self.sessions.create(f"User:{server.username}", host, now)
        return pb.SaslAuthenticateResponse(
            auth_bytes=server_final, session_token=token, session_lifetime_ms=lifetime_ms
        )

    def _expire(self, now: int) -> None:
        for key in [k for k, (_, _, deadline) in self._conversations.items() if now >= deadline]:
            del self._conversations[key]
        while len(self._conversations) >= MAX_CONVERSATIONS:
            del self._conversations[next(iter(self._conversations))]


def _error(code: ErrorCode, message: str) -> pb.SaslAuthenticateResponse:
    return pb.SaslAuthenticateResponse(error_code=code, error_message=message)
