"""Talking to a group's coordinator, for the consumer and the admin client: FindCoordinator through
any broker, the Group RPCs to the node it names, offsets to and from protobuf, retries; the same
lookup finds a transactional id's coordinator (key type 1) for the Transaction service."""

from __future__ import annotations

import logging
import math
import time
from dataclasses import dataclass

import trio

from clients import bridge
from clients.cluster import Cluster
from clients.errors import ErrorCode, KraftError
from clients.types import TopicPartition
from clients.wire import group_pb2, group_pb2_grpc, transaction_pb2_grpc

log = logging.getLogger(__name__)
E = ErrorCode
# The coordinator moved, is not there yet, or could not be reached: look it up again.
COORDINATOR_ERRORS = frozenset(
    {E.NOT_COORDINATOR, E.COORDINATOR_NOT_AVAILABLE, E.NETWORK_EXCEPTION, E.REQUEST_TIMED_OUT}
)
# UNSTABLE_OFFSET_COMMIT: OffsetFetch(require_stable) while a transaction's offsets are pending.
RETRIABLE = COORDINATOR_ERRORS | {E.COORDINATOR_LOAD_IN_PROGRESS, E.UNSTABLE_OFFSET_COMMIT}
RETRY_BACKOFF_S = 0.1


@dataclass(frozen=True)
class Coordinator:
    node_id: int
    address: str


def service_stub(cluster: Cluster, address: str, stub_cls):
    """A `stub_cls` stub on the cluster's channel to `address` (one connection per node; raises
    once the cluster is closed). Cluster knows Broker and Controller stubs only, hence this."""
    channel = cluster._channel(address)
    stubs = cluster.__dict__.setdefault("_service_stubs", {})
    cached = stubs.get((address, stub_cls))
    if cached is None or cached[0] is not channel:
        cached = stubs[(address, stub_cls)] = (channel, stub_cls(channel))
    return cached[1]


def group_stub(cluster: Cluster, address: str) -> group_pb2_grpc.GroupStub:
    return service_stub(cluster, address, group_pb2_grpc.GroupStub)


def transaction_stub(cluster: Cluster, address: str) -> transaction_pb2_grpc.TransactionStub:
    return service_stub(cluster, address, transaction_pb2_grpc.TransactionStub)


def broker_stub(cluster: Cluster, address: str):
    return cluster.broker_stub_at(address)


async def call_any(cluster: Cluster, method: str, request):
    """Send a Group request to the first broker that answers (known brokers, then bootstrap)."""
    last: KraftError | None = None
    addresses = cluster._candidates()
    for address in addresses:
        try:
            return await bridge.call(
                getattr(group_stub(cluster, address), method), request, cluster.timeout
            )
        except KraftError as exc:
            if exc.code != E.NETWORK_EXCEPTION:
                raise
            last = exc
    raise KraftError(
        E.NETWORK_EXCEPTION,
        f"no broker answered {method} (tried "
        f"{', '.join(addresses)}): {last.message if last else ''}; is the cluster "
        "running?",
    )


GROUP_KEY, TRANSACTION_KEY = 0, 1  # FindCoordinator's key types


