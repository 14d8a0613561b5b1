"""Followers pull from their leaders: one task per leader broker, one Fetch at a time carrying every
partition this broker follows from it (fetch offset = log end offset, last fetched epoch), the
answers handed to each partition's PartitionState (append, truncate by epoch, take the HW)."""

from __future__ import annotations

import logging
from collections.abc import Callable

import trio

from broker.replication.fetch_response_wire import parse_fetch_response
from broker.replication.messages import EpochEndOffset, FetchAnswer
from broker.replication.replica_manager import ReplicaManager
from clients import bridge
from clients.errors import ErrorCode, KraftError, error_code_of
from clients.wire import broker_pb2 as pb

log = logging.getLogger(__name__)

REFUSAL_LOG_MS = 10_000

FETCH_MAX_WAIT_MS = 500  # long poll: the leader answers at once when it has data
FETCH_MAX_BYTES = 16 << 20
PARTITION_MAX_BYTES = 1 << 20
ERROR_BACKOFF_S = 0.1
RESCAN_S = 0.1  # how soon a new leadership assignment gets its fetcher
FETCH_PATH = "/kraft.broker.v1.Broker/Fetch"


class ReplicaFetchers:
    def __init__(
        self,
        replicas: ReplicaManager,
        broker_address: Callable[[int], str | None],
        broker_epoch: Callable[[], int],
        clock_ms: Callable[[], int],
        open_channel: Callable[[str], object] = bridge.open_channel,
        on_unreachable: Callable[[int], None] = lambda broker_id: None,
    ) -> None:
        self.replicas = replicas
        # Told when a leader's connection is refused or reset: maybe it died (the controller
        # checks before it fences; see BrokerLifecycle.report_unreachable).
        self.on_unreachable = on_unreachable
        self.open_channel = open_channel  # TLS with this node's certificate when secured
        self._refusal_logged: dict[int, int] = {}  # leader -> when we last logged a refusal
        self.broker_address = broker_address
        self.broker_epoch = broker_epoch
        self.clock_ms = clock_ms
        self._running: set[int] = set()

    async def run(self) -> None:
        """Keep one fetcher per leader this broker follows; each ends once it follows nothing
        from that leader any more. Runs until cancelled."""
        async with trio.open_nursery() as nursery:
            while True:
                for leader in self.replicas.leaders_followed() - self._running:
                    self._running.add(leader)
                    nursery.start_soon(self._fetch_from, leader)
                await trio.sleep(RESCAN_S)

    async def _fetch_from(self, leader: int) -> None:
        channel = fetch = None
        address = None
        try:
            while True:
                work = self.replicas.followed_from(leader)
                if not work:
                    return
                wanted = self.broker_address(leader)
                if wanted is None:
                    await trio.sleep(ERROR_BACKOFF_S)  # not registered yet in our image
                    continue
                if wanted != address:
                    if channel is not None:
                        channel.close()
                    address, channel = wanted, self.open_channel(wanted)
                    fetch = fetch_method(channel)
                if not await self._fetch_once(fetch, leader, work):
                    await trio.sleep(ERROR_BACKOFF_S)
        finally:
            self._running.discard(leader)
            if channel is not None:
                channel.close()

    async def _fetch_once(self, fetch_call, leader: int, work) -> bool:
        """One Fetch for every partition in `work`; False when the leader should be left alone
        for a moment (unreachable, or every partition refused)."""
        topics: dict[str, list] = {}
        for partition, fetch in work:
            topics.setdefault(partition.topic, []).append(
                pb.FetchPartition(
                    partition=partition.partition,
                    current_leader_epoch=fetch.current_leader_epoch,
                    fetch_offset=fetch.fetch_offset,
                    last_fetched_epoch=fetch.last_fetched_epoch,
                    log_start_offset=partition.log.log_start_offset,
                    partition_max_bytes=PARTITION_MAX_BYTES,
                )
            )
        request = pb.FetchRequest(
            replica_id=self.replicas.node_id,
            max_wait_ms=FETCH_MAX_WAIT_MS,
            min_bytes=1,
            max_bytes=FETCH_MAX_BYTES,
            replica_epoch=self.broker_epoch(),
            topics=[pb.FetchTopic(topic=t, partitions=ps) for t, ps in topics.items()],
        )
        try:
            response = await bridge.call(fetch_call, request, FETCH_MAX_WAIT_MS / 1000 + 5)
        except KraftError as exc:
            log.debug("fetch from broker %d failed: %s", leader, exc.message)
            if bridge.is_connection_refused(exc):
                self.on_unreachable(leader)
            return False
        if response.error_code:
            # Retried every backoff: one line per leader every 10 s is enough.
            now = self.clock_ms()
            if now - self._refusal_logged.get(leader, -REFUSAL_LOG_MS) >= REFUSAL_LOG_MS:
                self._refusal_logged[leader] = now
                log.warning("broker %d refused our fetch: %s", leader, response.error_message)
            return False
        by_key = {(p.topic, p.partition): (p, f) for p, f in work}
        progressed = False
        for topic in response.topics:
            for answer, records in topic.partitions:
                found = by_key.get((topic.topic, answer.partition))
                if found is None:
                    continue
                partition, fetch = found
                progressed |= answer.error_code == 0
                if answer.error_code not in (
                    0,
                    ErrorCode.NOT_LEADER_OR_FOLLOWER,
                    ErrorCode.FENCED_LEADER_EPOCH,
                    ErrorCode.UNKNOWN_LEADER_EPOCH,
                ):
                    log.info(
                        "fetch of %s-%d from broker %d: %s",
                        partition.topic,
                        partition.partition,
                        leader,
                        answer.error_message,
                    )
                diverging = answer.diverging_epoch if answer.HasField("diverging_epoch") else None
                self.replicas.apply_fetch_response(
                    partition,
                    fetch,
                    FetchAnswer(
                        error=error_code_of(answer.error_code),
                        high_watermark=answer.high_watermark,
                        log_start_offset=answer.log_start_offset,
                        diverging_epoch=None
                        if diverging is None
                        else EpochEndOffset(diverging.epoch, diverging.end_offset),
                        records=records,
                    ),
                    self.clock_ms(),
                )
        return progressed


def fetch_method(channel):
    """Broker.Fetch on `channel`, its answer read by parse_fetch_response: the records a view of
    the received bytes rather than protobuf's two copies of them."""
    return channel.unary_unary(
        FETCH_PATH,
        request_serializer=pb.FetchRequest.SerializeToString,
        response_deserializer=parse_fetch_response,
    )
