"""Broker membership: registration with incarnation checks, heartbeats that unfence a broker
once it has caught up with the metadata log, and fencing of brokers whose session expired."""

from __future__ import annotations

from collections.abc import Mapping

from clients.errors import ErrorCode
from kraft.controller.messages import (
    BrokerHeartbeatRequest,
    BrokerHeartbeatResponse,
    RegisterBrokerRequest,
    RegisterBrokerResponse,
)
from kraft.controller.partition_change import (
    UncleanPolicy,
    fence_broker,
    remove_from_isrs,
    take_replicas_offline,
    unfence_broker,
)
from kraft.controller.result import ControllerResult, PendingRecords
from kraft.metadata.image import MetadataImage
from kraft.metadata.records import RegisterBrokerRecord


class BrokerSessions:
    """When each broker last heartbeat, as seen by the active controller. This is soft state,
    not metadata: it is never logged, and a controller that becomes active gives every broker
    a full session from then on, as Kafka's BrokerHeartbeatManager does."""

    def __init__(self, session_timeout_ms: int) -> None:
        self.session_timeout_ms = session_timeout_ms
        self._last_contact_ms: dict[int, int] = {}
        # Brokers this controller has itself heard from (the others got a session on activation).
        self._heard: set[int] = set()

    def touch(self, broker_id: int, now_ms: int) -> None:
        self._last_contact_ms[broker_id] = now_ms
        self._heard.add(broker_id)

    def forget(self, broker_id: int) -> None:
        """A broker that shut down cleanly: its next process may register at once."""
        self._last_contact_ms.pop(broker_id, None)
        self._heard.discard(broker_id)

    def reset(self, broker_ids, now_ms: int) -> None:
        self._last_contact_ms = {b: now_ms for b in broker_ids}
        self._heard = set()

    def credit_stall(self, stalled_ms: int) -> None:
        """The controller itself did not run for `stalled_ms` (its loop woke that late): the
        heartbeats sent meanwhile may still be queued behind the stall, so that time counts
        against no broker's session."""
        for broker_id in self._last_contact_ms:
            self._last_contact_ms[broker_id] += stalled_ms

    def has_valid_session(self, broker_id: int, now_ms: int) -> bool:
        """A live session this controller has seen a heartbeat for. A session granted only on
        activation does not count: after a restart of the whole cluster (or of a combined node)
        the new controller cannot know the old process is alive, and refusing its successor
        would stall every restart for broker.session.timeout.ms."""
        last = self._last_contact_ms.get(broker_id)
        return (
            broker_id in self._heard
            and last is not None
            and now_ms - last < self.session_timeout_ms
        )

    def expired(self, image: MetadataImage, now_ms: int) -> list[int]:
        """Unfenced brokers whose session is over. One never heard from starts its session now:
        it registered under an earlier active controller."""
        out = []
        for b in image.live_brokers():
            last = self._last_contact_ms.setdefault(b.broker_id, now_ms)
            if now_ms - last >= self.session_timeout_ms:
                out.append(b.broker_id)
        return out

    def next_deadline_ms(self, image: MetadataImage) -> int | None:
        """When the next unfenced broker's session ends if it stays silent."""
        deadlines = [
            self._last_contact_ms[b.broker_id] + self.session_timeout_ms
            for b in image.live_brokers()
            if b.broker_id in self._last_contact_ms
        ]
        return min(deadlines, default=None)


def check_broker_epoch(
    image: MetadataImage, broker_id: int, broker_epoch: int
) -> tuple[int, str] | None:
    """(error code, message) when the sender is not the broker's current registration."""
    broker = image.broker(broker_id)
    if broker is None:
        return ErrorCode.STALE_BROKER_EPOCH, (
            f"broker {broker_id} is not registered; it must register again before this request"
        )
    if broker.broker_epoch != broker_epoch:
        return ErrorCode.STALE_BROKER_EPOCH, (
            f"broker {broker_id} sent broker epoch {broker_epoch} but is registered with epoch "
            f"{broker.broker_epoch}; a newer registration replaced this process"
        )
    return None


def next_broker_epoch(image: MetadataImage) -> int:
    # Above every epoch in use and above the image's offset: a broker id re-registering gets
    # an epoch its earlier processes never had, even after an unregistration.
    return max([image.offset + 1] + [b.broker_epoch + 1 for b in image.brokers.values()])


