"""TxnOffsetCommit through the Group servicer over a real replica manager and log: the offsets go
to `__consumer_offsets` as a transactional batch of the producer, stay out of OffsetFetch until
the broker reports the COMMIT marker (GroupCoordinators.on_txn_marker), and a new leader epoch
that reloads the log replays transactional batches and control batches the same way."""

from __future__ import annotations

import trio
import trio.testing
from test_group_coordinators import GROUP, Broker, committed

from broker.group.records import OFFSETS_TOPIC
from clients.errors import ErrorCode as E
from clients.record.batch_header import set_base_offset_and_epoch
from clients.record.codec import iter_batches
from clients.record.control import encode_marker_batch
from clients.wire import group_pb2 as pb

PID, EPOCH = 1000, 2


def txn_commit(offset: int, partition: int = 0, epoch: int = EPOCH) -> pb.TxnOffsetCommitRequest:
    return pb.TxnOffsetCommitRequest(
        transactional_id="tx",
        group_id=GROUP,
        producer_id=PID,
        producer_epoch=epoch,
        generation_id=-1,
        partitions=[
            pb.CommitPartition(topic="t", partition=partition, offset=offset, leader_epoch=-1)
        ],
    )


def write_marker(broker: Broker, committed_: bool, leader_epoch: int) -> int:
    """What WriteTxnMarkers does on the leader (not this room's code): the control batch goes
    into the log and is committed; returns its offset."""
    log = broker.replicas.get(OFFSETS_TOPIC, 0).log
    offset = log.log_end_offset
    batch = bytearray(encode_marker_batch(PID, EPOCH, committed_, 0, 0))
    set_base_offset_and_epoch(batch, 0, offset, leader_epoch)
    log.append_as_follower(bytes(batch))
    log.high_watermark = log.log_end_offset
    broker.groups.on_txn_marker(0, PID, EPOCH, committed_, offset)
    return offset


async def offsets(broker: Broker) -> dict:
    return {p.partition: p.offset for p in (await committed(broker.servicer)).partitions}


async def test_commit_marker_applies_and_reload_replays_markers(tmp_path, autojump_clock):
    broker = Broker(tmp_path)
    async with trio.open_nursery() as nursery:
        nursery.start_soon(broker.groups.run)
        broker.lead(leader_epoch=1)
        await trio.testing.wait_all_tasks_blocked()
        answer = await broker.servicer.TxnOffsetCommit(txn_commit(42))
        assert (answer.error_code, [p.error_code for p in answer.partitions]) == (0, [0])
        data = broker.replicas.get(OFFSETS_TOPIC, 0).log.read(0, 1 << 20).records
        [(_, header)] = list(iter_batches(data))
        assert (header.producer_id, header.producer_epoch, header.is_transactional) == (
            PID,
            EPOCH,
            True,
        )
        assert await offsets(broker) == {}  # pending: not shown
        write_marker(broker, True, leader_epoch=1)
        assert await offsets(broker) == {0: 42}

        await broker.servicer.TxnOffsetCommit(txn_commit(50))  # then aborted
        write_marker(broker, False, leader_epoch=1)
        await broker.servicer.TxnOffsetCommit(txn_commit(7, partition=1))  # left open
        assert await offsets(broker) == {0: 42}

        broker.lead(leader_epoch=2)  # re-elected: a new driver loads the log
        await trio.testing.wait_all_tasks_blocked()
        assert await offsets(broker) == {0: 42}
        write_marker(broker, True, leader_epoch=2)  # the open one commits now
        assert await offsets(broker) == {0: 42, 1: 7}
        nursery.cancel_scope.cancel()


async def test_a_fenced_epoch_is_refused_and_an_unled_partition_ignores_markers(
    tmp_path, autojump_clock
):
    broker = Broker(tmp_path)
    broker.groups.on_txn_marker(0, PID, EPOCH, True, 0)  # no driver: nothing to do
    async with trio.open_nursery() as nursery:
        nursery.start_soon(broker.groups.run)
        broker.lead(leader_epoch=1)
        await trio.testing.wait_all_tasks_blocked()
        assert (await broker.servicer.TxnOffsetCommit(txn_commit(1))).partitions[0].error_code == 0
        stale = await broker.servicer.TxnOffsetCommit(txn_commit(2, epoch=EPOCH - 1))
        assert stale.partitions[0].error_code == E.INVALID_PRODUCER_EPOCH
        bad = await broker.servicer.TxnOffsetCommit(
            pb.TxnOffsetCommitRequest(
                group_id=GROUP, producer_id=-5, partitions=[pb.CommitPartition(topic="t")]
            )
        )
        assert bad.partitions[0].error_code == E.INVALID_PRODUCER_ID_MAPPING
        nursery.cancel_scope.cancel()
