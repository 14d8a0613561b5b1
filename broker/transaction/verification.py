"""KIP-890 part 1, the partition leader's side: before a producer's first transactional batch on
a partition is appended, the transaction coordinator confirms the partition is in that
producer's ongoing transaction.

Why: a batch held up in the network past the end of its transaction (a retry arriving after the
abort, or after the coordinator aborted a timed-out transaction) would otherwise open a
transaction no coordinator knows of. No marker would ever close it: a hanging transaction,
holding the partition's last stable offset (every read_committed consumer, and the cleaner)
back until someone aborts it by hand. The group coordinator checks a TxnOffsetCommit the same
way (broker/handlers/txn_offset_verification.py): its offsets open the transaction on the
group's `__consumer_offsets` partition.

The check runs only for a batch that would open a transaction here (its producer has none
ongoing on the partition), so a transaction's later batches cost nothing. Between the answer and
the append a marker may end the transaction (the coordinator aborting it meanwhile); the append
goes ahead only if no marker of that producer was met since the check began (Kafka's
VerificationGuard), else the producer retries and is checked again."""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from typing import NamedTuple

from clients import bridge
from clients.errors import ErrorCode, KraftError, error_code_of
from clients.record.batch_header import HEADER_SIZE, CorruptBatchError, parse_header
from clients.types import TopicPartition
from clients.wire import transaction_pb2 as tpb
from clients.wire import transaction_pb2_grpc

log = logging.getLogger(__name__)

VERIFY_TIMEOUT_S = 5.0

# What the coordinator answers for a partition: E.NONE when it is in the ongoing transaction.
Verdicts = dict[TopicPartition, ErrorCode]
# Asks the coordinator of (transactional id, producer id, epoch, partitions); None: this broker
# does not coordinate the id.
LocalVerify = Callable[[str, int, int, frozenset], Awaitable["Verdicts | None"]]


class Opening(NamedTuple):
    """A batch that would open its producer's transaction on a partition, and how many of that
    producer's markers the partition had met when the check began."""

    producer_id: int
    producer_epoch: int
    markers_seen: int


def _transactional_header(records):
    """The first batch's header if it is transactional data; None otherwise, or for a bad
    header (the append refuses it)."""
    if len(records) < HEADER_SIZE:
        return None
    try:
        header = parse_header(records)
    except (CorruptBatchError, ValueError):
        return None
    return header if header.is_transactional and not header.is_control else None


def is_transactional(records) -> bool:
    return _transactional_header(records) is not None


def opening(replicas, topic: str, partition: int, records) -> Opening | None:
    """The Opening of `records`' first batch, or None when it needs no check: not
    transactional, a control batch, its producer already in a transaction here, or anything
    wrong (not the leader, a bad header) that the append itself reports."""
    header = _transactional_header(records)
    if header is None or header.producer_id < 0 or header.producer_epoch < 0:
        return None  # (a negative id or epoch: the append refuses it, INVALID_RECORD)
    return producer_opening(replicas, topic, partition, header.producer_id, header.producer_epoch)


def producer_opening(
    replicas, topic: str, partition: int, producer_id: int, producer_epoch: int
) -> Opening | None:
    """The Opening of a transactional write of `producer_id` to this leader's partition (a
    batch, or a group coordinator's TxnOffsetCommit into `__consumer_offsets`), or None when its
    producer already has a transaction ongoing here (the check was made then) or the partition
    is not this broker's to write (the append reports it)."""
    try:
        state = replicas.producer_state(topic, partition)
    except (KraftError, OSError, ValueError):
        return None
    if producer_id in state.ongoing:
        return None
    return Opening(producer_id, producer_epoch, state.markers_seen.get(producer_id, 0))


def unchanged(replicas, topic: str, partition: int, checked: Opening) -> bool:
    """No marker of the producer met on the partition since `checked` was taken: the
    coordinator's answer still holds (call it with no await before the append)."""
    try:
        state = replicas.producer_state(topic, partition)
    except (KraftError, OSError, ValueError):
        return True  # the append reports it
    return state.markers_seen.get(checked.producer_id, 0) == checked.markers_seen


