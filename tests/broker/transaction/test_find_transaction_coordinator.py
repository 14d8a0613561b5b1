"""FindCoordinator key_type 1: the Group service asks the transaction coordinators, which create
`__transaction_state` on first use (internal, compacted, transaction.state.log.num.partitions,
replication factor and min.insync.replicas capped at the live brokers) and name the live leader
of the id's partition; Describe on the TransactionalId is needed; an unknown key_type is refused."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from broker.replication.replica_manager import ReplicaManager
from broker.services.group_servicer import GroupServicer
from broker.transaction.coordinator_registry import TransactionCoordinators
from broker.transaction.messages import TransactionConfig
from broker.transaction.records import TRANSACTION_STATE_TOPIC, transaction_partition_for
from clients.errors import ErrorCode as E
from clients.errors import KraftError
from clients.wire import group_pb2 as pb
from kraft.log.log_config import LogConfig
from kraft.log.log_manager import LogManager
from kraft.security.acl import Operation as Op
from kraft.security.acl import ResourceType as R

BROKERS = {
    1: SimpleNamespace(broker_id=1, host="h1", port=9001, fenced=False),
    2: SimpleNamespace(broker_id=2, host="h2", port=9002, fenced=False),
}


class Cluster:
    """A metadata image without `__transaction_state` until the controller creates it."""

    def __init__(self, live: int, leader: int = 2) -> None:
        self.created = []
        self.topics = {}
        self.leader = leader
        self.image = SimpleNamespace(
            topic=self.topics.get,
            broker=BROKERS.get,
            live_brokers=lambda: list(BROKERS.values())[:live],
        )

    async def send_with_offset(self, request, timeout_s):
        [topic] = request.topics
        self.created.append((topic, request.internal))
        self.topics[topic.name] = SimpleNamespace(
            partitions={
                p: SimpleNamespace(leader=self.leader, has_leader=True)
                for p in range(topic.num_partitions)
            }
        )
        return SimpleNamespace(topics=[SimpleNamespace(error_code=0, error_message="")]), 1

    async def wait_for(self, ready, timeout_s):
        return ready(self.image)


def coordinators(tmp_path, cluster, config=TransactionConfig()) -> TransactionCoordinators:
    replicas = ReplicaManager(LogManager([tmp_path], LogConfig(), now_ms=0), node_id=1)
    return TransactionCoordinators(
        replicas, cluster, cluster, config, send_markers=None, clock_ms=lambda: 0
    )


@pytest.mark.parametrize("live, replication, min_isr", [(1, 1, 1), (2, 2, 2)])
async def test_the_state_topic_is_created_on_first_use_capped_at_live_brokers(
    tmp_path, live, replication, min_isr
):
    cluster = Cluster(live)
    leader = await coordinators(tmp_path, cluster).find_coordinator("tx")
    assert leader.broker_id == 2
    [(topic, internal)] = cluster.created
    assert internal and (topic.name, topic.num_partitions, topic.replication_factor) == (
        TRANSACTION_STATE_TOPIC,
        50,
        replication,
    )
    assert topic.configs["cleanup.policy"] == "compact"
    assert topic.configs["min.insync.replicas"] == str(min_isr)
    await coordinators(tmp_path, cluster).find_coordinator("other")
    assert len(cluster.created) == 1  # created once


async def test_no_live_leader_is_coordinator_not_available(tmp_path):
    cluster = Cluster(2, leader=3)
    with pytest.raises(KraftError) as info:
        await coordinators(tmp_path, cluster).find_coordinator("tx")
    partition = transaction_partition_for("tx", 50)
    assert info.value.code == E.COORDINATOR_NOT_AVAILABLE
    assert f"{TRANSACTION_STATE_TOPIC}-{partition}" in info.value.message


class Acls:
    def __init__(self, *allowed):
        self.granted = set(allowed)

    def denial(self, op, rtype, name, who=None):
        return (
            None
            if (op, rtype, name) in self.granted
            else (
                E.TRANSACTIONAL_ID_AUTHORIZATION_FAILED
                if rtype == R.TRANSACTIONAL_ID
                else E.GROUP_AUTHORIZATION_FAILED,
                "refused",
            )
        )


async def test_key_type_1_goes_to_the_transaction_coordinators(tmp_path):
    transactions = coordinators(tmp_path, Cluster(2))
    servicer = GroupServicer(
        None, None, 1, Acls((Op.DESCRIBE, R.TRANSACTIONAL_ID, "tx")), transactions
    )
    found = await servicer.FindCoordinator(pb.FindCoordinatorRequest(key="tx", key_type=1))
    assert (found.error_code, found.node_id, found.host, found.port) == (0, 2, "h2", 9002)
    refused = await servicer.FindCoordinator(pb.FindCoordinatorRequest(key="nope", key_type=1))
    assert (refused.error_code, refused.node_id) == (E.TRANSACTIONAL_ID_AUTHORIZATION_FAILED, -1)
    unknown = await servicer.FindCoordinator(pb.FindCoordinatorRequest(key="tx", key_type=2))
    assert unknown.error_code == E.INVALID_REQUEST and "key_type 2" in unknown.error_message
