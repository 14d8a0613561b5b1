"""The limits every request is checked against at the wire edge, before it reaches a core, and
the checks each service's request_checks module is built from; each refusal names the field.

Limits (Kafka's where Kafka has one):
- names a client picks (group id, group.instance.id, client id, protocol type and names): at most
  MAX_NAME_LENGTH = 249 characters, Kafka's limit for topic names and group.instance.id. A group
  id is a key of every record the group writes to `__consumer_offsets`, and comes back in
  answers and log lines: a megabyte of it costs a megabyte each time.
- member ids: at most MAX_MEMBER_ID_LENGTH = 286, the longest the coordinator hands out (a
  249-character client id, '-', a UUID).
- subscriptions (JoinGroup protocol metadata) and assignments (SyncGroup): at most
  MAX_GROUP_RECORD_BYTES in all per request, the default max.message.bytes of a topic (so of
  `__consumer_offsets`): the group's record carries them and must fit one batch.
- epochs, partitions and sizes: within their Kafka types (a producer epoch is an int16) and not
  negative where Kafka has no meaning for a negative value."""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterable
from typing import Any

from clients.errors import ErrorCode

MAX_NAME_LENGTH = 249
MAX_MEMBER_ID_LENGTH = MAX_NAME_LENGTH + 1 + 36
MAX_GROUP_RECORD_BYTES = 1_048_588
MAX_PROTOCOLS = 64  # assignors a member offers; Kafka's clients offer one to three
INT16_MAX = (1 << 15) - 1
INT32_MAX = (1 << 31) - 1

E = ErrorCode


class Refused(Exception):
    """A request (or one part of it) refused before it reached a core."""

    def __init__(self, code: int, message: str) -> None:
        super().__init__(message)
        self.code, self.message = code, message


def check_length(
    field: str, value: str, limit: int, code: int = E.INVALID_REQUEST, required: bool = False
) -> None:
    if required and not value:
        raise Refused(code, f"{field} is empty; set it")
    if len(value) > limit:
        raise Refused(code, f"{field} is {len(value)} characters long; the limit is {limit}")


def check_range(
    field: str, value: int, lo: int, hi: int, code: int = E.INVALID_REQUEST, hint: str = ""
) -> None:
    if not lo <= value <= hi:
        raise Refused(
            code,
            f"{field}={value} is out of range: use {lo} to {hi}" + (f" ({hint})" if hint else ""),
        )


def check_not_negative(
    field: str, value: int, code: int = E.INVALID_REQUEST, hint: str = ""
) -> None:
    if value < 0:
        raise Refused(code, f"{field}={value} is negative" + (f"; {hint}" if hint else ""))


def check_total_bytes(
    field: str, sizes: Iterable[int], limit: int, code: int = E.INVALID_REQUEST, hint: str = ""
) -> None:
    total = sum(sizes)
    if total > limit:
        raise Refused(
            code,
            f"{field} total {total} bytes; the limit is {limit}" + (f" ({hint})" if hint else ""),
        )


def check_group_id(value: str, field: str = "group_id") -> None:
    check_length(field, value, MAX_NAME_LENGTH, E.INVALID_GROUP_ID, required=True)


def check_member_id(value: str, field: str = "member_id") -> None:
    check_length(field, value, MAX_MEMBER_ID_LENGTH)


def check_instance_id(value: str | None, field: str = "group_instance_id") -> None:
    """Kafka's rule for group.instance.id: a legal topic name's characters, 1 to 249 of them."""
    if value is None:
        return
    check_length(field, value, MAX_NAME_LENGTH, required=True)
    if not all(c.isascii() and (c.isalnum() or c in "._-") for c in value):
        raise Refused(
            E.INVALID_REQUEST,
            f"{field} {value!r} has characters other than ASCII letters, digits, '.', '_' and '-'",
        )


def checked(check: Callable[[Any], None], refuse: Any):
    """A servicer method decorator: `check(request)` first; when it raises Refused, the answer
    is `refuse(error_code=..., error_message=...)` (a response class), or `refuse(request,
    refused)` for a function, and the method never runs."""
    is_class = isinstance(refuse, type)

    def wrap(method):
        @functools.wraps(method)
        async def run(self, request):
            try:
                check(request)
            except Refused as refused:
                if is_class:
                    return refuse(error_code=refused.code, error_message=refused.message)
                return refuse(request, refused)
            return await method(self, request)

        return run

    return wrap
