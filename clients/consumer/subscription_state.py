"""The consumer's positions, the part of Fetcher (a mixin) the user's thread calls with the
Fetcher's Condition held: assign, pause, seek, reset, and taking buffered records for poll."""

from __future__ import annotations

from collections import deque

from clients.errors import ErrorCode, KraftError
from clients.types import EARLIEST_TIMESTAMP, LATEST_TIMESTAMP, TopicPartition

# Chunks (one fetch answer per partition) buffered before a partition stops being fetched:
# one the user is reading plus one that arrived meanwhile keeps a fetch always in flight.
MAX_BUFFERED_CHUNKS = 2


class SubscriptionState:
    """Fetcher's user side; the attributes are Fetcher's (fetcher.py)."""

    def assign_locked(self, partitions) -> None:
        self.refetch = True
        new = [TopicPartition(*tp) for tp in dict.fromkeys(partitions)]
        keep = set(new)
        for tp in self.assigned:
            if tp not in keep:
                self._forget_locked(tp)
        for tp in new:
            if tp not in self.positions and tp not in self.resets:
                self._reset_locked(tp, self._policy_timestamp(tp))
        self.assigned = new

    def _policy_timestamp(self, tp) -> int | None:
        if self.reset_policy == "earliest":
            return EARLIEST_TIMESTAMP
        if self.reset_policy == "latest":
            return LATEST_TIMESTAMP
        return None

    def _forget_locked(self, tp) -> None:
        self._drop_chunks_locked(tp)
        for d in (self.positions, self.fetch_offsets, self.resets, self.chunks, self.epochs):
            d.pop(tp, None)
        self.paused.discard(tp)
        self.gens[tp] = self.gens.get(tp, 0) + 1

    def pause_locked(self, tps) -> None:
        """Stop fetching `tps` and drop what is buffered for them (Kafka drops it too): their
        positions stay where poll left them, so resume reads on from there."""
        self.refetch = True
        for tp in tps:
            tp = TopicPartition(*tp)
            self._check_assigned(tp)
            if tp in self.paused:
                continue
            self.paused.add(tp)
            self._drop_chunks_locked(tp)
            if tp in self.positions:
                self.fetch_offsets[tp] = self.positions[tp]
            self.gens[tp] = self.gens.get(tp, 0) + 1

    def resume_locked(self, tps) -> None:
        for tp in tps:
            tp = TopicPartition(*tp)
            self._check_assigned(tp)
            self.paused.discard(tp)

    def notify_locked(self) -> None:
        """Wake every poller (blocking and async) so it looks again: the group has callbacks for
        it to run or an error to raise."""
        self._notify_data()

    def _drop_chunks_locked(self, tp) -> None:
        if self.chunks.get(tp):
            self.buffer = deque(c for c in self.buffer if c.tp != tp)
            self.chunks[tp] = 0

    def seek_locked(self, tp, offset: int, leader_epoch: int = -1) -> None:
        """`leader_epoch`: one known to hold the data before `offset` (a committed offset's),
        -1 if none is known."""
        self.refetch = True
        self._check_assigned(tp)
        self._drop_chunks_locked(tp)
        self.resets.pop(tp, None)
        self.positions[tp] = self.fetch_offsets[tp] = offset
        self.gens[tp] = self.gens.get(tp, 0) + 1
        if leader_epoch >= 0:
            self.epochs[tp] = leader_epoch
        else:
            self.epochs.pop(tp, None)

    def epochs_at_locked(self, offsets: dict) -> dict:
        """For a commit: the leader epoch bound of each partition committed at its position
        (what poll returned); an offset chosen elsewhere gets none."""
        return {
            tp: self.epochs[tp]
            for tp, o in offsets.items()
            if tp in self.epochs and self.positions.get(tp) == o
        }

    def _reset_locked(self, tp, timestamp: int | None) -> None:
        self._drop_chunks_locked(tp)
        self.positions.pop(tp, None)
        self.fetch_offsets.pop(tp, None)
        self.epochs.pop(tp, None)
        self.gens[tp] = self.gens.get(tp, 0) + 1
        if timestamp is None:
            self.resets.pop(tp, None)
        else:
            self.resets[tp] = timestamp

    def reset_locked(self, tp, timestamp: int) -> None:
        self.refetch = True
        self._check_assigned(tp)
        self._reset_locked(tp, timestamp)

    def _check_assigned(self, tp) -> None:
        if tp not in self.assigned:
            raise KraftError(
                ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
                f"{tp[0]}-{tp[1]} is not assigned to this consumer; assign() it first",
            )

    def take_locked(self, max_records: int) -> tuple[list, bool]:
        """Up to max_records buffered records, advancing positions; returns (records, wake):
        wake when a chunk was used up that had stopped its partition's fetching."""
        if self.error is not None:
            err, self.error = self.error, None
            raise err
        buffer = self.buffer
        if not buffer and self.reset_policy == "none":
            for tp in self.assigned:
                if tp not in self.positions and tp not in self.resets:
                    group = (
                        f"no offset committed in group '{self.group_id}' and "
                        if self.group_id
                        else ""
                    )
                    raise KraftError(
                        ErrorCode.OFFSET_OUT_OF_RANGE,
                        f"{tp[0]}-{tp[1]} has {group}no position and "
                        f"auto_offset_reset='none'; seek() or seek_to_beginning() "
                        "first",
                    )
        out: list = []
        wake = False
        while buffer and len(out) < max_records:
            chunk = buffer[0]
            tp = chunk.tp
            try:
                part = chunk.take(max_records - len(out))
            except ValueError as exc:
                # A batch that does not decode: a seek to where the partition stands (the
                # record after the last one returned) drops its later chunks and the fetch in
                # flight and fetches the bad batch again, so each poll says so until the user
                # seeks past it (Kafka's consumer stops at a corrupt record the same way).
                error = KraftError(ErrorCode.CORRUPT_MESSAGE, f"{tp[0]}-{tp[1]}: {exc}")
                self.seek_locked(
                    tp, self.positions.setdefault(tp, chunk.skip_below), self.epochs.get(tp, -1)
                )
                if out:
                    self.error = error  # raised by the next poll: these records go now
                    return out, True
                self.wake()  # takes no lock: safe under self.cond
                raise error from None
            if part:
                out += part
                self.positions[tp] = part[-1].offset + 1
            if chunk.done:
                buffer.popleft()
                left = self.chunks[tp] = self.chunks[tp] - 1
                self.positions[tp] = chunk.next_offset
                # Only a partition at its chunk limit waits for room to be fetched again; below
                # it its fetch is in flight already, and a wake would cost the poller a hop.
                wake = wake or left == MAX_BUFFERED_CHUNKS - 1
        return out, wake
