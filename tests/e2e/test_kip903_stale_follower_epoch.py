"""KIP-903 between real processes: a follower's fetch carries its broker epoch, the leader passes
it on with the ISR join, and the controller refuses a join vouched for by a pre-restart epoch."""

from __future__ import annotations

import pytest
from waiting import eventually

from clients.bridge import open_channel
from clients.wire import broker_pb2 as bpb
from clients.wire import broker_pb2_grpc, controller_pb2_grpc
from clients.wire import controller_pb2 as cpb

pytestmark = pytest.mark.e2e

FOLLOWER = 7  # a follower the test plays itself, over the same RPCs a broker uses
FAR_AHEAD = 1 << 40


class Follower:
    """Broker FOLLOWER's lifecycle against the controller listener: register, heartbeat,
    controlled shutdown, register again (a restart: a new incarnation and broker epoch)."""

    def __init__(self, controller_address: str) -> None:
        self.ctl = controller_pb2_grpc.ControllerStub(open_channel(controller_address))
        self.epoch = -1

    def start(self, incarnation: str) -> int:
        answer = self.ctl.RegisterBroker(
            cpb.RegisterBrokerRequest(
                broker_id=FOLLOWER, incarnation_id=incarnation, host="127.0.0.1", port=1
            ),
            timeout=10,
        )
        assert answer.error_code == 0, answer.error_message
        self.epoch = answer.broker_epoch
        eventually(lambda: not self.heartbeat().is_fenced, 20, f"broker {FOLLOWER} unfenced")
        return self.epoch

    def heartbeat(self, **flags: bool):
        answer = self.ctl.BrokerHeartbeat(
            cpb.BrokerHeartbeatRequest(
                broker_id=FOLLOWER,
                broker_epoch=self.epoch,
                current_metadata_offset=FAR_AHEAD,
                **flags,
            ),
            timeout=10,
        )
        assert answer.error_code == 0, answer.error_message
        return answer

    def shut_down(self) -> None:
        eventually(
            lambda: self.heartbeat(want_shutdown=True).should_shut_down,
            20,
            f"broker {FOLLOWER} shut down",
        )


def partition_of(broker, topic: str, partition: int):
    answer = broker.Metadata(bpb.MetadataRequest(topics=[topic]), timeout=10)
    return next(p for p in answer.topics[0].partitions if p.partition == partition)


def fetch_as_follower(broker, topic: str, partition: int, leader_epoch: int, replica_epoch: int):
    request = bpb.FetchRequest(
        replica_id=FOLLOWER,
        replica_epoch=replica_epoch,
        max_wait_ms=0,
        min_bytes=1,
        max_bytes=1 << 20,
        topics=[
            bpb.FetchTopic(
                topic=topic,
                partitions=[
                    bpb.FetchPartition(
                        partition=partition,
                        current_leader_epoch=leader_epoch,
                        fetch_offset=0,
                        last_fetched_epoch=-1,
                        log_start_offset=0,
                        partition_max_bytes=1 << 20,
                    )
                ],
            )
        ],
    )
    answer = broker.Fetch(request, timeout=10).topics[0].partitions[0]
    assert answer.error_code == 0, answer.error_message


def test_a_fetch_from_before_the_restart_cannot_bring_the_follower_back_into_the_isr(
    cluster_factory,
):
    cluster = cluster_factory(controllers=1, brokers=1)
    leader_id = cluster.brokers[0].node_id
    leader_log = cluster.brokers[0].log_path
    broker = broker_pb2_grpc.BrokerStub(open_channel(cluster.brokers[0].address))
    follower = Follower(cluster.controllers[0].address)
    old_epoch = follower.start("first-process")

    controller = controller_pb2_grpc.ControllerStub(open_channel(cluster.brokers[0].address))
    created = controller.CreateTopics(
        cpb.CreateTopicsRequest(
            topics=[cpb.CreatableTopic(name="t", num_partitions=2, replication_factor=2)]
        ),
        timeout=10,
    ).topics[0]
    assert created.error_code == 0, created.error_message
    # The partition the real broker leads; the test's follower is its other replica.
    p = eventually(
        lambda: next(
            (
                x
                for x in broker.Metadata(bpb.MetadataRequest(topics=["t"]), timeout=10)
                .topics[0]
                .partitions
                if x.leader == leader_id
            ),
            None,
        ),
        20,
        "a partition led by the real broker",
    ).partition

    follower.shut_down()  # out of every ISR, session over
    new_epoch = follower.start("second-process")
    assert new_epoch != old_epoch
    eventually(
        lambda: list(partition_of(broker, "t", p).isr) == [leader_id],
        20,
        f"t-{p}'s ISR without broker {FOLLOWER}",
    )

    # Fetches the old process sent, caught up, arriving after the restart: the leader proposes
    # the join with the old epoch and the controller refuses it. They keep coming, as a real
    # follower's do (a leader whose ISR proposal is still out proposes again on a later fetch),
    # and the new process keeps its session (fenced, it would be refused for that instead).
    leader_epoch = partition_of(broker, "t", p).leader_epoch

    def refused() -> bool:
        follower.heartbeat()
        fetch_as_follower(broker, "t", p, leader_epoch, old_epoch)
        return "restarted since the leader saw them caught up" in leader_log.read_text()

    eventually(refused, 20, "the controller refusing the stale ISR join")
    assert FOLLOWER not in partition_of(broker, "t", p).isr

    # Fetches from the new process carry its current epoch: the join goes through.
    def rejoined() -> bool:
        follower.heartbeat()
        fetch_as_follower(broker, "t", p, leader_epoch, new_epoch)
        return FOLLOWER in partition_of(broker, "t", p).isr

    eventually(rejoined, 30, f"broker {FOLLOWER} back in t-{p}'s ISR")
