"""The transactional producer against an in-process fake broker over real gRPC (Broker, Group and
Transaction services on one node): the order of its calls (FindCoordinator key type 1 and
InitProducerId; AddPartitionsToTxn before a partition's first transactional batch; EndTxn after
the flush; AddOffsetsToTxn then TxnOffsetCommit), retries while the coordinator moves or is busy,
a fenced producer failing for good, and a failed send making the transaction abortable-only."""

from __future__ import annotations

import pathlib
import sys
from collections import deque

import pytest

from clients.errors import ErrorCode as E
from clients.errors import KraftError
from clients.producer import AsyncProducer, Producer
from clients.record.batch_header import iter_valid_batches
from clients.types import ConsumerGroupMetadata, TopicPartition
from clients.wire import broker_pb2 as bp
from clients.wire import group_pb2 as gp
from clients.wire import group_pb2_grpc, transaction_pb2_grpc
from clients.wire import transaction_pb2 as tp

sys.path.insert(0, str(pathlib.Path(__file__).parent))  # pytest runs with --import-mode=importlib
from test_cluster_fakebroker import FakeBroker  # noqa: E402

TID = "app-1"


class TxnBroker(FakeBroker, group_pb2_grpc.GroupServicer, transaction_pb2_grpc.TransactionServicer):
    """Every call is logged in order as (method, request); `errors[method]` codes answer the
    next calls of that method (AddPartitionsToTxn: per partition)."""

    def __init__(self) -> None:
        super().__init__()
        group_pb2_grpc.add_GroupServicer_to_server(self, self.server)
        transaction_pb2_grpc.add_TransactionServicer_to_server(self, self.server)
        self.calls: list[tuple[str, object]] = []
        self.errors: dict[str, deque] = {}

    def fail_next(self, method: str, *codes: int) -> None:
        self.errors.setdefault(method, deque()).extend(codes)

    def _log(self, method: str, req) -> int:
        with self.cond:
            self.calls.append((method, req))
            queue = self.errors.get(method)
            return queue.popleft() if queue else 0

    def names(self) -> list[str]:
        return [m for m, _ in self.calls if m != "Metadata"]

    def requests(self, method: str) -> list:
        return [r for m, r in self.calls if m == method]

    def Metadata(self, req, ctx):
        self._log("Metadata", req)
        return super().Metadata(req, ctx)

    def Produce(self, req, ctx):
        self._log("Produce", req)
        return super().Produce(req, ctx)

    def InitProducerId(self, req, ctx):
        if error := self._log("InitProducerId", req):
            return bp.InitProducerIdResponse(error_code=error, error_message="injected")
        if req.HasField("producer_id"):
            return bp.InitProducerIdResponse(
                producer_id=req.producer_id, producer_epoch=req.producer_epoch + 1
            )
        return bp.InitProducerIdResponse(producer_id=4000, producer_epoch=3)

    def FindCoordinator(self, req, ctx):
        if error := self._log("FindCoordinator", req):
            return gp.FindCoordinatorResponse(error_code=error, node_id=-1)
        return gp.FindCoordinatorResponse(node_id=0, host="127.0.0.1", port=self.port)

    def AddPartitionsToTxn(self, req, ctx):
        error = self._log("AddPartitionsToTxn", req)
        return tp.AddPartitionsToTxnResponse(
            partitions=[
                tp.TxnPartitionResult(topic=t.topic, partition=p, error_code=error)
                for t in req.topics
                for p in t.partitions
            ]
        )

    def AddOffsetsToTxn(self, req, ctx):
        return tp.AddOffsetsToTxnResponse(error_code=self._log("AddOffsetsToTxn", req))

    def EndTxn(self, req, ctx):
        return tp.EndTxnResponse(error_code=self._log("EndTxn", req), error_message="injected")

    def TxnOffsetCommit(self, req, ctx):
        error = self._log("TxnOffsetCommit", req)
        return gp.OffsetCommitResponse(
            partitions=[
                gp.PartitionError(topic=p.topic, partition=p.partition, error_code=error)
                for p in req.partitions
            ]
        )


@pytest.fixture
def broker():
    b = TxnBroker().start()
    b.create("t", 2)
    yield b
    b.stop()


