"""The quorum controller on the Raft driver. Every controller replays the committed metadata log
into its QuorumController; the Raft leader, once it has replayed everything before its own epoch,
is the active controller: it runs commands one at a time and answers after their records commit."""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Sequence

import trio

from broker.controller.liveness_probe import refuses_connections
from broker.edge.controller_channel import NotController
from broker.metadata.quorum import CommittedRecord
from clients.errors import ErrorCode, KraftError
from kraft.controller import messages as m
from kraft.controller.controller import QuorumController
from kraft.controller.replication_control import imbalanced_partitions
from kraft.metadata import records as r
from kraft.metadata.delta import MetadataReplayError
from kraft.metadata.image import MetadataImage
from kraft.raft.driver import RaftDriver, monotonic_ms

log = logging.getLogger(__name__)

# Request type -> QuorumController method; each takes (request, now_ms).
_COMMANDS: dict[type, str] = {
    m.RegisterBrokerRequest: "handle_register_broker",
    m.BrokerHeartbeatRequest: "handle_broker_heartbeat",
    m.CreateTopicsRequest: "handle_create_topics",
    m.DeleteTopicsRequest: "handle_delete_topics",
    m.CreatePartitionsRequest: "handle_create_partitions",
    m.AlterPartitionRequest: "handle_alter_partition",
    m.IncrementalAlterConfigsRequest: "handle_incremental_alter_configs",
    m.AllocateProducerIdsRequest: "handle_allocate_producer_ids",
    m.ElectLeadersRequest: "handle_elect_leaders",
    m.CreateAclsRequest: "handle_create_acls",
    m.DeleteAclsRequest: "handle_delete_acls",
    m.DescribeAclsRequest: "handle_describe_acls",
    m.AlterUserScramCredentialsRequest: "handle_alter_user_scram_credentials",
}

# The active controller wakes at the first broker session's end, and at least this often (to see
# that it became active, and for leader balancing). A failed fencing waits this long to retry.
FENCE_CHECK_MS = 250
# A wake this much later than asked means the controller itself was stalled; the time past the
# asked wake is credited to every broker's session (BrokerSessions.credit_stall), so a stall of
# the controller, which delays the heartbeats it reads, never fences a broker that kept sending.
STALL_MS = 100
# A broker reported unreachable is probed at most this often.
PROBE_INTERVAL_MS = 250


