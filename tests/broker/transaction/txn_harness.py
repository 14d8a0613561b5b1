"""Drives one TransactionCoordinator in tests: a fake clock, appends committed (or failed) on
request, answers collected by handle, markers collected as sent."""

from __future__ import annotations

from broker.transaction.messages import (
    AddPartitionsRequest,
    AppendRecords,
    EndTxnRequest,
    InitProducerIdRequest,
    Respond,
    SendMarkers,
    TransactionConfig,
)
from broker.transaction.partition_coordinator import TransactionCoordinator
from clients.errors import ErrorCode
from clients.types import TopicPartition

TP = TopicPartition
E = ErrorCode


class Harness:
    def __init__(self, config: TransactionConfig | None = None, epoch: int = 3) -> None:
        self.core = TransactionCoordinator(0, config or TransactionConfig())
        self.now = 1_000
        self.log: list[tuple[bytes, bytes | None]] = []  # committed records, in order
        self.appends: list[AppendRecords] = []  # appended, not yet resolved
        self.answers: dict[int, object] = {}
        self.markers: list[SendMarkers] = []
        self.handles = 0
        self.next_pid = 1000
        self.auto_commit = True
        self.run(self.core.become_coordinator(epoch, self.now))

    def run(self, effects) -> None:
        for effect in effects:
            if isinstance(effect, Respond):
                assert effect.handle not in self.answers, "a handle answered twice"
                self.answers[effect.handle] = effect.response
            elif isinstance(effect, SendMarkers):
                self.markers.append(effect)
            else:
                self.appends.append(effect)
        if self.auto_commit:
            self.commit_all()

    def commit_all(self, error: ErrorCode = E.NONE) -> None:
        while self.appends:
            append = self.appends.pop(0)
            if error == E.NONE:
                self.log.extend(append.records)
            self.run(self.core.on_append_result(append.append_id, error, self.now))

    def ask(self, call):
        self.handles += 1
        handle = self.handles
        self.run(call(handle))
        return self.answers.get(handle)

    # -- the requests -----------------------------------------------------------------------------
    def init(self, txn_id="tx", timeout_ms=60_000, pid=-1, epoch=-1):
        new_pid = None
        if self.core.needs_producer_id(txn_id):
            new_pid, self.next_pid = self.next_pid, self.next_pid + 1
        req = InitProducerIdRequest(txn_id, timeout_ms, pid, epoch)
        return self.ask(lambda h: self.core.handle_init_producer_id(h, req, self.now, new_pid))

    def add(self, pid, epoch, *tps, txn_id="tx", verify_only=False):
        req = AddPartitionsRequest(txn_id, pid, epoch, frozenset(tps or [TP("t", 0)]), verify_only)
        return self.ask(lambda h: self.core.handle_add_partitions(h, req, self.now))

    def add_offsets(self, pid, epoch, partition=7, txn_id="tx"):
        return self.ask(
            lambda h: self.core.handle_add_offsets(
                h, txn_id, pid, epoch, TP("__consumer_offsets", partition), self.now
            )
        )

    def end(self, pid, epoch, committed=True, txn_id="tx"):
        req = EndTxnRequest(txn_id, pid, epoch, committed)
        return self.ask(lambda h: self.core.handle_end_txn(h, req, self.now))

    def write_markers(self) -> None:
        """Every marker sent so far reaches every partition."""
        sent, self.markers = self.markers, []
        for m in sent:
            self.run(
                self.core.on_markers_written(
                    m.transactional_id, m.producer_id, m.producer_epoch, self.now
                )
            )

    def tick(self, advance_ms: int) -> None:
        self.now += advance_ms
        self.run(self.core.tick(self.now))

    def state(self, txn_id="tx") -> str | None:
        meta = self.core.metadata(txn_id)
        return meta.state if meta is not None else None
