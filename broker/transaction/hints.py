"""The hint a person can act on beside each transaction error code: every wire's answers carry it."""

from __future__ import annotations

from clients.errors import ErrorCode, error_name

E = ErrorCode

_HINTS = {
    E.NOT_COORDINATOR: "this broker does not coordinate the transactional id (any more); find "
    "its coordinator again (FindCoordinator key_type 1)",
    E.COORDINATOR_NOT_AVAILABLE: "the transaction coordinator is not available yet; retry",
    E.COORDINATOR_LOAD_IN_PROGRESS: "the coordinator is still loading its transactions; retry",
}


def message(code: int, detail: str = "") -> str:
    if not code:
        return ""
    return "; ".join(part for part in (detail, _HINTS.get(code, "")) if part) or error_name(code)
