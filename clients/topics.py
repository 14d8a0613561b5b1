"""Kafka's rules for topic names, shared by the broker (which enforces them) and the clients
(which can fail fast with the same message)."""
from __future__ import annotations

import re

MAX_NAME_LENGTH = 249
_LEGAL = re.compile(r"^[a-zA-Z0-9._-]+$")
INTERNAL_TOPICS = frozenset({"__consumer_offsets", "__transaction_state", "__cluster_metadata"})


def topic_name_problem(name: str) -> str | None:
    """Why `name` is not a legal topic name, or None when it is."""
    if not name:
        return "topic name is empty"
    if name in (".", ".."):
        return f"topic name {name!r} is not allowed"
    if len(name) > MAX_NAME_LENGTH:
        return f"topic name is {len(name)} characters long; the limit is {MAX_NAME_LENGTH}"
    if not _LEGAL.match(name):
        return (f"topic name {name!r} has characters other than ASCII letters, digits, "
                "'.', '_' and '-'")
    return None
