"""A deterministic simulation of one partition on 3 brokers and a controller model: seeded
scheduler, fake clock, a router that drops, delays, duplicates and cuts; invariants per event."""

from __future__ import annotations

from dataclasses import dataclass, field

from sim_scheduler import InvariantViolation, SeededScheduler  # noqa: F401  (tests import it here)

from broker.replication import (
    ACKS_ALL,
    FetchAnswer,
    MemoryReplicaLog,
    PartitionState,
    ProposeIsr,
    ReplicationConfig,
    Truncated,
)
from clients.errors import ErrorCode

CONTROLLER = 0
REPLICAS = (1, 2, 3)
# Kafka's timeouts scaled down (network delays here are a few ms); the ratios are Kafka's:
# heartbeats well inside the session timeout, the lag time a few fetch round trips.
HEARTBEAT_MS, SESSION_TIMEOUT_MS = 25, 90
TICK_MS, FETCH_BACKOFF_MS, FETCH_TIMEOUT_MS, FETCH_MAX_RECORDS = 20, 8, 40, 6
PRODUCE_TIMEOUT_MS = 250


@dataclass(frozen=True)
class Registration:
    """The controller's record of the partition, as brokers learn it from metadata."""

    leader: int
    leader_epoch: int
    partition_epoch: int
    isr: tuple[int, ...]


class ControllerModel:
    """The quorum controller reduced to this partition: registrations and broker epochs,
    heartbeats and fencing, AlterPartition with epoch checks (and KIP-903 broker epochs), and
    clean leader election (from the ISR only). Its changes are atomic: Raft is tested apart."""

    def __init__(self, sim: Simulation) -> None:
        self.sim = sim
        self.reg = Registration(REPLICAS[0], 1, 0, REPLICAS)
        self.registered = {b: 1 for b in REPLICAS}  # broker id -> broker epoch
        self.fenced: set[int] = set()
        self.last_heartbeat = {b: 0 for b in REPLICAS}

    def _change(self, isr: tuple[int, ...]) -> None:
        leader, epoch = self.reg.leader, self.reg.leader_epoch
        if leader not in isr or leader in self.fenced:
            eligible = [b for b in REPLICAS if b in isr and b not in self.fenced]
            new = eligible[0] if eligible else -1
            if new != leader:
                leader, epoch = new, epoch + 1
        if (leader, isr) != (self.reg.leader, self.reg.isr):
            self.sim.stats["leader_changes"] += epoch != self.reg.leader_epoch
            self.reg = Registration(leader, epoch, self.reg.partition_epoch + 1, isr)
            for b in REPLICAS:
                self.send_metadata(b)

    def _remove_from_isr(self, broker: int) -> None:
        # The ISR never becomes empty: the last member stays, so it may lead again.
        isr = tuple(b for b in self.reg.isr if b != broker) or self.reg.isr
        self._change(isr)

    def send_metadata(self, broker: int) -> None:
        self.sim.send(CONTROLLER, broker, ("metadata", self.registered[broker], self.reg))

    def check_sessions(self) -> None:
        for b in REPLICAS:
            if b not in self.fenced and self.sim.now - self.last_heartbeat[b] > SESSION_TIMEOUT_MS:
                self.fenced.add(b)
                self._remove_from_isr(b)
        self.sim.at(self.sim.now + HEARTBEAT_MS, self.check_sessions)

    def handle_heartbeat(self, broker: int, broker_epoch: int) -> None:
        if broker_epoch < self.registered[broker]:
            return
        if broker_epoch > self.registered[broker]:
            # A new process: it may have lost unflushed records, so it is in sync no more.
            self.registered[broker] = broker_epoch
            self._remove_from_isr(broker)
        self.last_heartbeat[broker] = self.sim.now
        if broker in self.fenced:
            self.fenced.discard(broker)
            self._change(self.reg.isr)  # a leaderless partition may elect it now
        self.send_metadata(broker)

    def handle_alter_partition(self, broker: int, broker_epoch: int, p: ProposeIsr) -> None:
        reg, error = self.reg, ErrorCode.NONE
        if broker_epoch != self.registered[broker] or broker in self.fenced:
            error = ErrorCode.STALE_BROKER_EPOCH
        elif p.leader_epoch != reg.leader_epoch:
            error = ErrorCode.FENCED_LEADER_EPOCH
        elif broker != reg.leader:
            error = ErrorCode.NOT_LEADER_OR_FOLLOWER
        elif p.partition_epoch != reg.partition_epoch:
            error = ErrorCode.INVALID_UPDATE_VERSION
        elif reg.leader not in p.new_isr or any(
            b in self.fenced or (b not in reg.isr or e != -1) and e != self.registered[b]
            for b, e in zip(p.new_isr, p.broker_epochs)
        ):
            error = ErrorCode.INELIGIBLE_REPLICA
        else:
            self.sim.stats["isr_changes"] += 1
            self._change(tuple(p.new_isr))
        self.sim.send(CONTROLLER, broker, ("alter_result", broker_epoch, p, error, self.reg))


