"""The hint a person can act on beside each group error code: every wire's answers carry it."""

from __future__ import annotations

from clients.errors import ErrorCode, error_name

E = ErrorCode

_HINTS = {
    E.NOT_COORDINATOR: "this broker does not coordinate the group (any more); find its "
    "coordinator again",
    E.COORDINATOR_NOT_AVAILABLE: "the group's coordinator is not available yet; retry",
    E.COORDINATOR_LOAD_IN_PROGRESS: "the coordinator is still loading the group; retry",
    E.UNKNOWN_MEMBER_ID: "the coordinator does not know this member (its session ended?); "
    "rejoin with no member id",
    E.ILLEGAL_GENERATION: "the group moved on to a newer generation; rejoin",
    E.REBALANCE_IN_PROGRESS: "the group is rebalancing; rejoin",
    E.FENCED_INSTANCE_ID: "another consumer with this group.instance.id took its place",
    E.INCONSISTENT_GROUP_PROTOCOL: "the member's protocol type or assignors match none of the "
    "group's; use an assignor every member has",
    E.INVALID_SESSION_TIMEOUT: "session.timeout.ms is outside the broker's "
    "group.min.session.timeout.ms..group.max.session.timeout.ms",
    E.INVALID_GROUP_ID: "the group id is empty",
    E.MEMBER_ID_REQUIRED: "join again with the member id in this answer",
    E.OFFSET_METADATA_TOO_LARGE: "the commit's metadata is longer than offset.metadata.max.bytes",
    E.NON_EMPTY_GROUP: "the group has active members; stop its consumers first",
    E.GROUP_ID_NOT_FOUND: "no such group",
}


def message(code: int, detail: str = "") -> str:
    if not code:
        return ""
    hint = _HINTS.get(code, "")
    return "; ".join(part for part in (detail, hint) if part) or error_name(code)
