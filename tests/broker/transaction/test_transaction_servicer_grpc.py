"""The Transaction service and transactional InitProducerId over real gRPC, on a real replica
manager and log, with the markers' destination faked: a transaction is started, gets offsets,
commits; its markers reach every partition (retried past a NOT_LEADER answer) carrying the
leader epoch as coordinator epoch; Complete* is written; a retried commit succeeds; a new leader
epoch reloads it all from the log; an id of a partition not led here is NOT_COORDINATOR; bad
requests are refused naming the field."""

from __future__ import annotations

from types import SimpleNamespace

import pytest
import trio

from broker.replication.replica_manager import ReplicaManager
from broker.services.broker_servicer import BrokerServicer
from broker.services.transaction_servicer import TransactionServicer
from broker.transaction.coordinator_registry import TransactionCoordinators
from broker.transaction.messages import TransactionConfig
from broker.transaction.records import TRANSACTION_STATE_TOPIC, transaction_partition_for
from clients.bridge import call, open_channel
from clients.errors import ErrorCode as E
from clients.grpc_server import TrioGrpcServer
from clients.wire import broker_pb2, broker_pb2_grpc, transaction_pb2_grpc
from clients.wire import transaction_pb2 as pb
from kraft.log.log_config import LogConfig
from kraft.log.log_manager import LogManager
from kraft.metadata.image import PartitionRegistration

TIMEOUT_S = 30  # generous: the machine running the suite may be loaded
# Two state partitions, only partition 0 led here: ids of partition 1 are someone else's.
OURS = next(f"tx-{i}" for i in range(100) if transaction_partition_for(f"tx-{i}", 2) == 0)
THEIRS = next(f"tx-{i}" for i in range(100) if transaction_partition_for(f"tx-{i}", 2) == 1)
LEADERS = {("t", 0): 1, ("t", 1): 2, ("__consumer_offsets", 3): 1}


class Image:
    """What the coordinators read of the metadata image: the state topic's partition count and
    each partition's leader."""

    def topic(self, name):
        if name == TRANSACTION_STATE_TOPIC:
            return SimpleNamespace(partitions={0: None, 1: None})
        parts = {
            p: SimpleNamespace(leader=leader, has_leader=True)
            for (t, p), leader in LEADERS.items()
            if t == name
        }
        return SimpleNamespace(partitions=parts) if parts else None


class FakeLeaders:
    """The partition leaders' WriteTxnMarkers: broker 2 answers NOT_LEADER_OR_FOLLOWER once."""

    def __init__(self) -> None:
        self.requests: list[tuple[int, broker_pb2.WriteTxnMarkersRequest]] = []
        self.refused_once = False
        self.written = trio.Event()

    async def send(self, node_id, request):
        self.requests.append((node_id, request))
        out = broker_pb2.WriteTxnMarkersResponse()
        for marker in request.markers:
            result = out.markers.add(producer_id=marker.producer_id)
            for t in marker.topics:
                for p in t.partitions:
                    error = E.NONE
                    if node_id == 2 and not self.refused_once:
                        self.refused_once, error = True, E.NOT_LEADER_OR_FOLLOWER
                    result.partitions.add(topic=t.topic, partition=p, error_code=error)
        return out


class ProducerIds:
    def __init__(self) -> None:
        self.next = 7000

    async def next_id(self) -> int:
        self.next += 1
        return self.next - 1