class CoordinatorClient:
    """The coordinator of one group (or, key_type TRANSACTION_KEY, of one transactional id),
    looked up on first use and forgotten on COORDINATOR_ERRORS."""

    def __init__(self, cluster: Cluster, group_id: str, key_type: int = GROUP_KEY) -> None:
        self.cluster = cluster
        self.group_id = group_id
        self.key_type = key_type
        self._what = (
            f"group '{group_id}'" if key_type == GROUP_KEY else f"transactional id '{group_id}'"
        )
        self.coordinator: Coordinator | None = None
        self._lookup: trio.Event | None = None  # set when a lookup in flight finishes
        self._lookup_error: KraftError | None = None

    def invalidate(self) -> None:
        self.coordinator = None

    async def find(self) -> Coordinator:
        """The coordinator, asking a broker if unknown; concurrent callers share one lookup."""
        while self.coordinator is None:
            if self._lookup is not None:
                await self._lookup.wait()
                if self.coordinator is None and self._lookup_error is not None:
                    raise self._lookup_error
                continue
            self._lookup, self._lookup_error = trio.Event(), None
            try:
                resp = await call_any(
                    self.cluster,
                    "FindCoordinator",
                    group_pb2.FindCoordinatorRequest(key=self.group_id, key_type=self.key_type),
                )
                if resp.error_code:
                    raise KraftError(
                        resp.error_code,
                        f"no coordinator for {self._what} yet: {resp.error_message}",
                    )
                self.coordinator = Coordinator(resp.node_id, f"{resp.host}:{resp.port}")
                log.info(
                    "%s: coordinator is node %d at %s",
                    self._what,
                    resp.node_id,
                    self.coordinator.address,
                )
            except KraftError as exc:
                self._lookup_error = exc
                raise
            finally:
                event, self._lookup = self._lookup, None
                event.set()
        return self.coordinator

    async def call(self, method: str, request, timeout: float | None = None, stub_of=group_stub):
        """One RPC to the coordinator (a Group RPC, or of the service `stub_of(cluster,
        address)` gives); whole-response coordinator errors and network failures forget it
        (the caller decides whether to retry)."""
        coordinator = await self.find()
        stub = stub_of(self.cluster, coordinator.address)
        try:
            resp = await bridge.call(
                getattr(stub, method), request, timeout or self.cluster.timeout
            )
        except KraftError as exc:
            if exc.code in COORDINATOR_ERRORS and self.coordinator == coordinator:
                self.coordinator = None
            raise
        if getattr(resp, "error_code", 0) in COORDINATOR_ERRORS and self.coordinator == coordinator:
            self.coordinator = None
        return resp

    async def call_retrying(
        self,
        method: str,
        request,
        deadline: float,
        error_of=lambda resp: resp.error_code,
        stub_of=group_stub,
    ):
        """`call` until `error_of(resp)` is not a retriable coordinator error or `deadline`
        (time.monotonic) passes; raises KraftError for a failure it gave up on."""
        while True:
            left = deadline - time.monotonic()
            try:
                with trio.fail_after(max(left, 0.001)):
                    resp = await self.call(method, request, max(left, 0.001), stub_of)
                error = error_of(resp)
                if error not in RETRIABLE:
                    return resp
                if error in COORDINATOR_ERRORS:  # also when only the partitions carry it
                    self.invalidate()
                last = KraftError(error, getattr(resp, "error_message", ""))
            except trio.TooSlowError:
                last = KraftError(E.REQUEST_TIMED_OUT, f"{method} for {self._what}")
            except KraftError as exc:
                if exc.code not in RETRIABLE:
                    raise
                last = exc
            if time.monotonic() + RETRY_BACKOFF_S >= deadline:
                raise KraftError(
                    last.code, f"{method} for {self._what} gave up after retries: {last.message}"
                )
            await trio.sleep(RETRY_BACKOFF_S)

    # -- offsets ------------------------------------------------------------------------------
    async def fetch_offsets(
        self, partitions: list | None, deadline: float, *, require_stable: bool = False
    ) -> dict[TopicPartition, int | None]:
        """Committed offsets ({tp: offset, None when nothing is committed}); `partitions` None:
        every partition the group committed."""
        got = await self.fetch_committed(partitions, deadline, require_stable=require_stable)
        return {tp: c[0] if c is not None else None for tp, c in got.items()}

    async def fetch_committed(
        self, partitions: list | None, deadline: float, *, require_stable: bool = False
    ) -> dict[TopicPartition, tuple[int, int] | None]:
        """As fetch_offsets, each with the leader epoch committed beside it (-1: unknown).
        `require_stable` (a read_committed consumer, as Kafka's): while a transaction's offsets
        for a partition are pending, wait (retry) until it ends rather than read the offset
        before them; UNSTABLE_OFFSET_COMMIT if it has not ended by `deadline`."""
        req = group_pb2.OffsetFetchRequest(
            group_id=self.group_id,
            all_partitions=partitions is None,
            partitions=[
                group_pb2.TopicPartitionRef(topic=t, partition=p) for t, p in partitions or ()
            ],
            require_stable=require_stable,
        )
        resp = await self.call_retrying("OffsetFetch", req, deadline, error_of=_fetch_error)
        if resp.error_code:
            raise KraftError(resp.error_code, f"group '{self.group_id}': {resp.error_message}")
        out: dict[TopicPartition, tuple[int, int] | None] = {}
        for p in resp.partitions:
            if p.error_code:
                raise KraftError(p.error_code, f"group '{self.group_id}' {p.topic}-{p.partition}")
            out[TopicPartition(p.topic, p.partition)] = (
                (p.offset, p.leader_epoch) if p.offset >= 0 else None
            )
        return out

    async def commit_offsets(
        self,
        offsets: dict,
        generation: int,
        member_id: str,
        group_instance_id: str | None,
        deadline: float,
        epochs: dict | None = None,
    ) -> None:
        """OffsetCommit, retried while the coordinator is moving; raises the first partition
        error (a membership error is the caller's to interpret). `epochs`: a leader epoch known
        to hold each partition's data up to its offset (KIP-320), where known."""
        epochs = epochs or {}
        req = group_pb2.OffsetCommitRequest(
            group_id=self.group_id,
            generation_id=generation,
            member_id=member_id,
            group_instance_id=group_instance_id,
            partitions=[
                group_pb2.CommitPartition(
                    topic=tp[0], partition=tp[1], offset=off, leader_epoch=epochs.get(tp, -1)
                )
                for tp, off in sorted(offsets.items())
            ],
        )
        resp = await self.call_retrying("OffsetCommit", req, deadline, error_of=_commit_error)
        error = _commit_error(resp)
        if error:
            bad = next((p for p in resp.partitions if p.error_code), None)
            where = f" {bad.topic}-{bad.partition}" if bad is not None else ""
            message = (bad.error_message if bad is not None else "") or resp.error_message
            raise KraftError(
                error,
                f"commit to group '{self.group_id}' failed{where}"
                + (f": {message}" if message else ""),
            )


def _commit_error(resp) -> int:
    return resp.error_code or next((p.error_code for p in resp.partitions if p.error_code), 0)


def _fetch_error(resp) -> int:
    """What OffsetFetch retries on: a coordinator error, or a partition's unstable offsets."""
    if resp.error_code:
        return resp.error_code
    unstable = any(p.error_code == E.UNSTABLE_OFFSET_COMMIT for p in resp.partitions)
    return E.UNSTABLE_OFFSET_COMMIT if unstable else 0


def deadline_after(timeout_s: float) -> float:
    return time.monotonic() + timeout_s if math.isfinite(timeout_s) else math.inf
