"""Which partition of a coordinator's internal topic holds a key (a group id in
`__consumer_offsets`, a transactional id in `__transaction_state`): Kafka's partitionFor, the
same for both coordinators and the same as Kafka's, so every broker finds the same coordinator."""

from __future__ import annotations


def java_string_hash(s: str) -> int:
    """Java's String.hashCode: s[0]*31^(n-1) + ... over UTF-16 code units, as a signed 32-bit
    int. Kafka places groups and transactional ids with it; Python's hash() is salted per process, so never that."""
    h = 0
    units = s.encode("utf-16-be")
    for i in range(0, len(units), 2):
        h = (31 * h + (units[i] << 8 | units[i + 1])) & 0xFFFFFFFF
    return h - (1 << 32) if h & 0x80000000 else h


def partition_for(key: str, num_partitions: int) -> int:
    """Kafka's GroupMetadataManager.partitionFor (TransactionStateManager's is the same):
    Utils.abs(hashCode) % n, where Utils.abs maps Integer.MIN_VALUE to 0 (Math.abs would leave it
    negative)."""
    h = java_string_hash(key)
    return (0 if h == -(1 << 31) else abs(h)) % num_partitions