@pytest.fixture
async def broker(tmp_path):
    replicas = ReplicaManager(LogManager([tmp_path], LogConfig(), now_ms=0), node_id=1)
    metadata = SimpleNamespace(image=Image())
    leaders = FakeLeaders()
    coordinators = TransactionCoordinators(
        replicas,
        metadata,
        channel=None,
        config=TransactionConfig(),
        send_markers=leaders.send,
        clock_ms=lambda: int(trio.current_time() * 1000),
    )
    servicer = TransactionServicer(coordinators, offsets_partition_for=lambda group: 3)
    brokers = BrokerServicer(
        replicas, metadata, None, cluster_id="c", producer_ids=ProducerIds(), transactions=servicer
    )
    server = TrioGrpcServer("127.0.0.1:0", grace_s=0)
    server.add_servicer(servicer, pb, "Transaction")
    server.add_servicer(brokers, broker_pb2, "Broker", only=("InitProducerId",))

    def lead(leader_epoch: int) -> None:
        replicas.apply_registration(
            TRANSACTION_STATE_TOPIC,
            0,
            "state-id",
            LogConfig(cleanup_policy="compact"),
            PartitionRegistration(
                replicas=(1,),
                isr=(1,),
                leader=1,
                leader_epoch=leader_epoch,
                partition_epoch=leader_epoch,
            ),
        )

    async with trio.open_nursery() as nursery:
        port = await nursery.start(server.serve)
        nursery.start_soon(coordinators.run)
        channel = open_channel(f"127.0.0.1:{port}")
        try:
            yield SimpleNamespace(
                txn=transaction_pb2_grpc.TransactionStub(channel),
                broker=broker_pb2_grpc.BrokerStub(channel),
                lead=lead,
                leaders=leaders,
                replicas=replicas,
            )
        finally:
            channel.close()
            await server.stop()
            nursery.cancel_scope.cancel()


async def described(b, txn_id=OURS) -> pb.DescribedTransaction:
    answer = await call(
        b.txn.DescribeTransactions,
        pb.DescribeTransactionsRequest(transactional_ids=[txn_id]),
        TIMEOUT_S,
    )
    return answer.transactions[0]


async def wait_state(b, state: str) -> pb.DescribedTransaction:
    with trio.fail_after(TIMEOUT_S):
        while (d := await described(b)).state != state:
            await trio.sleep(0.02)  # the markers go out on the node's loop; real gRPC: real time
    return d


async def init(b, txn_id=OURS, timeout_ms=60_000) -> broker_pb2.InitProducerIdResponse:
    return await call(
        b.broker.InitProducerId,
        broker_pb2.InitProducerIdRequest(
            transactional_id=txn_id, transaction_timeout_ms=timeout_ms
        ),
        TIMEOUT_S,
    )


async def loaded_init(b, timeout_ms=60_000) -> broker_pb2.InitProducerIdResponse:
    """InitProducerId once the driver of the newly led partition has started and loaded it."""
    with trio.fail_after(TIMEOUT_S):
        while (answer := await init(b, OURS, timeout_ms)).error_code in (
            E.COORDINATOR_LOAD_IN_PROGRESS,
            E.NOT_COORDINATOR,
        ):
            await trio.sleep(0.02)
    return answer


