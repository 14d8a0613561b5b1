"""Kafka's TransactionMarkerChannelManager for one decided transaction: WriteTxnMarkers to the
leader of each of its partitions (from the node's metadata image), again and again until every
partition has its marker or its topic is gone; a leader that answers
TRANSACTION_COORDINATOR_FENCED means a newer coordinator owns the id, so this one stops; and
its one channel per broker (BrokerChannels)."""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable

import trio

from broker.transaction.messages import SendMarkers
from clients import bridge
from clients.errors import ErrorCode, KraftError
from clients.rate_limited_log import RateLimitedLog
from clients.types import TopicPartition
from clients.wire import broker_pb2 as pb
from clients.wire import broker_pb2_grpc

log = logging.getLogger(__name__)

RETRY_BACKOFF_S = 0.1  # doubled after each round that left partitions, up to the max
RETRY_BACKOFF_MAX_S = 1.0  # (Kafka's retry.backoff.ms and retry.backoff.max.ms)
REQUEST_TIMEOUT_S = 30.0
TOPIC_GONE = -2  # leader_of's answer for a partition whose topic no longer exists

# (leader node id, request) -> response; raises KraftError when the leader cannot be reached.
Send = Callable[[int, pb.WriteTxnMarkersRequest], Awaitable[pb.WriteTxnMarkersResponse]]


def marker_request(
    markers: SendMarkers, partitions: list[TopicPartition]
) -> pb.WriteTxnMarkersRequest:
    topics: dict[str, list[int]] = {}
    for tp in sorted(partitions):
        topics.setdefault(tp.topic, []).append(tp.partition)
    return pb.WriteTxnMarkersRequest(
        markers=[
            pb.TxnMarker(
                producer_id=markers.producer_id,
                producer_epoch=markers.producer_epoch,
                committed=markers.committed,
                coordinator_epoch=markers.coordinator_epoch,
                topics=[pb.TopicPartitions(topic=t, partitions=ps) for t, ps in topics.items()],
            )
        ]
    )


class MarkerWriter:
    """`leader_of(tp)`: the partition's leader, None while it has none, TOPIC_GONE once its topic
    was deleted (Kafka then drops the marker: nobody can read that partition any more)."""

    def __init__(
        self,
        leader_of: Callable[[TopicPartition], int | None],
        send: Send,
        backoff_s: float = RETRY_BACKOFF_S,
    ) -> None:
        self.leader_of = leader_of
        self.send = send
        self.backoff_s = backoff_s
        self.refusals = RateLimitedLog(logger=log)

    async def write(self, markers: SendMarkers) -> bool:
        """True once every partition has the marker; False if a newer coordinator fenced us."""
        remaining = set(markers.partitions)
        fenced: list[str] = []
        backoff_s = self.backoff_s
        while True:
            by_leader: dict[int, list[TopicPartition]] = {}
            for tp in sorted(remaining):
                leader = self.leader_of(tp)
                if leader == TOPIC_GONE:
                    log.info(
                        "transactional id '%s': %s was deleted; its marker is dropped",
                        markers.transactional_id,
                        tp,
                    )
                    remaining.discard(tp)
                elif leader is not None:
                    by_leader.setdefault(leader, []).append(tp)
            async with trio.open_nursery() as nursery:
                for leader, tps in by_leader.items():
                    nursery.start_soon(self._write_to, leader, markers, tps, remaining, fenced)
            if fenced:
                log.info(
                    "transactional id '%s': markers stopped, a newer coordinator owns it (%s)",
                    markers.transactional_id,
                    fenced[0],
                )
                return False
            if not remaining:
                return True
            await trio.sleep(backoff_s)
            backoff_s = min(backoff_s * 2, RETRY_BACKOFF_MAX_S)

    async def _write_to(
        self,
        leader: int,
        markers: SendMarkers,
        tps: list[TopicPartition],
        remaining: set[TopicPartition],
        fenced: list[str],
    ) -> None:
        try:
            response = await self.send(leader, marker_request(markers, tps))
        except KraftError as exc:
            self.refusals.warning(
                f"unreachable-{leader}", "WriteTxnMarkers to broker %d: %s", leader, exc.message
            )
            return
        for result in response.markers:
            for p in result.partitions:
                tp, error = TopicPartition(p.topic, p.partition), p.error_code
                if error == ErrorCode.NONE:
                    remaining.discard(tp)
                elif error == ErrorCode.TRANSACTION_COORDINATOR_FENCED:
                    fenced.append(f"{tp}: {p.error_message}")
                elif (
                    error == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
                    and self.leader_of(tp) == TOPIC_GONE
                ):
                    remaining.discard(tp)
                else:
                    self.refusals.warning(
                        str(error),
                        "WriteTxnMarkers of transactional id '%s' to broker %d, %s: %s (retrying)",
                        markers.transactional_id,
                        leader,
                        tp,
                        p.error_message or error,
                    )


class BrokerChannels:
    """One gRPC channel per broker this broker's transaction work calls: markers to partition
    leaders (Kafka's TransactionMarkerChannelManager keeps one connection per broker too), and
    a partition leader's check with a transaction coordinator (verification.py). A broker whose
    address changed gets a new channel."""

    def __init__(
        self, address: Callable[[int], str | None], open_channel: Callable[[str], object]
    ) -> None:
        self.address = address
        self.open_channel = open_channel
        self._channels: dict[int, tuple[str, object]] = {}

    def channel(self, node_id: int) -> object:
        """KraftError BROKER_NOT_AVAILABLE when the metadata image has no address for it."""
        address = self.address(node_id)
        if address is None:
            raise KraftError(
                ErrorCode.BROKER_NOT_AVAILABLE, f"broker {node_id} is not in the metadata image"
            )
        known = self._channels.get(node_id)
        if known is None or known[0] != address:
            if known is not None:
                known[1].close()
            known = self._channels[node_id] = (address, self.open_channel(address))
        return known[1]

    async def send(
        self, node_id: int, request: pb.WriteTxnMarkersRequest
    ) -> pb.WriteTxnMarkersResponse:
        stub = broker_pb2_grpc.BrokerStub(self.channel(node_id))
        return await bridge.call(stub.WriteTxnMarkers, request, REQUEST_TIMEOUT_S)

    def close(self) -> None:
        for _, channel in self._channels.values():
            channel.close()
        self._channels.clear()