@dataclass
class Broker:
    broker_id: int
    config: ReplicationConfig
    log: MemoryReplicaLog = field(default_factory=MemoryReplicaLog)
    state: PartitionState | None = None
    alive: bool = True
    incarnation: int = 1  # = its broker epoch
    inflight: object = None  # the FollowerFetch awaiting an answer
    fetch_token: int = 0
    hw_checkpoint: int = 0
    checked: tuple = (None, 0)  # (key, offset) of the committed-prefix check
    acked_checked: tuple = (None, 0)


class Simulation(SeededScheduler):
    def __init__(
        self,
        seed: int,
        config: ReplicationConfig,
        drop: float = 0.0,
        duplicate: float = 0.0,
        max_delay_ms: int = 5,
    ) -> None:
        super().__init__(seed)
        self.config = config
        self.drop, self.duplicate, self.max_delay_ms = drop, duplicate, max_delay_ms
        self.cut: set[tuple[int, int]] = set()
        self.stats = dict.fromkeys(
            ("acked", "truncations", "leader_changes", "isr_changes", "crashes", "lost_unflushed"),
            0,
        )
        self.committed: list[tuple[int, bytes]] = []  # (leader epoch, payload) per offset
        self.acked: dict[int, bytes] = {}
        self.acked_order: list[int] = []
        self.leaders: dict[int, int] = {}
        self.leader_hw: dict[int, tuple] = {}
        self.waiters: list[tuple] = []
        self.produced = 0
        self.controller = ControllerModel(self)
        self.brokers = {b: Broker(b, config) for b in REPLICAS}
        for b in self.brokers.values():
            self._start(b)
        self.at(HEARTBEAT_MS, self.controller.check_sessions)

    # -- router (the scheduler is sim_scheduler.SeededScheduler) -----------------------------------
    def send(self, src: int, dst: int, message: tuple) -> None:
        """Replica links lose, delay and duplicate at random. Controller links are like Kafka's
        TCP connections: delayed, never duplicated, lost only while cut (see partition_chaos)."""
        lossy = CONTROLLER not in (src, dst)
        if (src, dst) in self.cut or lossy and self.rng.random() < self.drop:
            return
        for _ in range(2 if lossy and self.rng.random() < self.duplicate else 1):
            self.at(
                self.now + self.rng.randint(1, self.max_delay_ms), self._deliver, src, dst, message
            )

    def in_flight(self, src: int, kind: str) -> bool:
        return any(
            fn == self._deliver and args[0] == src and args[2][0] == kind
            for _, _, fn, args in self.scheduled()
        )

    def _deliver(self, src: int, dst: int, message: tuple) -> None:
        if (src, dst) in self.cut:
            return
        if dst == CONTROLLER:
            kind, epoch, payload = message
            if kind == "heartbeat":
                self.controller.handle_heartbeat(src, epoch)
            else:
                self.controller.handle_alter_partition(src, epoch, payload)
            return
        b = self.brokers[dst]
        if b.alive:
            getattr(self, "_on_" + message[0])(b, src, *message[1:])

    # -- brokers ----------------------------------------------------------------------------------
    def _start(self, b: Broker) -> None:
        b.alive, b.inflight = True, None
        b.state = PartitionState(b.broker_id, b.log, self.config, b.incarnation, b.hw_checkpoint)
        self._heartbeat(b, b.incarnation)
        self._tick(b, b.incarnation)
        self._flush(b, b.incarnation)

    def _current(self, b: Broker, incarnation: int) -> bool:
        return b.alive and b.incarnation == incarnation

    def _heartbeat(self, b: Broker, incarnation: int) -> None:
        if self._current(b, incarnation):
            self.send(b.broker_id, CONTROLLER, ("heartbeat", b.incarnation, None))
            self.at(self.now + HEARTBEAT_MS, self._heartbeat, b, incarnation)

    def _tick(self, b: Broker, incarnation: int) -> None:
        if self._current(b, incarnation):
            self._apply(b, b.state.tick(self.now))
            self.at(self.now + TICK_MS, self._tick, b, incarnation)

    def _flush(self, b: Broker, incarnation: int) -> None:
        # The OS writes dirty pages back now and then: a crash keeps whatever made it.
        if self._current(b, incarnation):
            b.log.flush()
            self.at(self.now + self.rng.randint(10, 120), self._flush, b, incarnation)

    def crash(self, broker_id: int) -> None:
        b = self.brokers[broker_id]
        if not b.alive:
            return
        self.stats["crashes"] += 1
        self.stats["lost_unflushed"] += b.log.log_end_offset > b.log.flushed_offset
        b.hw_checkpoint = b.state.high_watermark
        b.alive, b.state = False, None
        b.incarnation += 1
        b.log.crash()

    def restart(self, broker_id: int) -> None:
        b = self.brokers[broker_id]
        if not b.alive:
            self._start(b)

    def _apply(self, b: Broker, effects) -> None:
        for e in effects:
            if isinstance(e, ProposeIsr):
                self.send(b.broker_id, CONTROLLER, ("alter", b.incarnation, e))
            elif isinstance(e, Truncated):
                self.stats["truncations"] += 1

    def _on_metadata(self, b: Broker, src: int, broker_epoch: int, reg: Registration) -> None:
        if broker_epoch != b.incarnation:
            return  # meant for an earlier process of this broker
        if reg.leader == b.broker_id:
            effects = b.state.become_leader(
                reg.leader_epoch, reg.partition_epoch, reg.isr, REPLICAS, self.now
            )
        else:
            effects = b.state.become_follower(
                reg.leader, reg.leader_epoch, reg.partition_epoch, self.now
            )
        self._apply(b, effects)
        request = b.state.fetch_request()
        if request is not None and (
            b.inflight is None
            or b.inflight.leader_id != request.leader_id
            or b.inflight.current_leader_epoch != reg.leader_epoch
        ):
            self._schedule_fetch(b, 0)

    def _on_alter_result(
        self,
        b: Broker,
        src: int,
        broker_epoch: int,
        proposal: ProposeIsr,
        error: ErrorCode,
        reg: Registration,
    ) -> None:
        if broker_epoch == b.incarnation:
            self._apply(
                b,
                b.state.on_alter_partition_result(
                    proposal, error, reg.leader_epoch, reg.partition_epoch, reg.isr, self.now
                ),
            )

    def _schedule_fetch(self, b: Broker, delay_ms: int) -> None:
        b.fetch_token += 1
        b.inflight = None
        self.at(self.now + delay_ms, self._fetch, b, b.incarnation, b.fetch_token)

    def _fetch(self, b: Broker, incarnation: int, token: int) -> None:
        if not self._current(b, incarnation) or token != b.fetch_token:
            return
        request = b.state.fetch_request()
        if request is None:
            b.inflight = None
            return
        b.inflight = request
        self.send(b.broker_id, request.leader_id, ("fetch", request))
        b.fetch_token += 1  # the answer, or this timeout, whichever comes first, goes on
        self.at(self.now + FETCH_TIMEOUT_MS, self._fetch, b, incarnation, b.fetch_token)

    def _on_fetch(self, b: Broker, src: int, request) -> None:
        d = b.state.handle_follower_fetch(
            request.replica_id,
            request.fetch_offset,
            request.last_fetched_epoch,
            request.current_leader_epoch,
            self.now,
            broker_epoch=request.broker_epoch,
        )
        self._apply(b, d.effects)
        records = b.log.read(d.read_from, FETCH_MAX_RECORDS) if d.read_from is not None else ()
        self.send(b.broker_id, src, ("fetch_answer", request, FetchAnswer.of(d, records)))

    def _on_fetch_answer(self, b: Broker, src: int, request, answer: FetchAnswer) -> None:
        # Every copy goes to the core, which must drop the stale ones itself.
        self._apply(b, b.state.handle_fetch_response(request, answer, self.now))
        if request is b.inflight:
            busy = answer.records or answer.diverging_epoch is not None
            self._schedule_fetch(b, 0 if busy and not answer.error else FETCH_BACKOFF_MS)

    # -- producers ---------------------------------------------------------------------------------
    def produce(self, count: int) -> None:
        """acks=all to a broker that believes it leads, as a client with stale metadata would."""
        leaders = [b for b in self.brokers.values() if b.alive and b.state.is_leader]
        if not leaders:
            return
        b = self.rng.choice(leaders)
        payloads = []
        for _ in range(count):
            self.produced += 1
            payloads.append(b"%d:%d" % (self.seed, self.produced))
        result = b.state.append_as_leader(payloads, ACKS_ALL, self.now)
        self._apply(b, result.effects)
        if result.error == ErrorCode.NONE:
            self.waiters.append(
                (
                    b,
                    b.incarnation,
                    result.leader_epoch,
                    result.first_offset,
                    payloads,
                    self.now + PRODUCE_TIMEOUT_MS,
                )
            )

    def _complete_waiters(self) -> None:
        waiting = []
        for w in self.waiters:
            b, incarnation, epoch, first, payloads, deadline = w
            if not self._current(b, incarnation):
                continue
            status = b.state.acks_satisfied(first + len(payloads) - 1, epoch)
            if status is None and self.now < deadline:
                waiting.append(w)
            elif status == ErrorCode.NONE:
                for i, p in enumerate(payloads):
                    if self.acked.setdefault(first + i, p) != p:
                        self.fail(
                            f"offset {first + i} acknowledged twice: {self.acked[first + i]}"
                            f" and {p}"
                        )
                    self.acked_order.append(first + i)
                    self.stats["acked"] += 1
        self.waiters = waiting

    # -- invariants -------------------------------------------------------------------------------
    def healthy_isr(self) -> list[Broker]:
        """ISR members that hold every acknowledged record: alive and registered as they are."""
        ctrl = self.controller
        return [
            b
            for b in self.brokers.values()
            if b.broker_id in ctrl.reg.isr
            and b.alive
            and ctrl.registered[b.broker_id] == b.incarnation
        ]

    def check_invariants(self) -> None:
        for b in self.brokers.values():
            if not b.alive:
                continue
            s = b.state
            if s.is_leader:
                first = self.leaders.setdefault(s.leader_epoch, b.broker_id)
                if first != b.broker_id:
                    self.fail(
                        f"two leaders in leader epoch {s.leader_epoch}: {first} and {b.broker_id}"
                    )
                key = (b.broker_id, b.incarnation, s.leader_epoch)
                if self.leader_hw.get(key, -1) > s.high_watermark:
                    self.fail(
                        f"leader {b.broker_id} HW went back in epoch {s.leader_epoch}: "
                        f"{self.leader_hw[key]} -> {s.high_watermark}"
                    )
                self.leader_hw[key] = s.high_watermark
            self._check_committed_prefix(b)
        self._complete_waiters()
        if self.acked_order:
            healthy = self.healthy_isr()
            if not healthy:
                self.fail("no live, registered ISR member is left: the fault model was broken")
            for b in healthy:
                self._check_holds_acked(b)

    def _check_committed_prefix(self, b: Broker) -> None:
        """Below its HW every replica holds exactly the committed log."""
        key = (b.incarnation, b.log.generation)
        start = b.checked[1] if b.checked[0] == key else 0
        hw = b.state.high_watermark
        if hw > b.log.log_end_offset:
            self.fail(f"broker {b.broker_id}: HW {hw} past its log end {b.log.log_end_offset}")
        for offset in range(start, hw):
            r = b.log.record_at(offset)
            value = (r.leader_epoch, r.payload)
            if offset < len(self.committed):
                if self.committed[offset] != value:
                    self.fail(
                        f"broker {b.broker_id}: committed offset {offset} is {value}, "
                        f"was {self.committed[offset]}"
                    )
            else:
                self.committed.append(value)
        b.checked = (key, max(start, hw))

    def _check_holds_acked(self, b: Broker) -> None:
        key = (b.incarnation, b.log.generation, self.controller.reg.partition_epoch)
        start = b.acked_checked[1] if b.acked_checked[0] == key else 0
        for offset in self.acked_order[start:]:
            r = b.log.record_at(offset)
            if r is None or r.payload != self.acked[offset]:
                self.fail(
                    f"ISR member {b.broker_id} lost acknowledged offset {offset} "
                    f"({self.acked[offset]!r}): it has {r}"
                )
            if offset >= len(self.committed) or self.committed[offset][1] != self.acked[offset]:
                self.fail(f"acknowledged offset {offset} is not in the committed log")
        b.acked_checked = (key, len(self.acked_order))
