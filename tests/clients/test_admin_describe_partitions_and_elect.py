"""Admin.describe_partitions asks each leader and hands back its view per partition (asking again
once when the broker no longer leads; errors per partition, never raised); Admin.elect_leaders
sends Kafka's election type and the partitions, and refuses an empty list that would mean all."""

from __future__ import annotations

import pathlib
import sys

import pytest

from clients.admin import Admin, ElectionResult
from clients.errors import ErrorCode
from clients.types import TopicPartition
from clients.wire import broker_pb2 as bp
from clients.wire import controller_pb2 as cp

sys.path.insert(0, str(pathlib.Path(__file__).parent))  # pytest runs with --import-mode=importlib
from test_cluster_fakebroker import FakeBroker  # noqa: E402


class ReplicatingBroker(FakeBroker):
    """Answers DescribePartitions as leader of every partition (`role` to say otherwise) and
    ElectLeaders with `election_results`, keeping the requests."""

    def __init__(self) -> None:
        super().__init__()
        self.role = "leader"
        self.describe_requests: list = []
        self.elect_requests: list = []
        self.election_results: list = []

    def DescribePartitions(self, req, ctx):
        self.describe_requests.append(req)
        return bp.DescribePartitionsResponse(
            partitions=[
                bp.PartitionReplicationState(
                    topic=t.topic,
                    partition=p,
                    role=self.role,
                    leader=0,
                    leader_epoch=2,
                    high_watermark=10 + p,
                    log_end_offset=12 + p,
                    log_start_offset=1,
                    isr=[0, 1],
                    replicas=[
                        bp.ReplicaLag(replica_id=0, log_end_offset=12 + p),
                        bp.ReplicaLag(replica_id=1, log_end_offset=10 + p),
                        bp.ReplicaLag(replica_id=2, log_end_offset=-1),
                    ],
                )
                for t in req.topics
                for p in t.partitions
            ]
        )

    def ElectLeaders(self, req, ctx):
        self.elect_requests.append(req)
        return cp.ElectLeadersResponse(results=self.election_results)


@pytest.fixture
def broker():
    b = ReplicatingBroker().start()
    b.create("orders", 2)
    yield b
    b.stop()


def test_describe_partitions_gives_each_leaders_view(broker):
    with Admin(broker.address) as admin:
        states = admin.describe_partitions([TopicPartition("orders", 1), ("orders", 0)])
    assert list(states) == [("orders", 1), ("orders", 0)]
    one = states[TopicPartition("orders", 1)]
    assert (one.error_code, one.role, one.leader_epoch, one.isr) == (0, "leader", 2, [0, 1])
    assert (one.high_watermark, one.log_end_offset, one.log_start_offset) == (11, 13, 1)
    assert one.replica_log_end_offsets == {0: 13, 1: 11}  # replica 2 not heard from: left out
    [request] = broker.describe_requests  # one request for the one leader
    assert [(t.topic, list(t.partitions)) for t in request.topics] == [("orders", [1, 0])]


def test_a_broker_that_no_longer_leads_is_asked_again_after_a_refresh(broker):
    broker.role = "follower"
    with Admin(broker.address) as admin:
        state = admin.describe_partitions([("orders", 0)])[TopicPartition("orders", 0)]
    assert len(broker.describe_requests) == 2 and state.role == "follower"


def test_a_broker_that_cannot_answer_gives_errors_not_an_exception():
    plain = FakeBroker().start()  # no DescribePartitions: UNSUPPORTED_VERSION
    plain.create("orders", 1)
    try:
        with Admin(plain.address) as admin:
            state = admin.describe_partitions([("orders", 0)])[TopicPartition("orders", 0)]
            missing = admin.describe_partitions([("ghost", 0)])[TopicPartition("ghost", 0)]
    finally:
        plain.stop()
    assert state.error_code == ErrorCode.UNSUPPORTED_VERSION and "broker 0" in state.error_message
    assert state.high_watermark == -1
    assert missing.error_code == ErrorCode.LEADER_NOT_AVAILABLE


def test_elect_leaders_sends_the_type_and_partitions_and_returns_results(broker):
    broker.election_results = [
        cp.ElectLeadersResult(
            topic="orders", partition=1, error_code=ErrorCode.ELECTION_NOT_NEEDED, error_message="x"
        )
    ]
    with Admin(broker.address) as admin:
        results = admin.elect_leaders("unclean", [("orders", 1), ("orders", 0), ("pay", 0)])
        admin.elect_leaders()
        with pytest.raises(ValueError, match="pass None"):
            admin.elect_leaders("preferred", [])
        with pytest.raises(ValueError, match="'preferred' or 'unclean'"):
            admin.elect_leaders("dirty", None)
    assert results == [ElectionResult("orders", 1, ErrorCode.ELECTION_NOT_NEEDED, "x")]
    unclean, every = broker.elect_requests
    assert unclean.election_type == 1 and every.election_type == 0
    assert [(t.topic, list(t.partitions)) for t in unclean.topic_partitions] == [
        ("orders", [1, 0]),
        ("pay", [0]),
    ]
    assert list(every.topic_partitions) == []
