"""KIP-890 part 1 for TxnOffsetCommit, the group coordinator's side: before a transaction's
offsets are taken, the transaction coordinator confirms the group's `__consumer_offsets`
partition is in that producer's ongoing transaction (AddOffsetsToTxn added it), as Kafka 3.8+
does; INVALID_TXN_STATE otherwise.

Why: a TxnOffsetCommit held up in the network past the end of its transaction would otherwise
write a transactional batch no marker ever closes: a hanging transaction on `__consumer_offsets`
whose offsets stay pending (and the group's partitions UNSTABLE_OFFSET_COMMIT for read_committed
consumers) until someone aborts it by hand.

As for Produce (broker/transaction/verification.py), only the write that would open the
producer's transaction on the partition is checked, and the offsets are taken only if no marker
of that producer reached the partition while the coordinator was being asked (Kafka's
VerificationGuard)."""

from __future__ import annotations

from typing import NamedTuple

from broker.group.records import OFFSETS_TOPIC
from broker.transaction.verification import (
    Opening,
    TxnVerifier,
    producer_opening,
    unchanged,
)
from clients.errors import ErrorCode
from clients.types import TopicPartition

E = ErrorCode


class Verified(NamedTuple):
    """A TxnOffsetCommit the transaction coordinator confirmed: still to be guarded right
    before its append (`still_valid`)."""

    partition: int  # of __consumer_offsets
    opening: Opening | None  # None: the transaction was already open there, nothing to guard


def _who(req) -> str:
    return (
        f"transactional id '{req.transactional_id}' (producer {req.producer_id}, epoch "
        f"{req.producer_epoch})"
    )


async def verify_offsets(
    verifier: TxnVerifier, replicas, partition: int, req
) -> Verified | tuple[ErrorCode, str]:
    """Ask the transaction coordinator about `req` (a TxnOffsetCommitRequest) whose group lives
    in `__consumer_offsets` partition `partition`, led here: Verified, or the refusal (its code
    and message) for every partition of the request."""
    if req.producer_id < 0:
        return Verified(partition, None)  # the core refuses it (INVALID_PRODUCER_ID_MAPPING)
    opening = producer_opening(
        replicas, OFFSETS_TOPIC, partition, req.producer_id, req.producer_epoch
    )
    if opening is None:
        return Verified(partition, None)
    tp = TopicPartition(OFFSETS_TOPIC, partition)
    verdicts = await verifier.verify(
        req.transactional_id, req.producer_id, req.producer_epoch, frozenset({tp})
    )
    verdict = verdicts.get(tp, E.INVALID_TXN_STATE)
    if verdict == E.NONE:
        return Verified(partition, opening)
    if verdict.retriable:
        return (
            verdict,
            f"the coordinator of {_who(req)} could not confirm the offsets of group "
            f"'{req.group_id}' are in its transaction ({verdict.name}); retry",
        )
    return (
        verdict,
        f"the offsets of group '{req.group_id}' ({tp}) are not in an ongoing transaction of "
        f"{_who(req)} at its coordinator ({verdict.name}): AddOffsetsToTxn "
        "(send_offsets_to_transaction) comes first, and offsets that arrive after their "
        "transaction ended are refused rather than open a transaction nothing would end "
        "(KIP-890)",
    )


def still_valid(replicas, verified: Verified) -> bool:
    """No marker of the producer reached the partition since the check: call it with no await
    before the append."""
    if verified.opening is None:
        return True
    return unchanged(replicas, OFFSETS_TOPIC, verified.partition, verified.opening)