class ActiveController:
    def __init__(
        self,
        controller: QuorumController,
        driver: RaftDriver,
        *,
        clock_ms: Callable[[], int] = monotonic_ms,
        commit_timeout_s: float = 10.0,
        probe: Callable[[str, int], Awaitable[bool]] = refuses_connections,
    ) -> None:
        self.controller = controller
        self.driver = driver
        self.clock_ms = clock_ms
        self.commit_timeout_s = commit_timeout_s
        self._lock = trio.Lock()
        self._active_epoch: int | None = None  # the Raft epoch this controller is active in
        self.last_offset = -1  # of the last record the controller replayed
        self._balance_epoch: int | None = None  # the Raft epoch the balance timer counts in
        self._next_balance_ms = 0
        # Brokers reported unreachable by another broker -> the registration (broker epoch) the
        # report was about; `run` probes them with `probe(host, port)` (True: nothing listens).
        self.probe = probe
        self._suspects: dict[int, int] = {}
        self._probed_ms: dict[int, int] = {}
        self._wake = trio.Event()

    @property
    def node_id(self) -> int:
        return self.driver.core.node_id

    # -- MetadataListener
    def replay_committed(self, records: Sequence[CommittedRecord]) -> None:
        # One delta per run of records with the same epoch: replaying one at a time would copy
        # the image per record while a restarted controller catches up.
        run: list[r.MetadataRecord] = []
        base = epoch = -1
        for offset, rec_epoch, record in records:
            if run and (rec_epoch != epoch or offset != base + len(run)):
                self._replay_run(run, base, epoch)
                run = []
            if not run:
                base, epoch = offset, rec_epoch
            run.append(record)
        if run:
            self._replay_run(run, base, epoch)

    def _replay_run(self, run: list, base: int, epoch: int) -> None:
        try:
            self.controller.replay_batch(run, base, epoch)
        except MetadataReplayError:
            # A record that does not apply means a bug; replay the rest one by one so the image
            # keeps every record that does, and say which offset was skipped.
            for i, record in enumerate(run):
                try:
                    self.controller.replay(record, base + i, epoch)
                except MetadataReplayError as exc:
                    log.error(
                        "metadata offset %d not replayed by the controller: %s", base + i, exc
                    )
        self.last_offset = base + len(run) - 1

    def load_snapshot(self, image: MetadataImage) -> None:
        self.controller.load_image(image)
        self.last_offset = image.offset

    def image(self) -> MetadataImage:
        return self.controller.image

    # -- activity
    def is_active(self) -> bool:
        """Leader, and the log up to its own epoch's first entry is replayed here: only then is
        the image complete enough to answer from (Kafka's controller waits for the same)."""
        driver = self.driver
        if not driver.core.is_leader:
            return False
        start = driver.leader_epoch_start_offset()
        return start is not None and driver.committed_end > start

    def _check_active(self) -> None:
        if not self.is_active():
            raise NotController(self.node_id, self.driver.core.describe().leader_id)
        epoch = self.driver.core.epoch
        if self._active_epoch != epoch:
            # Heartbeats went to the previous active controller: every broker gets a full session.
            self.controller.become_active(self.clock_ms())
            self._active_epoch = epoch

    async def handle(self, request) -> tuple[object, int]:
        """Run one command; returns (response, metadata offset it committed or -1). Raises
        NotController, or KraftError(REQUEST_TIMED_OUT) when its records do not commit in time."""
        async with self._lock:
            self._check_active()
            if isinstance(request, m.DescribeConfigsRequest):
                return self.controller.handle_describe_configs(request).response, -1
            if isinstance(request, m.DescribeUserScramCredentialsRequest):
                return self.controller.handle_describe_user_scram_credentials(request), -1
            method = _COMMANDS.get(type(request))
            if method is None:
                raise KraftError(
                    ErrorCode.INVALID_REQUEST,
                    f"the controller has no command for {type(request).__name__}",
                )
            result = getattr(self.controller, method)(request, self.clock_ms())
            if (
                isinstance(request, m.BrokerHeartbeatRequest)
                and request.unreachable_brokers
                and result.response.error_code == 0
            ):  # only a registered broker's word
                self._suspect(request.broker_id, request.unreachable_brokers)
            return result.response, await self._commit(result.records)

    def _suspect(self, reporter: int, broker_ids: Sequence[int]) -> None:
        image = self.controller.image
        for broker_id in broker_ids:
            reg = image.broker(broker_id)
            if broker_id != reporter and reg is not None and not reg.fenced:
                self._suspects[broker_id] = reg.broker_epoch
        if self._suspects:
            self._wake.set()

    async def _commit(self, records: list) -> int:
        if not records:
            return -1
        try:
            with trio.fail_after(self.commit_timeout_s):
                offset = await self.driver.propose(r.encode_batch(records))
                await self.driver.wait_committed(offset)
        except trio.TooSlowError:
            raise KraftError(
                ErrorCode.REQUEST_TIMED_OUT,
                f"the metadata records did not commit within {self.commit_timeout_s:g} s "
                "(is a majority of the controllers up?); retry",
            ) from None
        except KraftError as exc:
            if exc.code == ErrorCode.NOT_LEADER_OR_FOLLOWER:
                raise NotController(self.node_id, self.driver.core.describe().leader_id) from None
            raise
        return offset

    async def run(self) -> None:
        """While active: fence brokers whose session expired or that were reported unreachable
        and refuse connections, and, every leader.imbalance.check.interval.seconds, hand
        leadership back to preferred replicas. Runs until cancelled."""
        wait_ms = FENCE_CHECK_MS
        while True:
            wake_at = self.clock_ms() + wait_ms
            with trio.move_on_after(wait_ms / 1000):
                await self._wake.wait()
            self._wake = trio.Event()
            wait_ms = FENCE_CHECK_MS
            stalled = self.clock_ms() - wake_at
            if stalled > STALL_MS:
                self.controller.credit_stall(stalled)
            if not self.is_active():
                self._suspects.clear()
                continue
            await self._fence_dead_suspects()
            await self._maybe_balance_leaders()
            now = self.clock_ms()
            deadline = self.controller.next_deadline_ms()
            if self._active_epoch == self.driver.core.epoch and (
                deadline is None or now < deadline
            ):
                # Fence at the session's end, not up to FENCE_CHECK_MS after it: that wait was a
                # sixth of a 1.5 s session's failover.
                wait_ms = (
                    FENCE_CHECK_MS if deadline is None else min(FENCE_CHECK_MS, deadline - now + 1)
                )
                continue
            async with self._lock:
                try:
                    self._check_active()
                    result = self.controller.maybe_fence_stale_brokers(self.clock_ms())
                    if result.response:
                        log.info(
                            "fencing brokers %s: no heartbeat for broker.session.timeout.ms",
                            list(result.response),
                        )
                    await self._commit(result.records)
                except (NotController, KraftError) as exc:
                    log.info("fencing check skipped: %s", exc)

    async def _fence_dead_suspects(self) -> None:
        """Fence each reported broker that still has the reported registration and whose address
        refuses connections: its process is gone, so its session need not run out first."""
        suspects, self._suspects = self._suspects, {}
        for broker_id, broker_epoch in suspects.items():
            now = self.clock_ms()
            if now - self._probed_ms.get(broker_id, -PROBE_INTERVAL_MS) < PROBE_INTERVAL_MS:
                continue
            self._probed_ms[broker_id] = now
            reg = self.controller.image.broker(broker_id)
            if reg is None or reg.fenced or reg.broker_epoch != broker_epoch:
                continue
            if not await self.probe(reg.host, reg.port):
                continue
            async with self._lock:
                try:
                    self._check_active()
                    result = self.controller.fence_dead_broker(broker_id, broker_epoch)
                    if result.response:
                        log.info(
                            "fencing broker %d: reported unreachable and nothing listens at "
                            "%s:%d (its process is gone); not waiting for its session to end",
                            broker_id,
                            reg.host,
                            reg.port,
                        )
                    await self._commit(result.records)
                except (NotController, KraftError) as exc:
                    log.info("fencing of unreachable broker %d skipped: %s", broker_id, exc)

    async def _maybe_balance_leaders(self) -> None:
        """Kafka's auto.leader.rebalance.enable: an ElectLeaders(PREFERRED) command, through
        `handle` like any other, for the partitions replication_control.imbalanced_partitions
        names (it re-checks each one under the lock)."""
        config = self.controller.config
        if not config.auto_leader_rebalance_enable or not self._balance_due(self.clock_ms()):
            return
        wanted = imbalanced_partitions(
            self.controller.image, config.leader_imbalance_per_broker_percentage
        )
        if not wanted:
            return
        try:
            response, _ = await self.handle(
                m.ElectLeadersRequest(m.ElectionType.PREFERRED, tuple(wanted))
            )
        except (NotController, KraftError) as exc:
            log.info("preferred leader balancing skipped: %s", exc)
            return
        moved = [f"{res.topic}-{res.partition}" for res in response.results if res.error_code == 0]
        if moved:
            log.info(
                "preferred replicas lead again (leader.imbalance.per.broker.percentage=%d "
                "exceeded): %s",
                config.leader_imbalance_per_broker_percentage,
                ", ".join(moved),
            )

    def _balance_due(self, now_ms: int) -> bool:
        # As in Kafka, the first check waits a full interval after becoming active, so brokers
        # that restarted with the quorum have time to rejoin their ISRs first.
        interval_ms = self.controller.config.leader_imbalance_check_interval_seconds * 1000
        epoch = self.driver.core.epoch
        if self._balance_epoch != epoch:
            self._balance_epoch, self._next_balance_ms = epoch, now_ms + interval_ms
        if now_ms < self._next_balance_ms:
            return False
        self._next_balance_ms = now_ms + interval_ms
        return True