def producer(broker, **kw) -> AsyncProducer:
    return AsyncProducer(
        broker.address, transactional_id=TID, linger_ms=0, retry_backoff_ms=10, **kw
    )


def transactional_headers(broker, topic, partition):
    log = broker.topics[topic][partition]
    return [h for _, h in iter_valid_batches(bytes(log.data))]


async def test_init_then_add_partitions_before_their_batches_then_end_txn_after_the_flush(broker):
    async with producer(broker, transaction_timeout_ms=30_000) as p:
        await p.init_transactions(10)
        p.begin_transaction()
        futures = [await p.send("t", b"v%d" % i, partition=i % 2) for i in range(4)]
        await p.commit_transaction(10)
        assert all(f.done() for f in futures)
    names = broker.names()
    assert names[:2] == ["FindCoordinator", "InitProducerId"]
    find, init = broker.requests("FindCoordinator")[0], broker.requests("InitProducerId")[0]
    assert (find.key, find.key_type) == (TID, 1)
    assert (init.transactional_id, init.transaction_timeout_ms) == (TID, 30_000)
    assert not init.HasField("producer_id")
    added = {}
    for i, (method, req) in enumerate(c for c in broker.calls if c[0] != "Metadata"):
        if method == "AddPartitionsToTxn":
            assert (req.transactional_id, req.producer_id, req.producer_epoch) == (TID, 4000, 3)
            for t in req.topics:
                added.update({(t.topic, p): i for p in t.partitions})
        if method == "Produce":
            for t in req.topics:
                for part in t.partitions:
                    assert added.get((t.name, part.partition), 10**9) < i  # added first
    assert names[-1] == "EndTxn" and names.count("EndTxn") == 1
    assert names.index("EndTxn") > max(i for i, n in enumerate(names) if n == "Produce")
    end = broker.requests("EndTxn")[0]
    assert (end.transactional_id, end.producer_id, end.producer_epoch, end.committed) == (
        TID,
        4000,
        3,
        True,
    )
    for partition in (0, 1):
        headers = transactional_headers(broker, "t", partition)
        assert headers and all(
            h.is_transactional and (h.producer_id, h.producer_epoch) == (4000, 3) for h in headers
        )


async def test_init_retries_while_the_coordinator_moves_or_is_busy(broker):
    broker.fail_next("FindCoordinator", E.COORDINATOR_NOT_AVAILABLE)
    broker.fail_next(
        "InitProducerId",
        E.NOT_COORDINATOR,
        E.CONCURRENT_TRANSACTIONS,
        E.COORDINATOR_LOAD_IN_PROGRESS,
    )
    async with producer(broker) as p:
        await p.init_transactions(10)
        p.begin_transaction()
    assert broker.names() == [
        "FindCoordinator",
        "FindCoordinator",
        "InitProducerId",
        "FindCoordinator",
        "InitProducerId",
        "InitProducerId",
        "InitProducerId",
    ]


async def test_a_fenced_producer_fails_for_good(broker):
    async with producer(broker) as p:
        await p.init_transactions(10)
        p.begin_transaction()
        await p.send("t", b"v", partition=0)
        broker.fail_next("EndTxn", E.PRODUCER_FENCED)
        with pytest.raises(KraftError) as raised:
            await p.commit_transaction(10)
        assert raised.value.code == E.PRODUCER_FENCED
        for call in (p.begin_transaction, lambda: p.send_nowait("t", b"w")):
            with pytest.raises(KraftError, match="close it") as again:
                call()
            assert again.value.code == E.PRODUCER_FENCED
        with pytest.raises(KraftError, match="close it"):
            await p.abort_transaction(10)


async def test_init_fenced_is_fatal_and_unknown_end_txn_errors_too(broker):
    broker.fail_next("InitProducerId", E.TRANSACTIONAL_ID_AUTHORIZATION_FAILED)
    async with producer(broker) as p:
        with pytest.raises(KraftError) as raised:
            await p.init_transactions(10)
        assert raised.value.code == E.TRANSACTIONAL_ID_AUTHORIZATION_FAILED
        with pytest.raises(KraftError, match="close it"):
            await p.init_transactions(10)


