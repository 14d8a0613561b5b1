"""Kafka's API keys kraft knows: each one's schema name (kio's module name) and its first
flexible version (compact types, tagged fields, header v2), from Kafka's message JSON files,
and the versions kraft serves: a real release's maxima (Kafka 3.0's; Metadata 3.1's v12), since
kafka-python guesses the broker's release from them (it takes this one for 3.0)."""

from __future__ import annotations

from typing import NamedTuple


class Api(NamedTuple):
    key: int
    name: str  # kio's schema module name
    first_flexible: int  # Kafka's flexibleVersions ("N+"); a big number when none
    min_version: int  # what kraft serves
    max_version: int


NEVER = 1 << 15

# Served versions. Produce starts at 0 as Kafka 4 advertises it (librdkafka before 2.11.1
# wants the exact range) but v0-2 (message format v0/v1) are refused, as Kafka 4 does. Fetch
# starts at 4: v0-3 carry the old message formats, which kraft never down-converts to.
APIS: dict[int, Api] = {
    a.key: a
    for a in (
        Api(0, "produce", 9, 0, 9),
        Api(1, "fetch", 12, 4, 12),
        Api(2, "list_offsets", 6, 1, 7),
        Api(3, "metadata", 9, 0, 12),
        Api(8, "offset_commit", 8, 2, 8),
        Api(9, "offset_fetch", 6, 1, 8),
        Api(10, "find_coordinator", 3, 0, 3),
        Api(11, "join_group", 6, 0, 7),
        Api(12, "heartbeat", 4, 0, 4),
        Api(13, "leave_group", 4, 0, 4),
        Api(14, "sync_group", 4, 0, 5),
        Api(15, "describe_groups", 5, 0, 5),
        Api(16, "list_groups", 3, 0, 4),
        Api(18, "api_versions", 3, 0, 3),
        Api(19, "create_topics", 5, 2, 7),
        Api(20, "delete_topics", 4, 1, 6),
        Api(22, "init_producer_id", 2, 0, 4),
        Api(24, "add_partitions_to_txn", 3, 0, 3),
        Api(25, "add_offsets_to_txn", 3, 0, 3),
        Api(26, "end_txn", 3, 0, 3),
        Api(28, "txn_offset_commit", 3, 0, 3),
        Api(32, "describe_configs", 4, 1, 4),
        Api(37, "create_partitions", 2, 0, 3),
        Api(42, "delete_groups", 2, 0, 2),
    )
}

API_VERSIONS = 18
PRODUCE = 0
# Produce v0-2 are advertised but refused (see above).
MIN_PRODUCE_SERVED = 3


def header_versions(api_key: int, api_version: int) -> tuple[int, int]:
    """(request header version, response header version). ApiVersions answers with header v0
    whatever its version (a client reads it before it knows the broker's); an unknown API's
    header is read as v1, enough to answer or close."""
    api = APIS.get(api_key)
    if api is None:
        return 1, 0
    flexible = api_version >= api.first_flexible
    return (2 if flexible else 1), (0 if api_key == API_VERSIONS or not flexible else 1)


def served(api_key: int, api_version: int, handled: frozenset[int]) -> bool:
    api = APIS.get(api_key)
    return (
        api is not None and api_key in handled and api.min_version <= api_version <= api.max_version
    )
