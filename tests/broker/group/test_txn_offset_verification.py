"""KIP-890 part 1 for TxnOffsetCommit (broker/handlers/txn_offset_verification.py): the group
coordinator takes a transaction's offsets only once its transaction coordinator confirms the
group's `__consumer_offsets` partition is in the transaction (INVALID_TXN_STATE otherwise,
nothing written); only the commit that would open the transaction there is checked; a marker
reaching the partition while the check was out voids its answer."""

from __future__ import annotations

import trio
import trio.testing
from test_group_coordinators import GROUP, Broker

from broker.group.records import OFFSETS_TOPIC
from broker.services.group_servicer import GroupServicer
from broker.transaction.verification import TxnVerifier
from clients.errors import ErrorCode as E
from clients.types import TopicPartition
from clients.wire import group_pb2 as pb

PID, EPOCH = 7, 2
OFFSETS_0 = TopicPartition(OFFSETS_TOPIC, 0)


class Coordinator:
    """The transaction coordinator as this broker's own (TxnVerifier asks it first): answers
    `verdict` and counts the questions; `during` runs while the question is out."""

    def __init__(self, verdict: E) -> None:
        self.verdict = verdict
        self.asked: list[tuple] = []
        self.during = None

    async def verify(self, transactional_id, producer_id, producer_epoch, partitions):
        self.asked.append((transactional_id, producer_id, producer_epoch, partitions))
        if self.during is not None:
            self.during()
        await trio.sleep(0)
        return dict.fromkeys(partitions, self.verdict)


def checked_broker(tmp_path, verdict: E) -> tuple[Broker, Coordinator]:
    broker = Broker(tmp_path)
    coordinator = Coordinator(verdict)
    verifier = TxnVerifier(coordinator.verify, lambda _id: None, channels=None)
    broker.servicer = GroupServicer(broker.groups, broker.replicas, node_id=1, verifier=verifier)
    return broker, coordinator


def txn_commit(offset: int) -> pb.TxnOffsetCommitRequest:
    return pb.TxnOffsetCommitRequest(
        transactional_id="tx",
        group_id=GROUP,
        producer_id=PID,
        producer_epoch=EPOCH,
        generation_id=-1,
        partitions=[pb.CommitPartition(topic="t", partition=0, offset=offset, leader_epoch=-1)],
    )


def log_end(broker: Broker) -> int:
    return broker.replicas.get(OFFSETS_TOPIC, 0).log.log_end_offset


async def started(broker: Broker, nursery) -> None:
    nursery.start_soon(broker.groups.run)
    broker.lead(leader_epoch=1)
    await trio.testing.wait_all_tasks_blocked()


async def test_offsets_of_a_partition_not_in_the_transaction_are_refused(tmp_path, autojump_clock):
    broker, coordinator = checked_broker(tmp_path, E.INVALID_TXN_STATE)
    async with trio.open_nursery() as nursery:
        await started(broker, nursery)
        answer = await broker.servicer.TxnOffsetCommit(txn_commit(5))
        [part] = answer.partitions
        assert part.error_code == E.INVALID_TXN_STATE
        assert "AddOffsetsToTxn" in part.error_message and GROUP in part.error_message
        assert coordinator.asked == [("tx", PID, EPOCH, frozenset({OFFSETS_0}))]
        assert log_end(broker) == 0  # nothing written: no transaction opened on the partition
        nursery.cancel_scope.cancel()


async def test_only_the_commit_that_opens_the_transaction_is_checked(tmp_path, autojump_clock):
    broker, coordinator = checked_broker(tmp_path, E.NONE)
    async with trio.open_nursery() as nursery:
        await started(broker, nursery)
        for offset in (5, 6):
            answer = await broker.servicer.TxnOffsetCommit(txn_commit(offset))
            assert [p.error_code for p in answer.partitions] == [0]
        assert len(coordinator.asked) == 1  # the second found the transaction open there
        assert log_end(broker) == 2
        nursery.cancel_scope.cancel()


async def test_a_marker_met_while_the_check_was_out_voids_its_answer(tmp_path, autojump_clock):
    broker, coordinator = checked_broker(tmp_path, E.NONE)

    def abort_meanwhile():  # the coordinator aborted the transaction (a timeout, say)
        result = broker.replicas.append_txn_marker(OFFSETS_TOPIC, 0, PID, EPOCH, False, 0, 0)
        assert result.error_code == 0

    coordinator.during = abort_meanwhile
    async with trio.open_nursery() as nursery:
        await started(broker, nursery)
        answer = await broker.servicer.TxnOffsetCommit(txn_commit(5))
        assert [p.error_code for p in answer.partitions] == [E.CONCURRENT_TRANSACTIONS]
        assert log_end(broker) == 1  # the marker only
        coordinator.during = None
        answer = await broker.servicer.TxnOffsetCommit(txn_commit(5))  # checked again
        assert [p.error_code for p in answer.partitions] == [0]
        assert len(coordinator.asked) == 2
        nursery.cancel_scope.cancel()
