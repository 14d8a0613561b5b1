"""The Transaction service's requests checked before they reach a coordinator (limits and their
reasons in broker/edge/request_limits.py): a function per RPC that raises Refused, reading
the wire-neutral requests the transaction handler takes (broker/handlers/transaction.py). A
transactional id is a name a client picks, keyed in every `__transaction_state` record."""

from __future__ import annotations

from broker.edge.request_limits import (
    INT16_MAX,
    MAX_NAME_LENGTH,
    Refused,
    check_group_id,
    check_length,
    check_not_negative,
    check_range,
)
from broker.transaction import messages as m
from clients.errors import ErrorCode
from clients.topics import topic_name_problem

E = ErrorCode
MAX_PARTITIONS = 100_000  # partitions named in one AddPartitionsToTxn


def check_transactional_id(value: str, field: str = "transactional_id") -> None:
    check_length(field, value, MAX_NAME_LENGTH, required=True)


def _producer(req) -> None:
    check_transactional_id(req.transactional_id)
    check_range(
        "producer_id", req.producer_id, 0, (1 << 63) - 1, hint="the id InitProducerId handed out"
    )
    check_range(
        "producer_epoch",
        req.producer_epoch,
        0,
        INT16_MAX,
        hint="the epoch InitProducerId handed out",
    )


def AddPartitionsToTxn(req: m.AddPartitionsRequest) -> None:
    _producer(req)
    if len(req.partitions) > MAX_PARTITIONS:
        raise Refused(E.INVALID_REQUEST, f"more than {MAX_PARTITIONS} partitions in one request")
    for topic, partition in sorted(req.partitions):
        problem = topic_name_problem(topic)
        if problem:
            raise Refused(E.INVALID_TOPIC_EXCEPTION, f"topics: {problem}")
        check_not_negative(
            f"topic {topic!r}: partition",
            partition,
            E.UNKNOWN_TOPIC_OR_PARTITION,
            "partitions are numbered from 0",
        )


def AddOffsetsToTxn(req) -> None:
    _producer(req)
    check_group_id(req.group_id)


def EndTxn(req) -> None:
    _producer(req)


def DescribeTransactions(req) -> None:
    for txn_id in req.transactional_ids:
        check_transactional_id(txn_id, "transactional_ids")


def ListTransactions(req) -> None:
    check_length("state_filters", ",".join(req.state_filters), 1_000)
