"""Protobuf <-> the transaction coordinator's dataclasses, and the hint each error's message
carries: the Transaction service's edge."""

from __future__ import annotations

from broker.transaction import messages as m
from clients.types import TopicPartition
from clients.wire import transaction_pb2 as pb


def partitions_of(topics) -> frozenset[TopicPartition]:
    return frozenset(TopicPartition(t.topic, p) for t in topics for p in t.partitions)


def txn_topics(partitions) -> list[pb.TxnTopic]:
    by_topic: dict[str, list[int]] = {}
    for tp in sorted(partitions):
        by_topic.setdefault(tp.topic, []).append(tp.partition)
    return [pb.TxnTopic(topic=t, partitions=ps) for t, ps in by_topic.items()]


def add_partitions_request(req: pb.AddPartitionsToTxnRequest) -> m.AddPartitionsRequest:
    return m.AddPartitionsRequest(
        req.transactional_id,
        req.producer_id,
        req.producer_epoch,
        partitions_of(req.topics),
        req.verify_only,
    )


def end_txn_request(req: pb.EndTxnRequest) -> m.EndTxnRequest:
    return m.EndTxnRequest(req.transactional_id, req.producer_id, req.producer_epoch, req.committed)
