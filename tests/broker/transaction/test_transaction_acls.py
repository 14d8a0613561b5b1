"""Kafka's ACLs on the Transaction service: Write on the TransactionalId for the producer's
calls (and Write on each topic added, Read on the group of AddOffsetsToTxn), ClusterAction for
KIP-890's verify_only, Describe for DescribeTransactions; ListTransactions lists only the ids
the caller may Describe. A refusal names what was refused; a partition that does not exist is
UNKNOWN_TOPIC_OR_PARTITION (nothing added); an allowed call reaches the coordinator (here: none,
so NOT_COORDINATOR)."""

from __future__ import annotations

from types import SimpleNamespace

from broker.services.transaction_servicer import TransactionServicer
from clients.errors import ErrorCode as E
from clients.wire import transaction_pb2 as pb
from kraft.security.acl import Operation as Op
from kraft.security.acl import ResourceType as R

DENIAL = {
    R.TRANSACTIONAL_ID: E.TRANSACTIONAL_ID_AUTHORIZATION_FAILED,
    R.TOPIC: E.TOPIC_AUTHORIZATION_FAILED,
    R.GROUP: E.GROUP_AUTHORIZATION_FAILED,
    R.CLUSTER: E.CLUSTER_AUTHORIZATION_FAILED,
}


class Acls:
    def __init__(self, *allowed) -> None:
        self.granted = set(allowed)

    def allowed(self, op, rtype, name="kafka-cluster", who=None):
        return (op, rtype, name) in self.granted

    def denial(self, op, rtype, name="kafka-cluster", who=None):
        return None if self.allowed(op, rtype, name) else (DENIAL[rtype], f"no {op.name} {name}")

    def node_call_denial(self, who=None):
        return self.denial(Op.CLUSTER_ACTION, R.CLUSTER)


def servicer(*allowed, drivers=()) -> TransactionServicer:
    coordinators = SimpleNamespace(
        driver_for=lambda txn_id: None,
        drivers=lambda: list(drivers),
        partition_exists=lambda tp: tp.topic != "missing",
    )
    return TransactionServicer(coordinators, lambda group: 0, Acls(*allowed))


def add(verify_only=False):
    return pb.AddPartitionsToTxnRequest(
        transactional_id="tx",
        producer_id=1,
        producer_epoch=0,
        topics=[pb.TxnTopic(topic="t", partitions=[0]), pb.TxnTopic(topic="u", partitions=[0])],
        verify_only=verify_only,
    )


async def test_add_partitions_needs_write_on_the_id_then_on_every_topic():
    refused = await servicer().AddPartitionsToTxn(add())
    assert refused.error_code == E.TRANSACTIONAL_ID_AUTHORIZATION_FAILED
    one_topic = await servicer(
        (Op.WRITE, R.TRANSACTIONAL_ID, "tx"), (Op.WRITE, R.TOPIC, "t")
    ).AddPartitionsToTxn(add())
    assert [(p.topic, p.error_code) for p in one_topic.partitions] == [
        ("t", E.OPERATION_NOT_ATTEMPTED),
        ("u", E.TOPIC_AUTHORIZATION_FAILED),
    ]
    allowed = await servicer(
        (Op.WRITE, R.TRANSACTIONAL_ID, "tx"), (Op.WRITE, R.TOPIC, "t"), (Op.WRITE, R.TOPIC, "u")
    ).AddPartitionsToTxn(add())
    assert allowed.error_code == E.NOT_COORDINATOR


async def test_a_partition_that_does_not_exist_is_refused_and_nothing_is_added():
    request = add()
    request.topics.add(topic="missing", partitions=[0])
    answer = await servicer(
        (Op.WRITE, R.TRANSACTIONAL_ID, "tx"),
        (Op.WRITE, R.TOPIC, "t"),
        (Op.WRITE, R.TOPIC, "u"),
        (Op.WRITE, R.TOPIC, "missing"),
    ).AddPartitionsToTxn(request)
    assert [(p.topic, p.error_code) for p in answer.partitions] == [
        ("missing", E.UNKNOWN_TOPIC_OR_PARTITION),
        ("t", E.OPERATION_NOT_ATTEMPTED),
        ("u", E.OPERATION_NOT_ATTEMPTED),
    ]


async def test_verify_only_is_for_nodes():
    producer = servicer((Op.WRITE, R.TRANSACTIONAL_ID, "tx"))
    assert (
        await producer.AddPartitionsToTxn(add(verify_only=True))
    ).error_code == E.CLUSTER_AUTHORIZATION_FAILED
    # A node needs no Write on the topics: the partition leader asking checked the producer's.
    node = servicer((Op.CLUSTER_ACTION, R.CLUSTER, "kafka-cluster"))
    assert (await node.AddPartitionsToTxn(add(verify_only=True))).error_code == E.NOT_COORDINATOR


async def test_add_offsets_needs_write_on_the_id_and_read_on_the_group():
    request = pb.AddOffsetsToTxnRequest(
        transactional_id="tx", producer_id=1, producer_epoch=0, group_id="g"
    )
    no_group = await servicer((Op.WRITE, R.TRANSACTIONAL_ID, "tx")).AddOffsetsToTxn(request)
    assert no_group.error_code == E.GROUP_AUTHORIZATION_FAILED
    both = servicer((Op.WRITE, R.TRANSACTIONAL_ID, "tx"), (Op.READ, R.GROUP, "g"))
    assert (await both.AddOffsetsToTxn(request)).error_code == E.NOT_COORDINATOR


async def test_end_txn_needs_write_on_the_id():
    request = pb.EndTxnRequest(transactional_id="tx", producer_id=1, producer_epoch=0)
    assert (await servicer().EndTxn(request)).error_code == E.TRANSACTIONAL_ID_AUTHORIZATION_FAILED
    assert (
        await servicer((Op.WRITE, R.TRANSACTIONAL_ID, "tx")).EndTxn(request)
    ).error_code == E.NOT_COORDINATOR


async def test_describe_needs_describe_and_list_shows_only_describable_ids():
    answer = await servicer((Op.DESCRIBE, R.TRANSACTIONAL_ID, "b")).DescribeTransactions(
        pb.DescribeTransactionsRequest(transactional_ids=["a", "b"])
    )
    assert [(t.transactional_id, t.error_code) for t in answer.transactions] == [
        ("a", E.TRANSACTIONAL_ID_AUTHORIZATION_FAILED),
        ("b", E.NOT_COORDINATOR),
    ]
    core = SimpleNamespace(
        list_transactions=lambda states, pids: (E.NONE, (("a", 1, "Ongoing"), ("b", 2, "Empty")))
    )
    listed = await servicer(
        (Op.DESCRIBE, R.TRANSACTIONAL_ID, "b"), drivers=[SimpleNamespace(core=core)]
    ).ListTransactions(pb.ListTransactionsRequest())
    assert [t.transactional_id for t in listed.transactions] == ["b"]
