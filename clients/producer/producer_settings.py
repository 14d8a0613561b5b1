"""The producer's settings checked and resolved, Kafka's rules: acks, enable.idempotence, the
requests in flight per partition, max.request.size against what kraft's channels carry."""

from __future__ import annotations

from clients import bridge

PARTITION_REQUESTS_IN_FLIGHT = 1  # without idempotence
IDEMPOTENT_REQUESTS_IN_FLIGHT = 5  # at most, with it (Kafka's limit)


def partition_requests(idempotent: bool, max_in_flight: int) -> int:
    if not idempotent:
        return PARTITION_REQUESTS_IN_FLIGHT
    return max(1, min(max_in_flight, IDEMPOTENT_REQUESTS_IN_FLIGHT))


def parse_acks(acks: int | str | None, transactional: bool) -> int:
    """None: Kafka's default for the producer (all when transactional, else 1, kraft's)."""
    if acks is None:
        return -1 if transactional else 1
    if transactional and acks not in ("all", "-1", -1):
        raise ValueError(f"a transactional producer needs acks='all' (acks={acks!r} given)")
    if acks in ("all", "-1", -1):
        return -1
    if acks in (0, 1, "0", "1"):
        return int(acks)
    raise ValueError(f"acks must be 0, 1, -1 or 'all', not {acks!r}")


def idempotence_enabled(enable: bool | None, acks: int, retries: int, transactional: bool) -> bool:
    """Kafka's rule: on by default with acks=all; asking for it with anything else is an error.
    Transactions need it."""
    if transactional and enable is False:
        raise ValueError(
            "a transactional producer is idempotent: drop enable_idempotence=False "
            "or transactional_id"
        )
    if enable is None:
        return acks == -1 and retries > 0
    if enable and acks != -1:
        raise ValueError(
            f"enable_idempotence=True needs acks='all' (acks={acks} given): set "
            f"acks='all', or enable_idempotence=False"
        )
    if enable and retries <= 0:
        raise ValueError(
            "enable_idempotence=True needs retries > 0: set retries, or enable_idempotence=False"
        )
    return bool(enable)


# Room a ProduceRequest needs beyond its batches (field tags, topic names, partition numbers).
REQUEST_OVERHEAD = 64 * 1024


def check_max_request_size(max_request_size: int) -> None:
    limit = bridge.MAX_MESSAGE_BYTES - REQUEST_OVERHEAD
    if not 0 < max_request_size <= limit:
        raise ValueError(
            f"max_request_size={max_request_size} must be between 1 and {limit} "
            f"(the largest gRPC message kraft's channels carry, less a request's "
            f"framing): lower max_request_size"
        )
