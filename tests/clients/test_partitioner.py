"""Keyed records land where Kafka's Java client puts them (murmur2), and null-key records stick
to one partition until its batch is full (KIP-480)."""

import collections
import random

import pytest
from kafka.partitioner.default import murmur2 as kafka_python_murmur2

from clients.partitioner import StickyPartitioner, default_partition, murmur2


# Kafka's UtilsTest.testMurmur2 vectors (Java signed ints).
@pytest.mark.parametrize(
    "data, expected",
    [
        (b"21", -973932308),
        (b"foobar", -790332482),
        (b"a-little-bit-long-string", -985981536),
        (b"a-little-bit-longer-string", -1486304829),
        (b"lkjh234lh9fiuh90y23oiuhsafujhadof229phr9h19h89h8", -58897971),
        (b"abc", 479470107),
    ],
)
def test_murmur2_matches_kafka_vectors(data, expected):
    assert murmur2(data) == expected


def to_signed(h: int) -> int:
    return h - (1 << 32) if h & 0x80000000 else h


def test_murmur2_matches_kafka_python_on_random_keys():
    rng = random.Random(7)
    for _ in range(3000):
        key = rng.randbytes(rng.randrange(0, 40))
        assert murmur2(key) == to_signed(kafka_python_murmur2(key)), key
        assert -(2**31) <= murmur2(key) < 2**31


def test_default_partition_matches_kafka_python():
    rng = random.Random(11)
    for _ in range(3000):
        key = rng.randbytes(rng.randrange(1, 64))
        n = rng.randrange(1, 200)
        assert default_partition(key, n) == (kafka_python_murmur2(key) & 0x7FFFFFFF) % n


def test_default_partition_spreads_keys():
    counts = collections.Counter(default_partition(b"user-%d" % i, 6) for i in range(6000))
    assert set(counts) == set(range(6))
    assert min(counts.values()) > 800


def test_default_partition_rejects_no_partitions():
    with pytest.raises(ValueError, match="positive"):
        default_partition(b"k", 0)


def test_sticky_keeps_partition_until_new_batch():
    sticky = StickyPartitioner(random.Random(3))
    first = sticky.partition("orders", 8)
    assert all(sticky.partition("orders", 8) == first for _ in range(100))
    previous = first
    for _ in range(200):
        sticky.on_new_batch("orders", 8, previous)
        now = sticky.partition("orders", 8)
        assert now != previous and 0 <= now < 8
        previous = now


def test_sticky_visits_every_partition():
    sticky = StickyPartitioner(random.Random(5))
    seen = set()
    for _ in range(200):
        p = sticky.partition("t", 5)
        seen.add(p)
        sticky.on_new_batch("t", 5, p)
    assert seen == set(range(5))


def test_sticky_is_per_topic_and_ignores_stale_reports():
    sticky = StickyPartitioner(random.Random(1))
    a = sticky.partition("a", 10)
    b = sticky.partition("b", 10)
    sticky.on_new_batch("a", 10, (a + 1) % 10)  # not the current one: no move
    assert sticky.partition("a", 10) == a
    sticky.on_new_batch("a", 10, a)
    assert sticky.partition("a", 10) != a
    assert sticky.partition("b", 10) == b


def test_sticky_single_partition_and_shrinking_topic():
    sticky = StickyPartitioner(random.Random(2))
    assert sticky.partition("one", 1) == 0
    sticky.on_new_batch("one", 1, 0)
    assert sticky.partition("one", 1) == 0
    for _ in range(20):
        p = sticky.partition("t", 50)
        sticky.on_new_batch("t", 50, p)
    assert sticky.partition("t", 3) < 3


def test_sticky_is_deterministic_for_a_seed():
    def run(seed):
        sticky, out = StickyPartitioner(random.Random(seed)), []
        for _ in range(30):
            out.append(sticky.partition("t", 12))
            sticky.on_new_batch("t", 12, out[-1])
        return out

    assert run(9) == run(9)
