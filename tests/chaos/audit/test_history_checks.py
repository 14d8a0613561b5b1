"""Each history check (Jepsen's Kafka anomalies, plus committed offsets) sees exactly the anomaly
planted for it: each sits in its own partition with its own processes; one audit runs over all."""

import pytest
from audit_helpers import MS, by_partition, clean_history, drain

from chaos.audit.job import run_audit
from chaos.history import Op

VALUES = list(range(100, 110))  # sent to offsets 0-9 by the helpers


def sent(partition, pairs, t=0, process=None):
    """(offset, value) pairs as acknowledged sends of one writer, in order."""
    w = process or f"{partition}-w"
    ops = []
    for i, (offset, value) in enumerate(pairs):
        ops += [
            Op(w, "invoke", "send", t + 2 * i * MS, value, partition),
            Op(w, "ok", "send", t + (2 * i + 1) * MS, value, partition, offset),
        ]
    return ops


def one_send(partition, value, outcome, t=0):
    """A send whose outcome is "fail" or "info": no offset comes back."""
    w = f"{partition}-w2"
    return [
        Op(w, "invoke", "send", t, value, partition),
        Op(w, outcome, "send", t + MS, value, partition),
    ]


PAIRS = list(enumerate(VALUES))
PLANTS = {
    # acknowledged at offset 4, never polled, though polls reach offset 9
    "lost-0": sent("lost-0", PAIRS)
    + drain("lost-0", PAIRS[:4] + PAIRS[5:], 50 * MS, "lost-0-r", mode="subscribe"),
    # value 103 polled at offset 3 and again at offset 10 (a retried send without its ack)
    "dup-0": sent("dup-0", PAIRS)
    + one_send("dup-0", 103, "info")
    + drain("dup-0", PAIRS + [(10, 103)], 50 * MS, "dup-0-r"),
    # one reader sees 105 at offset 5, another sees 555 (its send timed out) there
    "incons-0": sent("incons-0", PAIRS)
    + one_send("incons-0", 555, "info")
    + drain("incons-0", PAIRS, 50 * MS, "incons-0-r", mode="subscribe")
    + drain(
        "incons-0", PAIRS[:5] + [(5, 555)] + PAIRS[6:], 90 * MS, "incons-0-r2", mode="subscribe"
    ),
    # 777's send failed, yet a poll returns it
    "abort-0": sent("abort-0", PAIRS)
    + one_send("abort-0", 777, "fail")
    + drain("abort-0", PAIRS + [(10, 777)], 50 * MS, "abort-0-r"),
    # the writer's 5th send was acknowledged at offset 5, its 6th at offset 4
    "nmsend-0": sent("nmsend-0", PAIRS[:4] + [(5, 104), (4, 105)] + PAIRS[6:])
    + drain("nmsend-0", PAIRS[:4] + [(4, 105), (5, 104)] + PAIRS[6:], 50 * MS, "nmsend-0-r"),
    # the reader polls offsets 0-6, then 3-9: back to 3 without any reassignment
    "nmpoll-0": sent("nmpoll-0", PAIRS)
    + drain("nmpoll-0", PAIRS[:7] + PAIRS[3:], 50 * MS, "nmpoll-0-r"),
    # an assign()ed reader jumps from offset 3 to 6; another reader saw 4 and 5
    "skip-0": sent("skip-0", PAIRS)
    + drain("skip-0", PAIRS[:4] + PAIRS[6:], 50 * MS, "skip-0-r", chunk=4)
    + drain("skip-0", PAIRS, 90 * MS, "skip-0-r2", mode="subscribe"),
    # offset 10 is acknowledged, but the drain stops at 9
    "unseen-0": sent("unseen-0", PAIRS + [(10, 110)])
    + drain("unseen-0", PAIRS, 50 * MS, "unseen-0-r"),
    # group g commits offset 8, then 3 for the same partition
    "commit-0": clean_history("commit-0", VALUES)
    + [
        Op("c", "invoke", "commit", 200 * MS, {"commit-0": 8}, group="g"),
        Op("c", "ok", "commit", 201 * MS, {"commit-0": 8}, group="g"),
        Op("c2", "invoke", "commit", 202 * MS, {"commit-0": 3}, group="g"),
        Op("c2", "ok", "commit", 203 * MS, {"commit-0": 3}, group="g"),
        Op("c3", "ok", "commit", 204 * MS, {"commit-0": 9}, group="other"),
    ],
    "clean-0": clean_history("clean-0", VALUES),
}


@pytest.fixture(scope="module")
def audit(spark):
    ops = sorted((op for ops in PLANTS.values() for op in ops), key=lambda op: op.time)
    return by_partition(run_audit(spark, None, ops))


def test_lost_write(audit):
    assert audit["lost-0"] == [("lost-write", (), (4,))]


def test_duplicate(audit):
    assert audit["dup-0"] == [("duplicate", (), (3, 10))]


def test_inconsistent_offsets(audit):
    assert audit["incons-0"] == [("inconsistent-offsets", (), (5,))]


def test_aborted_read(audit):
    assert audit["abort-0"] == [("aborted-read", (), (10,))]


def test_nonmonotonic_send(audit):
    assert audit["nmsend-0"] == [("nonmonotonic-send", (), (5, 4))]


def test_nonmonotonic_poll(audit):
    assert audit["nmpoll-0"] == [("nonmonotonic-poll", (), (6, 3))]


def test_poll_skip(audit):
    assert audit["skip-0"] == [("poll-skip", (), (3, 6))]


def test_unseen(audit):
    assert audit["unseen-0"] == [("unseen", (), (10,))]


def test_commit_backwards(audit):
    assert audit["commit-0"] == [("commit-backwards", (), (3, 8))]


def test_clean_partition_and_nothing_else(audit):
    assert set(audit) == set(PLANTS) - {"clean-0"}
