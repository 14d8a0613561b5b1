"""A seeded simulation of the transaction coordinator core: producer instances racing on a few
transactional ids, appends that commit or fail, markers delivered late and out of order,
coordinator crashes and leader changes (a new coordinator replays what was committed). After
every event: the log's states never regress, a fenced producer never commits, no marker is
written for a decision the log does not hold; at the end,
every committed transaction's COMMIT marker is in every one of its partitions."""

from __future__ import annotations

import random
from dataclasses import dataclass

import pytest

from broker.transaction.messages import (
    AddPartitionsRequest,
    AppendRecords,
    EndTxnRequest,
    InitProducerIdRequest,
    Respond,
    SendMarkers,
    TransactionConfig,
)
from broker.transaction.metadata import VALID_NEXT
from broker.transaction.partition_coordinator import TransactionCoordinator
from broker.transaction.records import EMPTY, PREPARE_COMMIT, decode_record
from clients.errors import ErrorCode
from clients.types import TopicPartition

E = ErrorCode
IDS = ("a", "b", "c")
PARTITIONS = [TopicPartition("t", p) for p in range(4)]
CONFIG = TransactionConfig(
    max_timeout_ms=60_000,
    abort_timed_out_cleanup_interval_ms=500,
    transactional_id_expiration_ms=20_000,
)


@dataclass
class Instance:
    """One producer process of a transactional id: what InitProducerId last told it."""

    txn_id: str
    pid: int = -1
    epoch: int = -1


