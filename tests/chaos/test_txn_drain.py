"""The transactional workload's reads around open transactions: the drain reads the output only
once no transaction holds its last stable offset back (a drain to an LSO taken while a lost
processor's transaction was still open would miss the committed output behind it and report it
lost, a false txn-lost), and a processor rewinding after an abort waits out the group's
unstable offsets rather than ending its life on them."""

import pytest

from chaos.txn_workload import rewind, settled_ends
from clients.errors import ErrorCode, KraftError
from clients.types import TopicPartition as TP

A, B = TP("out", 0), TP("out", 1)


class Clock:
    def __init__(self) -> None:
        self.now = 0.0
        self.slept: list[float] = []

    def sleep(self, s: float) -> None:
        self.slept.append(s)
        self.now += s


def reads(*values):
    it = iter(values)

    def read():
        value = next(it)
        if isinstance(value, Exception):
            raise value
        return value

    return read


def test_waits_until_every_lso_reaches_its_partition_end():
    clock = Clock()
    lso = reads(
        {A: 5, B: 7},
        KraftError(ErrorCode.NOT_LEADER_OR_FOLLOWER, "moved"),
        {A: 9, B: 7},
        {A: 12, B: 7},
    )
    end = reads({A: 12, B: 7}, {A: 12, B: 7}, {A: 12, B: 7})
    assert settled_ends(lso, end, 10.0, lambda: clock.now, clock.sleep) == ({A: 12, B: 7}, [])
    assert clock.slept == [0.5, 0.5, 0.5]


def test_at_the_deadline_it_names_the_partitions_still_open():
    clock = Clock()
    lso = reads(*[{A: 5, B: 7}] * 10)
    end = reads(*[{A: 12, B: 7}] * 10)
    got = settled_ends(lso, end, 2.0, lambda: clock.now, clock.sleep)
    assert got == ({A: 5, B: 7}, ["out-0"])
    assert clock.now == 2.0


class FakeConsumer:
    def __init__(self, answers) -> None:
        self.answers = list(answers)
        self.seeks: list = []

    def committed(self, partitions):
        answer = self.answers.pop(0)
        if isinstance(answer, Exception):
            raise answer
        return answer

    def seek(self, tp, offset):
        self.seeks.append((tp, offset))

    def seek_to_beginning(self, tp):
        self.seeks.append((tp, "beginning"))


def test_rewind_after_an_abort_waits_out_unstable_offsets():
    """The abort's marker reaches the group's offsets after the abort is answered: until then a
    read_committed consumer's committed() says UNSTABLE_OFFSET_COMMIT, which is waited out."""
    unstable = KraftError(ErrorCode.UNSTABLE_OFFSET_COMMIT, "pending")
    consumer = FakeConsumer([unstable, unstable, {A: 4, B: None}])
    rewind(consumer, {A: 9, B: 3}, clock=lambda: 0.0)
    assert consumer.seeks == [(A, 4), (B, "beginning")]


def test_rewind_gives_up_on_other_errors_and_after_its_deadline():
    other = KraftError(ErrorCode.NOT_COORDINATOR, "moved")
    with pytest.raises(KraftError):
        rewind(FakeConsumer([other]), {A: 9}, clock=lambda: 0.0)
    times = iter([0.0, 100.0])
    unstable = KraftError(ErrorCode.UNSTABLE_OFFSET_COMMIT, "pending")
    with pytest.raises(KraftError) as raised:
        rewind(FakeConsumer([unstable, {A: 1}]), {A: 9}, clock=lambda: next(times))
    assert raised.value.code == ErrorCode.UNSTABLE_OFFSET_COMMIT
