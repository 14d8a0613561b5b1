"""The admin client's transaction calls (Kafka's listTransactions, describeTransactions and the
abort of a hanging transaction that kafka-transactions.sh does): listing asks every broker (each
coordinates the ids of the `__transaction_state` partitions it leads), describing asks the id's
coordinator, aborting writes an ABORT marker on the partition's leader."""

from __future__ import annotations

import time
from dataclasses import dataclass

import trio

from clients import bridge
from clients.cluster import Cluster
from clients.errors import INVALID_METADATA, ErrorCode, KraftError, error_name
from clients.group_admin import ask_every_broker
from clients.group_rpc import TRANSACTION_KEY, CoordinatorClient, deadline_after, transaction_stub
from clients.types import TopicPartition
from clients.wire import broker_pb2, transaction_pb2

E = ErrorCode
RETRY_BACKOFF_S = 0.1


@dataclass(frozen=True)
class TransactionListing:
    transactional_id: str
    producer_id: int
    state: str
    coordinator: int


@dataclass(frozen=True)
class TransactionDescription:
    transactional_id: str
    coordinator: int
    state: str  # Empty, Ongoing, PrepareCommit, PrepareAbort, CompleteCommit...
    producer_id: int
    producer_epoch: int
    transaction_timeout_ms: int
    transaction_start_time_ms: int  # -1: no transaction in progress
    partitions: tuple[TopicPartition, ...]


async def list_transactions(
    cluster: Cluster,
    timeout_s: float,
    states: list[str] | None = None,
    producer_ids: list[int] | None = None,
) -> list[TransactionListing]:
    """Every broker's transactional ids, merged and sorted by id."""
    req = transaction_pb2.ListTransactionsRequest(
        state_filters=list(states or ()), producer_id_filters=list(producer_ids or ())
    )

    async def call(broker):
        answer = await bridge.call(
            transaction_stub(cluster, broker.address).ListTransactions, req, cluster.timeout
        )
        return answer, answer.error_code, answer.error_message

    found: dict[str, TransactionListing] = {}
    for broker, answer in await ask_every_broker(cluster, timeout_s, call, "transactions"):
        for t in answer.transactions:
            found[t.transactional_id] = TransactionListing(
                t.transactional_id, t.producer_id, t.state, broker.node_id
            )
    return [found[t] for t in sorted(found)]


async def describe_transaction(
    cluster: Cluster, transactional_id: str, timeout_s: float
) -> TransactionDescription:
    rpc = CoordinatorClient(cluster, transactional_id, TRANSACTION_KEY)
    req = transaction_pb2.DescribeTransactionsRequest(transactional_ids=[transactional_id])
    resp = await rpc.call_retrying(
        "DescribeTransactions",
        req,
        deadline_after(timeout_s),
        error_of=lambda r: r.transactions[0].error_code if r.transactions else 0,
        stub_of=transaction_stub,
    )
    if not resp.transactions:
        raise KraftError(
            E.UNKNOWN_SERVER_ERROR,
            f"transactional id '{transactional_id}': empty DescribeTransactions answer",
        )
    t = resp.transactions[0]
    if t.error_code == E.TRANSACTIONAL_ID_NOT_FOUND:
        raise KraftError(
            t.error_code, f"no transactional id '{transactional_id}'; see: kraft transactions list"
        )
    if t.error_code:
        raise KraftError(t.error_code, f"transactional id '{transactional_id}': {t.error_message}")
    return TransactionDescription(
        t.transactional_id,
        rpc.coordinator.node_id if rpc.coordinator else -1,
        t.state,
        t.producer_id,
        t.producer_epoch,
        t.transaction_timeout_ms,
        t.transaction_start_time_ms,
        tuple(sorted(TopicPartition(x.topic, p) for x in t.topics for p in x.partitions)),
    )


async def abort_transaction(
    cluster: Cluster,
    topic: str,
    partition: int,
    producer_id: int,
    producer_epoch: int,
    coordinator_epoch: int,
    timeout_s: float,
) -> None:
    """Write an ABORT marker for the producer's open transaction on `topic`-`partition` (a
    hanging transaction its coordinator no longer knows), on the partition's leader, retried
    while leadership moves."""
    req = broker_pb2.WriteTxnMarkersRequest(
        markers=[
            broker_pb2.TxnMarker(
                producer_id=producer_id,
                producer_epoch=producer_epoch,
                committed=False,
                coordinator_epoch=coordinator_epoch,
                topics=[broker_pb2.TopicPartitions(topic=topic, partitions=[partition])],
            )
        ]
    )
    deadline = time.monotonic() + timeout_s
    where = f"{topic}-{partition}"
    while True:
        await cluster.refresh([topic])
        state = cluster.metadata.topics.get(topic)
        if state is None or state.error_code:
            raise KraftError(
                state.error_code if state else E.UNKNOWN_TOPIC_OR_PARTITION,
                f"topic '{topic}' does not exist; see: kraft topic list",
            )
        leader = cluster.metadata.leader_for((topic, partition))
        code, message = E.LEADER_NOT_AVAILABLE, f"{where} has no leader right now"
        if partition not in state.partitions:
            raise KraftError(
                E.UNKNOWN_TOPIC_OR_PARTITION, f"topic '{topic}' has no partition {partition}"
            )
        if leader is not None:
            try:
                answer = await bridge.call(
                    cluster.broker_stub(leader).WriteTxnMarkers, req, cluster.timeout
                )
                code, message = _marker_error(answer, where)
            except KraftError as exc:
                code, message = exc.code, exc.message
        if not code:
            return
        if (
            not (code in INVALID_METADATA or KraftError(code, "").retriable)
            or time.monotonic() + RETRY_BACKOFF_S >= deadline
        ):
            raise KraftError(
                code,
                f"aborting producer {producer_id}'s transaction on {where}: "
                f"{message or error_name(code)}",
            )
        await trio.sleep(RETRY_BACKOFF_S)


def _marker_error(answer: broker_pb2.WriteTxnMarkersResponse, where: str) -> tuple[int, str]:
    for marker in answer.markers:
        for p in marker.partitions:
            if p.error_code:
                return p.error_code, p.error_message
    if not any(marker.partitions for marker in answer.markers):
        return E.UNKNOWN_SERVER_ERROR, f"no answer for {where} in the WriteTxnMarkers response"
    return 0, ""