class Simulation:
    def __init__(self, seed: int) -> None:
        self.rng = random.Random(seed)
        self.now = 0
        self.coordinator_epoch = 0
        self.log: list[tuple[bytes, bytes | None]] = []
        self.instances = [Instance(i) for i in IDS for _ in range(2)]
        self.parked: dict[int, tuple[Instance, str, object]] = {}
        self.handles = 0
        self.pids = 100
        self.latest: dict[str, tuple[int, int]] = {}  # the newest (pid, epoch) handed out
        self.commit_requested: set[tuple[int, int]] = set()
        self.appends: list[AppendRecords] = []
        # (SendMarkers, its number, one partition, the coordinator epoch that sent it)
        self.deliveries: list[tuple[SendMarkers, int, TopicPartition, int]] = []
        self.progress: dict[int, set] = {}  # SendMarkers number -> partitions done
        self.sends = 0
        self.markers: dict[TopicPartition, list[tuple[int, int, bool]]] = {
            tp: [] for tp in PARTITIONS
        }
        self.seen_epoch: dict[tuple[TopicPartition, int], int] = {}
        self.checked, self.last, self.decided, self.markers_checked = 0, {}, set(), {}
        self.core = self._new_core()

    # -- the coordinator --------------------------------------------------------------------------
    def _new_core(self) -> TransactionCoordinator:
        core = TransactionCoordinator(0, CONFIG)
        for key, value in self.log:
            core.replay(key, value)
        self.coordinator_epoch += 1
        self.core = core
        self.run(core.become_coordinator(self.coordinator_epoch, self.now))
        return core

    def run(self, effects) -> None:
        for effect in effects:
            if isinstance(effect, Respond):
                self.answered(effect.handle, effect.response)
            elif isinstance(effect, SendMarkers):
                self.sends += 1
                for tp in sorted(effect.partitions):
                    self.deliveries.append((effect, self.sends, tp, self.coordinator_epoch))
            else:
                self.appends.append(effect)

    def answered(self, handle: int, response) -> None:
        instance, kind, request = self.parked.pop(handle)
        if kind == "init" and response.error == E.NONE:
            new = (response.producer_id, response.producer_epoch)
            assert new > self.latest.get(instance.txn_id, (-1, -1)), "an epoch handed out twice"
            self.latest[instance.txn_id] = new
            instance.pid, instance.epoch = new
        if kind == "end" and request.committed and response.error == E.NONE:
            # Fencing: only the newest instance of an id may hear that its commit succeeded.
            assert (instance.pid, instance.epoch) == self.latest[instance.txn_id], (
                f"fenced producer {instance} committed"
            )

    def crash(self) -> None:
        """The leader dies: what it appended is committed by the new leader or lost."""
        self.run(self.core.resign())
        for append in self.appends:
            if self.rng.random() < 0.5:
                self.log.extend(append.records)
        self.appends.clear()
        self._new_core()

    # -- events -----------------------------------------------------------------------------------
    def request(self) -> None:
        instance = self.rng.choice(self.instances)
        self.handles += 1
        handle, what = self.handles, self.rng.random()
        if instance.pid < 0 or what < 0.15:
            req = InitProducerIdRequest(instance.txn_id, self.rng.choice([1_000, 30_000]))
            new_pid = None
            if self.core.needs_producer_id(instance.txn_id):
                new_pid, self.pids = self.pids, self.pids + 1
            self.parked[handle] = (instance, "init", req)
            self.run(self.core.handle_init_producer_id(handle, req, self.now, new_pid))
        elif what < 0.6:
            tps = frozenset(self.rng.sample(PARTITIONS, self.rng.randint(1, 2)))
            req = AddPartitionsRequest(instance.txn_id, instance.pid, instance.epoch, tps)
            self.parked[handle] = (instance, "add", req)
            self.run(self.core.handle_add_partitions(handle, req, self.now))
        else:
            req = EndTxnRequest(
                instance.txn_id, instance.pid, instance.epoch, self.rng.random() < 0.7
            )
            if req.committed:
                self.commit_requested.add((instance.pid, instance.epoch))
            self.parked[handle] = (instance, "end", req)
            self.run(self.core.handle_end_txn(handle, req, self.now))

    def resolve_append(self) -> None:
        append = self.appends.pop(0)
        error = E.NONE if self.rng.random() < 0.9 else E.NOT_ENOUGH_REPLICAS
        if error == E.NONE:
            self.log.extend(append.records)
        self.run(self.core.on_append_result(append.append_id, error, self.now))

    def deliver_marker(self) -> None:
        marker, number, tp, coordinator = self.deliveries.pop(
            self.rng.randrange(len(self.deliveries))
        )
        seen = self.seen_epoch.get((tp, marker.producer_id), -1)
        if marker.coordinator_epoch < seen:
            return  # TRANSACTION_COORDINATOR_FENCED: a stale coordinator
        self.seen_epoch[(tp, marker.producer_id)] = marker.coordinator_epoch
        self.markers[tp].append((marker.producer_id, marker.producer_epoch, marker.committed))
        done = self.progress.setdefault(number, set())
        done.add(tp)
        if done == marker.partitions and coordinator == self.coordinator_epoch:
            self.run(
                self.core.on_markers_written(
                    marker.transactional_id, marker.producer_id, marker.producer_epoch, self.now
                )
            )

    def step(self) -> None:
        roll = self.rng.random()
        if roll < 0.02:
            self.crash()
        elif roll < 0.35 and self.appends:
            self.resolve_append()
        elif roll < 0.55 and self.deliveries:
            self.deliver_marker()
        elif roll < 0.65:
            self.now += self.rng.randint(1, 800)
            self.run(self.core.tick(self.now))
        else:
            self.request()
        self.check_log()

    # -- invariants -------------------------------------------------------------------------------
    def check_log(self) -> None:
        """The records committed since the last look, then every marker written since."""
        for key, value in self.log[self.checked :]:
            txn_id, v = decode_record(key, value)
            before = self.last.get(txn_id)
            if v is not None and before is not None:
                assert (v.producer_id, v.producer_epoch) >= (
                    before.producer_id,
                    before.producer_epoch,
                ), f"{txn_id}: producer epoch went back: {before} -> {v}"
                assert (
                    v.state in VALID_NEXT[before.state]
                    or v.state == EMPTY
                    and before.state in (EMPTY, "CompleteCommit", "CompleteAbort")
                ), f"{txn_id}: {before.state} -> {v.state}"
            if v is not None and v.state == PREPARE_COMMIT:
                assert (v.producer_id, v.producer_epoch) in self.commit_requested, (
                    f"{txn_id}: a commit nobody asked for: {v}"
                )
            if v is not None and v.state in ("PrepareCommit", "PrepareAbort"):
                self.decided |= {
                    (tp, v.producer_id, v.producer_epoch, v.state == PREPARE_COMMIT)
                    for tp in v.partitions
                }
            self.last[txn_id] = v
        self.checked = len(self.log)
        for tp, written in self.markers.items():
            for pid, epoch, committed in written[self.markers_checked.get(tp, 0) :]:
                assert (tp, pid, epoch, committed) in self.decided, (
                    f"{tp}: a marker {pid}/{epoch}/{committed} with no decision in the log"
                )
            self.markers_checked[tp] = len(written)

    def settle(self) -> None:
        """No more faults: every append commits, every marker arrives, timers run."""
        for _ in range(200):
            if self.appends:
                self.log.extend(self.appends[0].records)
                self.run(
                    self.core.on_append_result(self.appends.pop(0).append_id, E.NONE, self.now)
                )
            elif self.deliveries:
                self.deliver_marker()
            else:
                self.now += 600
                self.run(self.core.tick(self.now))
            self.check_log()

    def check_committed_markers(self) -> None:
        for key, value in self.log:
            txn_id, v = decode_record(key, value)
            if v is not None and v.state == PREPARE_COMMIT:
                for tp in v.partitions:
                    assert (v.producer_id, v.producer_epoch, True) in self.markers[tp], (
                        f"{txn_id}: committed without a COMMIT marker in {tp}"
                    )
        for meta in self.core.transactions():
            assert meta.state not in ("PrepareCommit", "PrepareAbort"), (
                f"{meta.transactional_id} left undecided in {meta.state}"
            )


@pytest.mark.parametrize("seed", range(150))
def test_simulation(seed):
    sim = Simulation(seed)
    try:
        for _ in range(400):
            sim.step()
        sim.settle()
        sim.check_committed_markers()
    except AssertionError as exc:
        raise AssertionError(f"seed {seed}: {exc}") from exc
    assert any(decode_record(k, v)[1] is not None for k, v in sim.log)  # it did something
