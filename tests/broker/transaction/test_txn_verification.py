"""KIP-890 part 1 on the partition leader (broker/transaction/verification.py): which batches are
checked with the coordinator (only one that would open its producer's transaction on the
partition), what is refused and why, and the guard: a marker met while the check was out voids
its answer, so a batch cannot open a transaction its coordinator has just ended."""

from __future__ import annotations

from broker.idempotence.producer_state import ProducerStateManager
from broker.services.produce_request import PartitionData, TopicData
from broker.transaction.verification import (
    Opening,
    TxnVerifier,
    opening,
    refusal,
    unchanged,
    verify_openings,
)
from clients.errors import ErrorCode as E
from clients.errors import KraftError
from clients.record.batch_header import CONTROL_FLAG, TRANSACTIONAL_FLAG, BatchHeader
from clients.record.codec import encode_batch
from clients.record.control import EndTxnMarker
from clients.types import TopicPartition as TP

PID = 7


def txn_batch(pid=PID, epoch=2, seq=0, transactional=True) -> bytes:
    return encode_batch(
        [(None, b"v", (), 1)],
        producer_id=pid,
        producer_epoch=epoch,
        base_sequence=seq,
        is_transactional=transactional,
    )


class Replicas:
    """The one thing verification reads of a ReplicaManager: a partition's producer state."""

    def __init__(self) -> None:
        self.states = {("t", 0): ProducerStateManager("t-0"), ("t", 1): ProducerStateManager("t-1")}

    def producer_state(self, topic, partition):
        try:
            return self.states[(topic, partition)]
        except KeyError:
            raise KraftError(E.NOT_LEADER_OR_FOLLOWER, f"{topic}-{partition}") from None

    def data(self, partition, offset, pid=PID, epoch=2):
        self.states[("t", partition)].on_replicated_batches(
            [BatchHeader(offset, 0, 0, 2, 0, TRANSACTIONAL_FLAG, 0, 0, 0, pid, epoch, 0, 1)]
        )

    def marker(self, partition, offset, pid=PID, epoch=2):
        self.states[("t", partition)].on_replicated_batches(
            [
                BatchHeader(
                    offset,
                    0,
                    0,
                    2,
                    0,
                    TRANSACTIONAL_FLAG | CONTROL_FLAG,
                    0,
                    0,
                    0,
                    pid,
                    epoch,
                    -1,
                    1,
                )
            ],
            lambda h: EndTxnMarker(False, 0),
        )


def test_only_a_batch_that_opens_a_transaction_is_checked():
    r = Replicas()
    assert opening(r, "t", 0, txn_batch()) == Opening(PID, 2, 0)
    assert opening(r, "t", 0, txn_batch(transactional=False)) is None
    assert opening(r, "t", 0, encode_batch([(None, b"v", (), 1)])) is None  # no producer
    assert opening(r, "t", 0, b"short") is None  # the append reports bad bytes
    assert opening(r, "t", 9, txn_batch()) is None  # so does a partition not led
    assert opening(r, "t", 0, txn_batch(epoch=-1)) is None  # and a negative epoch
    r.data(0, 0)  # the transaction is open here
    assert opening(r, "t", 0, txn_batch(seq=1)) is None
    r.marker(0, 1)  # ended: the next one opens again
    assert opening(r, "t", 0, txn_batch(seq=2)) == Opening(PID, 2, 1)


def test_a_marker_met_while_the_check_was_out_voids_its_answer():
    r = Replicas()
    checked = opening(r, "t", 0, txn_batch())
    assert unchanged(r, "t", 0, checked)
    assert refusal(r, "app", "t", 0, (checked, E.NONE)) is None
    r.marker(0, 0)  # the coordinator aborted the transaction meanwhile
    assert not unchanged(r, "t", 0, checked)
    code, message = refusal(r, "app", "t", 0, (checked, E.NONE))
    assert code == E.CONCURRENT_TRANSACTIONS and code.retriable and "retry" in message
    r.marker(1, 0, pid=PID + 1)  # another producer's marker elsewhere changes nothing
    assert unchanged(r, "t", 1, opening(r, "t", 1, txn_batch()))


def test_refusals_name_the_partition_the_transaction_and_what_to_do():
    r = Replicas()
    checked = opening(r, "t", 0, txn_batch())
    code, message = refusal(r, "app", "t", 0, (checked, E.INVALID_TXN_STATE))
    assert code == E.INVALID_TXN_STATE
    assert "t-0" in message and "'app'" in message and "producer 7" in message
    code, message = refusal(r, "app", "t", 0, (checked, E.COORDINATOR_NOT_AVAILABLE))
    assert code == E.COORDINATOR_NOT_AVAILABLE and "retry" in message


class Verifier:
    def __init__(self, verdicts) -> None:
        self.verdicts, self.asked = verdicts, []

    async def verify(self, txn_id, pid, epoch, partitions):
        self.asked.append((txn_id, pid, epoch, partitions))
        return {tp: self.verdicts.get(tp, E.NONE) for tp in partitions}


async def test_one_question_per_producer_for_the_partitions_it_opens():
    r = Replicas()
    r.data(1, 0)  # already in a transaction on t-1: not asked again
    v = Verifier({TP("t", 0): E.INVALID_TXN_STATE})
    topics = [
        TopicData("t", [PartitionData(0, txn_batch()), PartitionData(1, txn_batch(seq=1))]),
        TopicData("denied", [PartitionData(0, txn_batch())]),
    ]
    got = await verify_openings(v, r, "app", topics, lambda topic: topic != "denied")
    assert v.asked == [("app", PID, 2, frozenset({TP("t", 0)}))]
    assert got == {("t", 0): (Opening(PID, 2, 0), E.INVALID_TXN_STATE)}
    assert (
        await verify_openings(
            v, r, "app", [TopicData("t", [PartitionData(1, txn_batch())])], lambda topic: True
        )
        == {}
    )
    assert len(v.asked) == 1


async def test_the_verifier_asks_itself_first_and_else_reports_no_coordinator():
    asked = []

    async def local(txn_id, pid, epoch, partitions):
        asked.append(txn_id)
        return {tp: E.NONE for tp in partitions} if txn_id == "mine" else None

    verifier = TxnVerifier(local, lambda txn_id: None, channels=None)
    tps = frozenset({TP("t", 0), TP("t", 1)})
    assert await verifier.verify("mine", PID, 2, tps) == dict.fromkeys(tps, E.NONE)
    assert await verifier.verify("elsewhere", PID, 2, tps) == dict.fromkeys(
        tps, E.COORDINATOR_NOT_AVAILABLE
    )
    assert asked == ["mine", "elsewhere"]
