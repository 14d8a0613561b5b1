"""The marker sender: each partition's marker goes to its leader, is sent again until that
partition answers NONE (leader unknown, unreachable, NOT_LEADER), is dropped when its topic was
deleted, and the whole stops when a leader says a newer coordinator fenced this one."""

from __future__ import annotations

import trio

from broker.transaction.markers import TOPIC_GONE, MarkerWriter
from broker.transaction.messages import SendMarkers
from clients.errors import ErrorCode as E
from clients.errors import KraftError
from clients.types import TopicPartition as TP
from clients.wire import broker_pb2 as pb

MARKERS = SendMarkers("tx", 5, 2, True, 9, frozenset({TP("a", 0), TP("a", 1), TP("gone", 0)}))


def answering(errors):
    """A leader per partition answering from `errors[tp]` (a list, one code per attempt, the
    last one repeated); a KraftError instance in it: unreachable."""
    sent = []

    async def send(node, request):
        sent.append((node, request))
        out = pb.WriteTxnMarkersResponse()
        result = out.markers.add(producer_id=request.markers[0].producer_id)
        for t in request.markers[0].topics:
            for p in t.partitions:
                queue = errors[TP(t.topic, p)]
                error = queue.pop(0) if len(queue) > 1 else queue[0]
                if isinstance(error, KraftError):
                    raise error
                result.partitions.add(topic=t.topic, partition=p, error_code=error)
        return out

    return send, sent


async def test_every_partition_is_retried_until_written_and_a_deleted_topic_is_skipped(
    autojump_clock,
):
    leaders = {TP("a", 0): [None, 1], TP("a", 1): [2]}  # a-0 has no leader at first
    send, sent = answering(
        {
            TP("a", 0): [E.NONE],
            TP("a", 1): [KraftError(E.NETWORK_EXCEPTION, "down"), E.NOT_LEADER_OR_FOLLOWER, E.NONE],
        }
    )

    def leader_of(tp):
        if tp.topic == "gone":
            return TOPIC_GONE
        queue = leaders[tp]
        return queue.pop(0) if len(queue) > 1 else queue[0]

    assert await MarkerWriter(leader_of, send).write(MARKERS) is True
    per_partition = {}
    for node, request in sent:
        [marker] = request.markers
        assert (
            marker.producer_id,
            marker.producer_epoch,
            marker.committed,
            marker.coordinator_epoch,
        ) == (5, 2, True, 9)
        for t in marker.topics:
            for p in t.partitions:
                per_partition.setdefault((t.topic, p), []).append(node)
    assert per_partition == {("a", 0): [1], ("a", 1): [2, 2, 2]}


async def test_a_fenced_coordinator_stops(autojump_clock):
    send, sent = answering(
        {TP("a", 0): [E.TRANSACTION_COORDINATOR_FENCED], TP("a", 1): [E.NOT_LEADER_OR_FOLLOWER]}
    )
    markers = SendMarkers("tx", 5, 2, True, 9, frozenset({TP("a", 0), TP("a", 1)}))
    with trio.fail_after(60):
        assert await MarkerWriter(lambda tp: 1, send).write(markers) is False
    assert len(sent) == 1
