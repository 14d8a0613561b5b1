"""SCRAM sessions: after one SCRAM exchange a client gets a random token, valid for a short
lifetime and only from the host that authenticated; each call carries it instead of a password."""

from __future__ import annotations

import dataclasses
import hashlib
import secrets


@dataclasses.dataclass(frozen=True)
class Session:
    principal: str
    host: str
    expires_ms: int


class SessionTable:
    """In memory only: a restarted node forgets every session and clients authenticate again.
    Tokens are stored by their SHA-256, so a lookup's timing says nothing about a valid token.
    `principal` runs on grpc's thread while the others run in the node's loop: it only reads,
    and the writers never iterate the dict itself (a copy), so neither side sees it half-changed."""

    def __init__(self, lifetime_ms: int, max_sessions: int = 100_000) -> None:
        self.lifetime_ms = lifetime_ms
        self.max_sessions = max_sessions
        self._sessions: dict[bytes, Session] = {}

    def create(self, principal: str, host: str, now_ms: int) -> tuple[str, int]:
        """A new token for `principal` at `host` and its lifetime in ms."""
        if len(self._sessions) >= self.max_sessions:
            self.expire(now_ms)
            if len(self._sessions) >= self.max_sessions:  # still full: drop the oldest
                self._sessions.pop(next(iter(list(self._sessions))), None)
        token = secrets.token_urlsafe(32)
        self._sessions[_key(token)] = Session(principal, host, now_ms + self.lifetime_ms)
        return token, self.lifetime_ms

    def principal(self, token: str, host: str, now_ms: int) -> str | None:
        """The principal of a live session of `host`, or None (unknown, expired, other host)."""
        session = self._sessions.get(_key(token))
        if session is None or session.host != host or now_ms >= session.expires_ms:
            return None  # an expired one is dropped by the next expire()
        return session.principal

    def expire(self, now_ms: int) -> None:
        for key, session in list(self._sessions.items()):
            if now_ms >= session.expires_ms:
                self._sessions.pop(key, None)

    def __len__(self) -> int:
        return len(self._sessions)


def _key(token: str) -> bytes:
    return hashlib.sha256(token.encode()).digest()