async def test_a_transaction_commits_and_its_markers_reach_every_partition(broker):
    b = broker
    b.lead(5)
    first = await loaded_init(b)
    assert (first.error_code, first.producer_id, first.producer_epoch) == (0, 7000, 0)
    pid, epoch = first.producer_id, first.producer_epoch
    added = await call(
        b.txn.AddPartitionsToTxn,
        pb.AddPartitionsToTxnRequest(
            transactional_id=OURS,
            producer_id=pid,
            producer_epoch=epoch,
            topics=[pb.TxnTopic(topic="t", partitions=[0, 1])],
        ),
        TIMEOUT_S,
    )
    assert added.error_code == 0 and [p.error_code for p in added.partitions] == [0, 0]
    offsets = await call(
        b.txn.AddOffsetsToTxn,
        pb.AddOffsetsToTxnRequest(
            transactional_id=OURS, producer_id=pid, producer_epoch=epoch, group_id="g"
        ),
        TIMEOUT_S,
    )
    assert offsets.error_code == 0
    ongoing = await described(b)
    assert ongoing.state == "Ongoing"
    assert {(t.topic, tuple(t.partitions)) for t in ongoing.topics} == {
        ("t", (0, 1)),
        ("__consumer_offsets", (3,)),
    }

    end = pb.EndTxnRequest(
        transactional_id=OURS, producer_id=pid, producer_epoch=epoch, committed=True
    )
    assert (await call(b.txn.EndTxn, end, TIMEOUT_S)).error_code == 0
    await wait_state(b, "CompleteCommit")
    written = {}
    for node, request in b.leaders.requests:
        [marker] = request.markers
        assert (
            marker.producer_id,
            marker.producer_epoch,
            marker.committed,
            marker.coordinator_epoch,
        ) == (pid, epoch, True, 5)
        for t in marker.topics:
            for p in t.partitions:
                written.setdefault((t.topic, p), []).append(node)
    assert written == {("t", 0): [1], ("t", 1): [2, 2], ("__consumer_offsets", 3): [1]}
    assert (await call(b.txn.EndTxn, end, TIMEOUT_S)).error_code == 0  # a retry: success

    listed = await call(b.txn.ListTransactions, pb.ListTransactionsRequest(), TIMEOUT_S)
    assert [(t.transactional_id, t.producer_id, t.state) for t in listed.transactions] == [
        (OURS, pid, "CompleteCommit")
    ]

    b.lead(6)  # a new leader epoch: reloaded from the log
    with trio.fail_after(TIMEOUT_S):
        while (
            d := await described(b)
        ).error_code == E.COORDINATOR_LOAD_IN_PROGRESS or d.error_code == E.NOT_COORDINATOR:
            await trio.sleep(0.02)
    assert (d.state, d.producer_id, d.producer_epoch) == ("CompleteCommit", pid, epoch)
    again = await init(b)
    assert (again.error_code, again.producer_id, again.producer_epoch) == (0, pid, epoch + 1)
    fenced = await call(
        b.txn.AddPartitionsToTxn,
        pb.AddPartitionsToTxnRequest(
            transactional_id=OURS,
            producer_id=pid,
            producer_epoch=epoch,
            topics=[pb.TxnTopic(topic="t", partitions=[0])],
        ),
        TIMEOUT_S,
    )
    assert fenced.error_code == E.PRODUCER_FENCED and "fenced" in fenced.error_message


async def test_an_id_coordinated_elsewhere_is_not_coordinator(broker):
    broker.lead(1)
    answer = await init(broker, THEIRS)
    assert answer.error_code == E.NOT_COORDINATOR and "FindCoordinator" in answer.error_message
    ended = await call(
        broker.txn.EndTxn,
        pb.EndTxnRequest(transactional_id=THEIRS, producer_id=1, producer_epoch=0, committed=True),
        TIMEOUT_S,
    )
    assert ended.error_code == E.NOT_COORDINATOR
    d = await described(broker, THEIRS)
    assert d.error_code == E.NOT_COORDINATOR


@pytest.mark.parametrize(
    "request_, named",
    [
        (pb.AddPartitionsToTxnRequest(producer_id=1, producer_epoch=0), "transactional_id"),
        (
            pb.AddPartitionsToTxnRequest(
                transactional_id="x", producer_id=1, producer_epoch=40_000
            ),
            "producer_epoch",
        ),
        (
            pb.AddPartitionsToTxnRequest(
                transactional_id="x",
                producer_id=1,
                producer_epoch=0,
                topics=[pb.TxnTopic(topic="t", partitions=[-1])],
            ),
            "partition",
        ),
        (
            pb.EndTxnRequest(transactional_id="x" * 300, producer_id=1, producer_epoch=0),
            "transactional_id",
        ),
    ],
)
async def test_bad_requests_are_refused_naming_the_field(broker, request_, named):
    method = {
        pb.AddPartitionsToTxnRequest: broker.txn.AddPartitionsToTxn,
        pb.EndTxnRequest: broker.txn.EndTxn,
    }[type(request_)]
    answer = await call(method, request_, TIMEOUT_S)
    assert answer.error_code != 0 and named in answer.error_message, answer


async def test_a_timeout_above_the_maximum_is_refused(broker):
    broker.lead(1)
    answer = await loaded_init(broker, timeout_ms=900_001)
    assert answer.error_code == E.INVALID_TRANSACTION_TIMEOUT
    assert "transaction.max.timeout.ms" in answer.error_message
