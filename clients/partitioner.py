"""Which partition a record goes to: Kafka's murmur2 hash for keyed records (so keys land where a
Java client would put them) and KIP-480's sticky choice for records without a key."""

from __future__ import annotations

import random
import struct

_M = 0x5BD1E995
_SEED = 0x9747B28C
_MASK = 0xFFFFFFFF


def murmur2(data: bytes) -> int:
    """Kafka's Utils.murmur2: MurmurHash2 with Kafka's seed, returned as Java's signed 32-bit int."""
    length = len(data)
    h = (_SEED ^ length) & _MASK
    whole = length & ~3
    # Java reads each 4-byte block little-endian; Python ints need explicit 32-bit wrapping.
    for k in struct.unpack_from(f"<{whole // 4}I", data):
        k = (k * _M) & _MASK
        k ^= k >> 24
        k = (k * _M) & _MASK
        h = ((h * _M) & _MASK) ^ k
    tail = length & 3
    if tail:
        if tail == 3:
            h ^= data[whole + 2] << 16
        if tail >= 2:
            h ^= data[whole + 1] << 8
        h ^= data[whole]
        h = (h * _M) & _MASK
    h ^= h >> 13
    h = (h * _M) & _MASK
    h ^= h >> 15
    return h - (1 << 32) if h & 0x80000000 else h


def default_partition(key: bytes, num_partitions: int) -> int:
    """Kafka's partition for a non-null key: positive murmur2 modulo the partition count."""
    if num_partitions <= 0:
        raise ValueError(f"num_partitions must be positive, got {num_partitions}")
    return (murmur2(key) & 0x7FFFFFFF) % num_partitions


class StickyPartitioner:
    """KIP-480: records without a key stick to one partition per topic until its batch is sent or
    full, which fills batches faster than round-robin. Randomness is injected for tests."""

    def __init__(self, rng: random.Random | None = None) -> None:
        self._rng = rng if rng is not None else random.Random()
        self._sticky: dict[str, int] = {}

    def partition(self, topic: str, num_partitions: int) -> int:
        if num_partitions <= 0:
            raise ValueError(f"topic {topic!r} has no partitions (num_partitions={num_partitions})")
        current = self._sticky.get(topic)
        # The partition count may have shrunk under us (topic recreated); pick again then.
        if current is None or current >= num_partitions:
            current = self._sticky[topic] = self._rng.randrange(num_partitions)
        return current

    def on_new_batch(self, topic: str, num_partitions: int, prev_partition: int) -> None:
        """The batch for `prev_partition` is full or sent: move to a different partition. Only
        when the sticky partition is still `prev_partition`, so that several callers reporting the
        same full batch move it once (Kafka's StickyPartitionCache.nextPartition)."""
        if num_partitions <= 0:
            raise ValueError(f"topic {topic!r} has no partitions (num_partitions={num_partitions})")
        current = self._sticky.get(topic)
        if current is not None and current != prev_partition and current < num_partitions:
            return
        if num_partitions == 1:
            self._sticky[topic] = 0
            return
        if 0 <= prev_partition < num_partitions:
            choice = self._rng.randrange(num_partitions - 1)
            self._sticky[topic] = choice + 1 if choice >= prev_partition else choice
        else:
            self._sticky[topic] = self._rng.randrange(num_partitions)
