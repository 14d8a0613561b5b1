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
    Tokens are stored by their SHA-256, so a lookup's timing says nothing about a valid token."""

    def __init__(self, lifetime_ms: int, max_sessions: int = 100_000) -> None:
        self.lifetime_ms = lifetime_ms
        self.max_sessions = max_sessions
        self._sessions: dict[bytes, Session] = {}

    def create(self, principal: str, host: str, now_ms: int) -> tuple[str, int]:
        """A new token for `principal` at `host` and its lifetime in ms."""
        if len(self._sessions) >= self.max_sessions:
            self.expire(now_ms)
            if len(self._sessions) >= self.max_sessions:     # still full: drop the oldest
                del self._sessions[next(iter(self._sessions))]
        token = secrets.token_urlsafe(32)
        self._sessions[_key(token)] = Session(principal, host, now_ms + self.lifetime_ms)
        return token, self.lifetime_ms

    def principal(self, token: str, host: str, now_ms: int) -> str | None:
        """The principal of a live session of `host`, or None (unknown, expired, other host)."""
        session = self._sessions.get(_key(token))
        if session is None or session.host != host:
            return None
        if now_ms >= session.expires_ms:
            self._sessions.pop(_key(token), None)
            return None
        return session.principal

    def expire(self, now_ms: int) -> None:
        for key in [k for k, s in self._sessions.items() if now_ms >= s.expires_ms]:
            del self._sessions[key]

    def __len__(self) -> int:
        return len(self._sessions)


def _key(token: str) -> bytes:
    return hashlib.sha256(token.encode()).digest()