class TxnVerifier:
    """Asks a transactional id's coordinator: itself when this broker coordinates it, else the
    broker leading its `__transaction_state` partition, on `channels` (the node's channels to
    other brokers, over the inter-broker listener: the coordinator accepts verify_only from
    nodes only)."""

    def __init__(
        self,
        local: LocalVerify,
        coordinator_id: Callable[[str], int | None],
        channels,
        timeout_s: float = VERIFY_TIMEOUT_S,
    ) -> None:
        """`channels.channel(node_id)`: a channel to that broker (markers.BrokerChannels)."""
        self.local = local
        self.coordinator_id = coordinator_id
        self.channels = channels
        self.timeout_s = timeout_s

    async def verify(
        self, transactional_id: str, producer_id: int, producer_epoch: int, partitions: frozenset
    ) -> Verdicts:
        """One verdict per partition. A coordinator that cannot be reached answers each with a
        retriable error (the producer retries the batch)."""
        verdicts = await self.local(transactional_id, producer_id, producer_epoch, partitions)
        if verdicts is not None:
            return verdicts
        node = self.coordinator_id(transactional_id)
        if node is None:
            return dict.fromkeys(partitions, ErrorCode.COORDINATOR_NOT_AVAILABLE)
        request = tpb.AddPartitionsToTxnRequest(
            transactional_id=transactional_id,
            producer_id=producer_id,
            producer_epoch=producer_epoch,
            verify_only=True,
            topics=[
                tpb.TxnTopic(topic=t, partitions=sorted(p for tt, p in partitions if tt == t))
                for t in sorted({tp.topic for tp in partitions})
            ],
        )
        try:
            stub = transaction_pb2_grpc.TransactionStub(self.channels.channel(node))
            response = await bridge.call(stub.AddPartitionsToTxn, request, self.timeout_s)
        except KraftError as exc:
            log.debug(
                "verifying transactional id %s with broker %d failed: %s",
                transactional_id,
                node,
                exc,
            )
            return dict.fromkeys(partitions, ErrorCode.COORDINATOR_NOT_AVAILABLE)
        if response.error_code:
            return dict.fromkeys(partitions, error_code_of(response.error_code))
        answered = {
            TopicPartition(p.topic, p.partition): error_code_of(p.error_code)
            for p in response.partitions
        }
        return {tp: answered.get(tp, ErrorCode.INVALID_TXN_STATE) for tp in partitions}


Checked = dict[tuple[str, int], tuple[Opening, ErrorCode]]


async def verify_openings(
    verifier: TxnVerifier, replicas, transactional_id: str, topics, may_write: Callable[[str], bool]
) -> Checked:
    """The coordinator's verdict on each partition of a Produce (`topics`: its TopicData) whose
    batch would open its producer's transaction there; topics `may_write` refuses are left to
    the append's own refusal. One question per producer and epoch (a request has one)."""
    found = {}
    for topic in topics:
        if not may_write(topic.name):
            continue
        for part in topic.partitions:
            o = opening(replicas, topic.name, part.partition, part.records)
            if o is not None:
                found[(topic.name, part.partition)] = o
    by_producer: dict[tuple[int, int], set] = {}
    for (topic, partition), o in found.items():
        by_producer.setdefault((o.producer_id, o.producer_epoch), set()).add(
            TopicPartition(topic, partition)
        )
    verdicts: Verdicts = {}
    for (producer_id, epoch), tps in by_producer.items():
        verdicts.update(await verifier.verify(transactional_id, producer_id, epoch, frozenset(tps)))
    return {
        key: (o, verdicts.get(TopicPartition(*key), ErrorCode.INVALID_TXN_STATE))
        for key, o in found.items()
    }


def refusal(
    replicas, transactional_id: str, topic: str, partition: int, checked: tuple[Opening, ErrorCode]
) -> tuple[ErrorCode, str] | None:
    """Why the checked batch may not be appended now, or None. Call it right before the append,
    with no await between: that is what keeps a marker from slipping in after it."""
    o, verdict = checked
    where = f"{topic}-{partition}"
    who = (
        f"transactional id '{transactional_id}' (producer {o.producer_id}, epoch "
        f"{o.producer_epoch})"
    )
    if verdict == ErrorCode.NONE:
        if unchanged(replicas, topic, partition, o):
            return None
        return (
            ErrorCode.CONCURRENT_TRANSACTIONS,
            f"{where}: a transaction of {who} ended here while this batch was being checked "
            "with its coordinator; retry",
        )
    if verdict.retriable:
        return (
            verdict,
            f"{where}: the coordinator of {who} could not confirm the partition is "
            f"in its transaction ({verdict.name}); retry",
        )
    return (
        verdict,
        f"{where} is not in an ongoing transaction of {who} at its coordinator "
        f"({verdict.name}): a batch that comes after its transaction ended is "
        "refused rather than open a transaction nothing would end (KIP-890); "
        "begin a transaction and send again",
    )
