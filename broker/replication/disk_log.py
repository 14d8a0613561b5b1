"""The ReplicaLog seam over the real log engine: a partition's `kraft.log.log.Log` plus its
leader-epoch cache, which is all PartitionState needs to replicate segment files."""

from __future__ import annotations

from kraft.log.log import AppendInfo, Log


class DiskReplicaLog:
    def __init__(self, log: Log) -> None:
        self.log = log
        self.last_append: AppendInfo | None = None  # the broker answers with its append time

    @property
    def log_start_offset(self) -> int:
        return self.log.log_start_offset

    @property
    def log_end_offset(self) -> int:
        return self.log.log_end_offset

    @property
    def high_watermark(self) -> int:
        return self.log.high_watermark

    @high_watermark.setter
    def high_watermark(self, offset: int) -> None:
        self.log.high_watermark = offset

    @property
    def latest_epoch(self) -> int:
        return self.log.leader_epoch_cache.latest_epoch

    def end_offset_for_epoch(self, epoch: int) -> tuple[int, int]:
        return self.log.end_offset_for_epoch(epoch)

    def assign_epoch_start(self, epoch: int, start_offset: int) -> None:
        if epoch > self.latest_epoch:
            self.log.leader_epoch_cache.assign(epoch, start_offset)

    def append_as_leader(
        self, records: bytes, leader_epoch: int, now_ms: int, *, from_coordinator: bool = False
    ) -> AppendInfo:
        self.last_append = self.log.append_as_leader(
            records, leader_epoch, now_ms, from_coordinator=from_coordinator
        )
        return self.last_append

    def append_as_follower(self, records: bytes, *, now_ms: int | None = None) -> AppendInfo:
        return self.log.append_as_follower(records, now_ms=now_ms)

    def truncate_to(self, offset: int) -> None:
        # Log.truncate_to returns early at the log end; an epoch a leader assigned there with
        # nothing appended must go too, or the next fetch names an epoch we hold no record of.
        self.log.truncate_to(offset)
        self.log.leader_epoch_cache.truncate_from_end(offset)

    def truncate_fully_and_start_at(self, offset: int) -> None:
        self.log.truncate_fully_and_start_at(offset)