async def test_a_failed_send_makes_the_transaction_abortable_only(broker):
    async with producer(broker) as p:
        await p.init_transactions(10)
        p.begin_transaction()
        await p.send_and_wait("t", b"ok", partition=0)
        broker.produce_errors.append(E.MESSAGE_TOO_LARGE)
        failed = await p.send("t", b"too big", partition=0)
        with pytest.raises(KraftError, match="abort_transaction") as raised:
            await p.commit_transaction(10)
        assert raised.value.code == E.MESSAGE_TOO_LARGE and failed.exception(1) is not None
        with pytest.raises(KraftError, match="abort_transaction"):
            p.send_nowait("t", b"more")
        assert "EndTxn" not in broker.names()
        await p.abort_transaction(10)
        assert broker.requests("EndTxn")[-1].committed is False
        p.begin_transaction()  # the next transaction goes on as usual
        await p.send("t", b"next", partition=1)
        await p.commit_transaction(10)
    assert [r.committed for r in broker.requests("EndTxn")] == [False, True]


async def test_a_refused_partition_is_abortable_and_the_abort_drops_unsent_records(broker):
    broker.fail_next("AddPartitionsToTxn", E.TOPIC_AUTHORIZATION_FAILED)
    async with producer(broker) as p:
        await p.init_transactions(10)
        p.begin_transaction()
        future = await p.send("t", b"never sent", partition=0)
        with pytest.raises(KraftError, match="abort_transaction"):
            await p.commit_transaction(10)
        await p.abort_transaction(10)
        assert future.exception(1).code == E.TOPIC_AUTHORIZATION_FAILED
    names = broker.names()
    assert "Produce" not in names and "EndTxn" not in names  # nothing was added: nothing to end


async def test_abort_while_a_partition_waits_to_be_added_sends_nothing(broker):
    broker.fail_next("AddPartitionsToTxn", *[E.CONCURRENT_TRANSACTIONS] * 3)
    async with producer(broker) as p:
        await p.init_transactions(10)
        p.begin_transaction()
        future = await p.send("t", b"dropped", partition=1)
        await p.abort_transaction(10)
        assert future.exception(1) is not None
        p.begin_transaction()
        await p.commit_transaction(10)  # an empty transaction: no EndTxn either
    assert "Produce" not in broker.names() and "EndTxn" not in broker.names()


async def test_offsets_go_to_the_transaction_then_to_the_group_coordinator(broker):
    group = ConsumerGroupMetadata("readers", 5, "member-1", "instance-1")
    async with producer(broker) as p:
        await p.init_transactions(10)
        p.begin_transaction()
        with pytest.raises(TypeError):
            await p.send_offsets_to_transaction({TopicPartition("in", 0): 1}, "readers", 10)
        await p.send_offsets_to_transaction(
            {TopicPartition("in", 0): 11, TopicPartition("in", 1): 7}, group, 10
        )
        await p.commit_transaction(10)
    names = broker.names()
    assert names[2:] == ["AddOffsetsToTxn", "FindCoordinator", "TxnOffsetCommit", "EndTxn"]
    added = broker.requests("AddOffsetsToTxn")[0]
    assert (added.transactional_id, added.producer_id, added.group_id) == (TID, 4000, "readers")
    assert broker.requests("FindCoordinator")[1].key_type == 0
    commit = broker.requests("TxnOffsetCommit")[0]
    assert (
        commit.group_id,
        commit.generation_id,
        commit.member_id,
        commit.group_instance_id,
        commit.producer_id,
        commit.producer_epoch,
    ) == ("readers", 5, "member-1", "instance-1", 4000, 3)
    assert [(x.topic, x.partition, x.offset) for x in commit.partitions] == [
        ("in", 0, 11),
        ("in", 1, 7),
    ]


async def test_a_consumer_the_group_moved_past_makes_it_abortable(broker):
    async with producer(broker) as p:
        await p.init_transactions(10)
        p.begin_transaction()
        broker.fail_next("TxnOffsetCommit", E.ILLEGAL_GENERATION)
        with pytest.raises(KraftError) as raised:
            await p.send_offsets_to_transaction(
                {TopicPartition("in", 0): 1}, ConsumerGroupMetadata("readers", 1, "m"), 10
            )
        assert raised.value.code == E.ILLEGAL_GENERATION
        with pytest.raises(KraftError, match="abort_transaction"):
            await p.commit_transaction(10)
        await p.abort_transaction(10)
    assert broker.requests("EndTxn")[0].committed is False  # the offsets were added


