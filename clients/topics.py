"""Kafka's rules for topic names, shared by the broker (which enforces them) and the clients
(which can fail fast with the same message)."""

from __future__ import annotations

import re

MAX_NAME_LENGTH = 249
_LEGAL = re.compile(r"^[a-zA-Z0-9._-]+$")
INTERNAL_TOPICS = frozenset({"__consumer_offsets", "__transaction_state", "__cluster_metadata"})
# The KRaft metadata log lives in `<log dir>/__cluster_metadata-0` (kraft/log/file_names.py), a
# directory a topic of that name would share: no one creates it, not even a broker.
METADATA_TOPIC = "__cluster_metadata"
METADATA_LOG_DIR = METADATA_TOPIC + "-0"
# Internal topics the brokers create for themselves (through CreateTopics with `internal` set).
BROKER_INTERNAL_TOPICS = INTERNAL_TOPICS - {METADATA_TOPIC}


def topic_name_problem(name: str) -> str | None:
    """Why `name` is not a legal topic name, or None when it is."""
    if not name:
        return "topic name is empty"
    if name in (".", ".."):
        return f"topic name {name!r} is not allowed"
    if len(name) > MAX_NAME_LENGTH:
        return f"topic name is {len(name)} characters long; the limit is {MAX_NAME_LENGTH}"
    if not _LEGAL.match(name):
        return (
            f"topic name {name!r} has characters other than ASCII letters, digits, '.', '_' and '-'"
        )
    return None


def creatable_topic_problem(name: str, internal: bool = False) -> str | None:
    """Why a topic named `name` may not be created, or None. `internal`: the request comes from
    a broker creating one of its own internal topics."""
    problem = topic_name_problem(name)
    if problem:
        return problem
    # A partition directory is `<topic>-<partition>`: this is the one name whose partition 0
    # lands on the metadata log's directory.
    if name == METADATA_TOPIC:
        return (
            f"topic name {name!r} is reserved: its partition directory would be the KRaft "
            f"metadata log's ({METADATA_LOG_DIR}); choose another name"
        )
    if name in BROKER_INTERNAL_TOPICS and not internal:
        return (
            f"topic {name!r} is internal: the brokers create it themselves when it is first "
            "needed; choose another name"
        )
    return None
