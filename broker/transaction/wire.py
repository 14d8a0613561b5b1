"""Protobuf <-> the transaction coordinator's dataclasses, and the hint each error's message
carries: the Transaction service's edge."""
from __future__ import annotations

from broker.transaction import messages as m
from clients.errors import ErrorCode, error_name
from clients.types import TopicPartition
from clients.wire import transaction_pb2 as pb

E = ErrorCode

_HINTS = {
    E.NOT_COORDINATOR: "this broker does not coordinate the transactional id (any more); find "
                       "its coordinator again (FindCoordinator key_type 1)",
    E.COORDINATOR_NOT_AVAILABLE: "the transaction coordinator is not available yet; retry",
    E.COORDINATOR_LOAD_IN_PROGRESS: "the coordinator is still loading its transactions; retry",
}


def message(code: int, detail: str = "") -> str:
    if not code:
        return ""
    return "; ".join(part for part in (detail, _HINTS.get(code, "")) if part) or error_name(code)


def partitions_of(topics) -> frozenset[TopicPartition]:
    return frozenset(TopicPartition(t.topic, p) for t in topics for p in t.partitions)


def txn_topics(partitions) -> list[pb.TxnTopic]:
    by_topic: dict[str, list[int]] = {}
    for tp in sorted(partitions):
        by_topic.setdefault(tp.topic, []).append(tp.partition)
    return [pb.TxnTopic(topic=t, partitions=ps) for t, ps in by_topic.items()]


def add_partitions_request(req: pb.AddPartitionsToTxnRequest) -> m.AddPartitionsRequest:
    return m.AddPartitionsRequest(req.transactional_id, req.producer_id, req.producer_epoch,
                                  partitions_of(req.topics), req.verify_only)


def end_txn_request(req: pb.EndTxnRequest) -> m.EndTxnRequest:
    return m.EndTxnRequest(req.transactional_id, req.producer_id, req.producer_epoch,
                           req.committed)