async def test_sends_need_a_transaction_and_settings_are_checked(broker):
    async with producer(broker) as p:
        with pytest.raises(KraftError, match="init_transactions") as raised:
            p.send_nowait("t", b"v")
        assert raised.value.code == E.INVALID_TXN_STATE
        await p.init_transactions(10)
        with pytest.raises(KraftError, match="begin_transaction"):
            await p.send("t", b"v")
        with pytest.raises(KraftError, match="begin_transaction"):
            await p.commit_transaction(10)
    with pytest.raises(ValueError, match="acks='all'"):
        AsyncProducer(broker.address, transactional_id=TID, acks=1)
    with pytest.raises(ValueError, match="idempotent"):
        AsyncProducer(broker.address, transactional_id=TID, enable_idempotence=False)
    async with AsyncProducer(broker.address) as plain:
        assert plain.acks == 1
        with pytest.raises(KraftError, match="transactional_id"):
            await plain.init_transactions()


def test_the_blocking_producer_runs_a_transaction(broker):
    with Producer(broker.address, transactional_id=TID, linger_ms=0) as p:
        p.init_transactions(10)
        p.begin_transaction()
        future = p.send("t", b"from a thread", partition=0)
        p.send_offsets_to_transaction(
            {TopicPartition("in", 0): 3}, ConsumerGroupMetadata("readers"), 10
        )
        p.commit_transaction(10)
        assert future.result(1).offset == 0
        p.begin_transaction()
        p.send("t", b"aborted", partition=0)
        p.flush()  # out, so its partition is in the transaction
        p.abort_transaction(10)
    assert [r.committed for r in broker.requests("EndTxn")] == [True, False]


async def test_a_commit_that_timed_out_is_finished_by_calling_it_again(broker):
    async with producer(broker) as p:
        await p.init_transactions(10)
        p.begin_transaction()
        broker.produce_gate.clear()  # the leader holds the answer back
        await p.send("t", b"slow", partition=0)
        with pytest.raises(KraftError, match="call it again") as raised:
            await p.commit_transaction(0.3)
        assert raised.value.code == E.REQUEST_TIMED_OUT and "EndTxn" not in broker.names()
        with pytest.raises(KraftError, match="commit is under way"):
            p.begin_transaction()
        broker.produce_gate.set()
        await p.commit_transaction(10)
    assert [r.committed for r in broker.requests("EndTxn")] == [True]


async def test_an_abort_after_a_batch_of_unknown_fate_bumps_the_epoch(broker):
    async with producer(broker) as p:
        await p.init_transactions(10)
        p.begin_transaction()
        broker.lost_answers.append(E.UNKNOWN_SERVER_ERROR)  # appended, the answer lost
        with pytest.raises(KraftError):
            await p.send_and_wait("t", b"unknown", partition=0)
        await p.abort_transaction(10)
        bump = broker.requests("InitProducerId")[-1]
        assert (bump.transactional_id, bump.producer_id, bump.producer_epoch) == (TID, 4000, 3)
        p.begin_transaction()
        await p.send_and_wait("t", b"next", partition=0)
        await p.commit_transaction(10)
    assert broker.names().count("InitProducerId") == 2
    last = transactional_headers(broker, "t", 0)[-1]
    assert (last.producer_id, last.producer_epoch, last.base_sequence) == (4000, 4, 0)


async def test_an_error_code_this_client_does_not_know_is_abortable_not_a_crash(broker):
    broker.fail_next("AddPartitionsToTxn", 999)
    async with producer(broker) as p:
        await p.init_transactions(10)
        p.begin_transaction()
        await p.send("t", b"v", partition=0)
        with pytest.raises(KraftError, match="abort_transaction") as raised:
            await p.commit_transaction(10)
        assert raised.value.code == 999
        await p.abort_transaction(10)
        p.begin_transaction()  # the producer (and its sender) lives on
        await p.send("t", b"w", partition=0)
        await p.commit_transaction(10)
    assert [r.committed for r in broker.requests("EndTxn")] == [True]