def register_broker(
    image: MetadataImage,
    sessions: BrokerSessions,
    req: RegisterBrokerRequest,
    now_ms: int,
    unclean_for: UncleanPolicy,
) -> ControllerResult[RegisterBrokerResponse]:
    if req.broker_id < 0:
        return ControllerResult(
            [],
            RegisterBrokerResponse(
                ErrorCode.INVALID_REQUEST,
                f"broker id {req.broker_id} is negative; set node.id >= 0",
            ),
        )
    if not req.incarnation_id:
        return ControllerResult(
            [],
            RegisterBrokerResponse(
                ErrorCode.INVALID_REQUEST, "the registration has no incarnation id"
            ),
        )
    existing = image.broker(req.broker_id)
    if (
        existing is not None
        and existing.incarnation_id != req.incarnation_id
        and sessions.has_valid_session(req.broker_id, now_ms)
    ):
        return ControllerResult(
            [],
            RegisterBrokerResponse(
                ErrorCode.DUPLICATE_BROKER_REGISTRATION,
                f"broker {req.broker_id} is already registered by another running process "
                f"(incarnation {existing.incarnation_id}); check that node.id is unique. If that "
                f"process is gone, registering succeeds once it has been silent for "
                f"broker.session.timeout.ms ({sessions.session_timeout_ms} ms)",
            ),
        )
    epoch = next_broker_epoch(image)
    pending = PendingRecords(image)
    pending.append(
        RegisterBrokerRecord(
            req.broker_id,
            req.incarnation_id,
            epoch,
            req.host,
            req.port,
            req.rack,
            fenced=True,
            listeners=tuple(req.listeners),
        )
    )
    if existing is not None:
        # The new process starts fenced and may have lost unflushed data: it leads nothing
        # and is in no ISR until it has caught up and been unfenced.
        remove_from_isrs(pending, req.broker_id, unclean_for)
    sessions.touch(req.broker_id, now_ms)
    return ControllerResult(pending.records, RegisterBrokerResponse(broker_epoch=epoch))


def broker_heartbeat(
    image: MetadataImage,
    sessions: BrokerSessions,
    registration_offsets: Mapping[int, int],
    req: BrokerHeartbeatRequest,
    now_ms: int,
    unclean_for: UncleanPolicy,
) -> ControllerResult[BrokerHeartbeatResponse]:
    broker = image.broker(req.broker_id)
    if broker is None:
        return ControllerResult(
            [],
            BrokerHeartbeatResponse(
                ErrorCode.BROKER_ID_NOT_REGISTERED,
                f"broker {req.broker_id} is not registered; it must register before heartbeating",
            ),
        )
    problem = check_broker_epoch(image, req.broker_id, req.broker_epoch)
    if problem:
        return ControllerResult([], BrokerHeartbeatResponse(*problem))
    sessions.touch(req.broker_id, now_ms)
    # Caught up = has replayed its own registration; before that it cannot serve metadata that
    # knows it exists. Unknown while the registration is not yet committed here.
    registered_at = registration_offsets.get(req.broker_id)
    caught_up = registered_at is not None and req.current_metadata_offset >= registered_at
    pending = PendingRecords(image)
    if req.offline_replicas:
        take_replicas_offline(pending, req.broker_id, req.offline_replicas, unclean_for)
    if req.want_fence or req.want_shutdown:
        fence_broker(pending, req.broker_id, unclean_for)
    elif broker.fenced and caught_up:
        unfence_broker(pending, req.broker_id, unclean_for)
    fenced = pending.image.broker(req.broker_id).fenced
    should_shut_down = req.want_shutdown and fenced
    if should_shut_down:
        sessions.forget(req.broker_id)
    return ControllerResult(
        pending.records,
        BrokerHeartbeatResponse(
            is_caught_up=caught_up, is_fenced=fenced, should_shut_down=should_shut_down
        ),
    )


def maybe_fence_stale_brokers(
    image: MetadataImage, sessions: BrokerSessions, now_ms: int, unclean_for: UncleanPolicy
) -> ControllerResult[tuple[int, ...]]:
    """Fence every unfenced broker silent for broker.session.timeout.ms; the response lists
    them."""
    stale = sessions.expired(image, now_ms)
    pending = PendingRecords(image)
    for broker_id in stale:
        fence_broker(pending, broker_id, unclean_for)
    return ControllerResult(pending.records, tuple(stale))


def fence_dead_broker(
    image: MetadataImage,
    sessions: BrokerSessions,
    broker_id: int,
    broker_epoch: int,
    unclean_for: UncleanPolicy,
) -> ControllerResult[bool]:
    """Fence `broker_id` before its session ends: another broker saw its connection refused and
    a probe by this controller found nothing listening at its address (a killed process), so
    waiting out broker.session.timeout.ms would only keep its partitions leaderless. Only the
    registration that was probed (`broker_epoch`): a new process registers with a new epoch.
    True when records were written. If the broker is alive after all, its next heartbeat
    unfences it as after an expired session."""
    broker = image.broker(broker_id)
    if broker is None or broker.fenced or broker.broker_epoch != broker_epoch:
        return ControllerResult([], False)
    pending = PendingRecords(image)
    fence_broker(pending, broker_id, unclean_for)
    sessions.forget(broker_id)
    return ControllerResult(pending.records, True)
