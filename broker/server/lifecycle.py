"""A broker's membership in the cluster: register with the active controller (a new broker epoch
per process), heartbeat with the metadata offset replayed here, learn when it is unfenced, and
on shutdown ask to be fenced first so partition leadership moves away before it stops."""

from __future__ import annotations

import logging
import uuid

import trio

from broker.edge.controller_channel import ControllerChannel
from broker.metadata.publisher import BrokerMetadata
from clients.errors import ErrorCode, KraftError
from kraft.controller.messages import BrokerHeartbeatRequest, RegisterBrokerRequest

log = logging.getLogger(__name__)

# While fenced the broker heartbeats often: it is unfenced by the first heartbeat that shows it
# has caught up, and start-up (and tests) wait on that.
STARTING_HEARTBEAT_MS = 50
REQUEST_TIMEOUT_S = 5.0
# One broker is reported unreachable at most this often: a dead leader's followers keep retrying.
REPORT_INTERVAL_S = 0.5


class BrokerEpoch:
    """This broker's epoch as the controller gave it at registration (-1 before): written by the
    lifecycle, read by replication (KIP-903 ISR joins) and producer-id requests. Callable, as
    they take a `() -> int`."""

    def __init__(self) -> None:
        self.value = -1

    def __call__(self) -> int:
        return self.value


class BrokerLifecycle:
    def __init__(
        self,
        node_id: int,
        host: str,
        port: int,
        rack: str | None,
        channel: ControllerChannel,
        metadata: BrokerMetadata,
        epoch: BrokerEpoch,
        heartbeat_interval_ms: int,
        listeners: tuple[str, ...] = (),
    ) -> None:
        self.node_id = node_id
        self.listeners = listeners  # "NAME://host:port" of every broker listener
        self.host, self.port, self.rack = host, port, rack or None
        self.channel = channel
        self.metadata = metadata
        self.heartbeat_interval_ms = heartbeat_interval_ms
        self.incarnation_id = uuid.uuid4().hex
        self.epoch = epoch
        self.fenced = True
        self.unfenced = trio.Event()  # set the first time the controller unfences us
        self._unreachable: set[int] = set()  # to tell the controller in the next heartbeat
        self._reported_at: dict[int, float] = {}  # broker -> when we last reported it
        self._wake = trio.Event()  # heartbeat now

    def report_unreachable(self, broker_id: int) -> None:
        """A connection to `broker_id` was refused or reset (a follower's fetch from its leader):
        heartbeat now, naming it, so the controller can check and fence a dead leader at once
        rather than at the end of its session. At most every REPORT_INTERVAL_S per broker."""
        now = trio.current_time()
        if (
            broker_id == self.node_id
            or now - self._reported_at.get(broker_id, -REPORT_INTERVAL_S) < REPORT_INTERVAL_S
        ):
            return
        self._reported_at[broker_id] = now
        self._unreachable.add(broker_id)
        self._wake.set()

    async def run(self) -> None:
        """Register, then heartbeat until cancelled; registers again if the controller forgot
        this process (STALE_BROKER_EPOCH, e.g. after a newer registration or a restore)."""
        while True:
            await self._register()
            await self._heartbeat_until_stale()

    async def _register(self) -> None:
        request = RegisterBrokerRequest(
            self.node_id, self.incarnation_id, self.host, self.port, self.rack, self.listeners
        )
        while True:
            try:
                response = await self.channel.send(request, REQUEST_TIMEOUT_S)
            except KraftError as exc:
                log.info("broker %d registration: %s; retrying", self.node_id, exc.message)
                continue
            if response.error_code == 0:
                self.epoch.value = response.broker_epoch
                log.debug(
                    "broker %d registered with broker epoch %d", self.node_id, self.epoch.value
                )
                return
            log.warning("broker %d registration refused: %s", self.node_id, response.error_message)
            await trio.sleep(
                1.0 if response.error_code == ErrorCode.DUPLICATE_BROKER_REGISTRATION else 0.2
            )

    async def _heartbeat_until_stale(self) -> None:
        while True:
            reported, self._unreachable = tuple(sorted(self._unreachable)), set()
            request = BrokerHeartbeatRequest(
                self.node_id,
                self.epoch.value,
                self.metadata.offset,
                offline_replicas=self.metadata.offline_replicas(),
                unreachable_brokers=reported,
            )
            try:
                response = await self.channel.send(request, REQUEST_TIMEOUT_S)
            except KraftError as exc:
                log.info("broker %d heartbeat: %s", self.node_id, exc.message)
                response = None
            if response is not None:
                if response.error_code in (
                    ErrorCode.STALE_BROKER_EPOCH,
                    ErrorCode.BROKER_ID_NOT_REGISTERED,
                ):
                    log.warning(
                        "broker %d must register again: %s", self.node_id, response.error_message
                    )
                    self.fenced = True
                    return
                if response.error_code == 0:
                    self._on_fenced(response.is_fenced)
            interval = STARTING_HEARTBEAT_MS if self.fenced else self.heartbeat_interval_ms
            with trio.move_on_after(interval / 1000):
                await self._wake.wait()
            self._wake = trio.Event()

    def _on_fenced(self, fenced: bool) -> None:
        if self.fenced and not fenced:
            log.debug(
                "broker %d is unfenced (caught up to metadata offset %d)",
                self.node_id,
                self.metadata.offset,
            )
            if not self.unfenced.is_set():
                self.metadata.remove_strays()
            self.unfenced.set()
        self.fenced = fenced

    async def controlled_shutdown(self, timeout_s: float = 5.0) -> None:
        """Ask to be fenced so the controller moves leadership away, then stop. Best effort: a
        broker that cannot reach the controller is fenced when its session expires."""
        if self.epoch.value < 0:
            return
        request = BrokerHeartbeatRequest(
            self.node_id, self.epoch.value, self.metadata.offset, want_shutdown=True
        )
        with trio.move_on_after(timeout_s):
            try:
                response = await self.channel.send(request, timeout_s)
                if response.error_code == 0 and response.should_shut_down:
                    log.info("broker %d fenced for shutdown", self.node_id)
            except KraftError as exc:
                log.info("broker %d controlled shutdown skipped: %s", self.node_id, exc.message)
