"""Fetch and FetchSnapshot handlers mixed into RaftCore: the leader validates a follower's
(fetch_offset, last_fetched_epoch) and answers; followers and observers pull, truncate, install."""

from __future__ import annotations

from clients.errors import ErrorCode
from kraft.raft.leader_state import LeaderState
from kraft.raft.messages import (
    FetchRequest,
    FetchResponse,
    FetchSnapshotRequest,
    FetchSnapshotResponse,
)
from kraft.raft.ready import SnapshotInstall
from kraft.raft.state import FollowerState, SnapshotFetch, UnattachedState

# Leader side: an older epoch is fenced; a newer one is UNKNOWN_LEADER_EPOCH (the fetcher heard of
# an election we have not: we will learn it from the voters). A fetch below our log start gets our
# snapshot id; one whose last fetched epoch ends earlier on our log gets a diverging epoch; else
# it acknowledges `fetch_offset` (which may move the high watermark) and gets records, or is parked
# until there are some, the high watermark moves, or fetch_max_wait_ms passes (not parked when it
# names a high watermark older than ours: it is answered with the new one at once, KIP-1166).


class ReplicationHandlers:
    # -- leader -----------------------------------------------------------------------------------
    def _fetch_error(self, epoch: int) -> ErrorCode:
        if not isinstance(self._role, LeaderState):
            return (
                ErrorCode.FENCED_LEADER_EPOCH
                if epoch < self.epoch
                else ErrorCode.NOT_LEADER_OR_FOLLOWER
            )
        if epoch < self.epoch:
            return ErrorCode.FENCED_LEADER_EPOCH
        return ErrorCode.UNKNOWN_LEADER_EPOCH if epoch > self.epoch else ErrorCode.NONE

    def handle_fetch_request(self, m: FetchRequest) -> None:
        error = self._fetch_error(m.epoch)
        if error != ErrorCode.NONE:
            self._send(
                FetchResponse(
                    self.node_id, m.src, self.epoch, self._known_leader(), m.request_id, error
                )
            )
            return
        leader: LeaderState = self._role
        leader.record_contact(m.src, self._now)
        if self._validate_fetch(m) is None:
            leader.update_end_offset(m.src, m.fetch_offset)
            if not self._maybe_advance_high_watermark():
                # Nothing moved, nothing to send, nothing the fetcher has not heard: park it
                # (long poll).
                behind = (
                    m.known_high_watermark is not None
                    and m.known_high_watermark < self.high_watermark
                )
                if m.max_wait_ms > 0 and m.fetch_offset >= self._log.log_end_offset and not behind:
                    # Never longer than our own long poll: each parked fetch keeps a call open.
                    wait_ms = min(m.max_wait_ms, self.config.fetch_max_wait_ms)
                    leader.parked[m.src] = (m, self._now + wait_ms)
                    return
        self._answer_fetch(m)

    def _validate_fetch(self, m: FetchRequest) -> FetchResponse | None:
        """None if the fetcher's log matches ours up to fetch_offset, else the answer to send."""
        log = self._log
        base = dict(
            src=self.node_id,
            dst=m.src,
            epoch=self.epoch,
            leader_id=self.node_id,
            request_id=m.request_id,
            high_watermark=self.high_watermark,
            log_start_offset=log.log_start_offset,
        )
        snapshot = log.latest_snapshot_id
        if m.fetch_offset < log.log_start_offset and snapshot is not None:
            return FetchResponse(**base, snapshot_id=snapshot)
        if m.fetch_offset == 0 and log.log_start_offset == 0:
            return None
        end = log.end_offset_for_epoch(m.last_fetched_epoch)
        if end.epoch == m.last_fetched_epoch and end.end_offset >= m.fetch_offset:
            return None
        if end.epoch < 0 and snapshot is not None:
            return FetchResponse(**base, snapshot_id=snapshot)
        return FetchResponse(**base, diverging_epoch=end)

    def _answer_fetch(self, m: FetchRequest) -> None:
        answer = self._validate_fetch(m)
        if answer is None:
            records = self._log.read(
                m.fetch_offset, min(m.max_entries, self.config.fetch_max_entries)
            )
            answer = FetchResponse(
                self.node_id,
                m.src,
                self.epoch,
                self.node_id,
                m.request_id,
                high_watermark=self.high_watermark,
                log_start_offset=self._log.log_start_offset,
                records=tuple(records),
            )
        self._send(answer)

    def _maybe_advance_high_watermark(self) -> bool:
        leader: LeaderState = self._role
        hw = leader.high_watermark_candidate(self._log.flushed_offset)
        if hw is None or hw <= self.high_watermark:
            return False
        self.high_watermark = hw
        self._wake_parked_fetches()
        return True

    def _wake_parked_fetches(self) -> None:
        if isinstance(self._role, LeaderState):
            parked, self._role.parked = self._role.parked, {}
            for m, _ in parked.values():
                self._answer_fetch(m)

    def _expire_parked_fetches(self) -> None:
        leader: LeaderState = self._role
        for replica, (m, expiry) in list(leader.parked.items()):
            if self._now >= expiry:
                del leader.parked[replica]
                self._answer_fetch(m)

    def _reject_parked_fetches(self) -> None:
        parked, self._role.parked = self._role.parked, {}
        for m, _ in parked.values():
            self._send(
                FetchResponse(
                    self.node_id,
                    m.src,
                    self.epoch,
                    None,
                    m.request_id,
                    ErrorCode.NOT_LEADER_OR_FOLLOWER,
                )
            )

    def handle_fetch_snapshot_request(self, m: FetchSnapshotRequest) -> None:
        error = self._fetch_error(m.epoch)
        found = None
        if error == ErrorCode.NONE:
            self._role.record_contact(m.src, self._now)
            # Only this chunk is read: reading the whole snapshot per chunk made sending it
            # quadratic in its size.
            found = self._log.read_snapshot_chunk(
                m.snapshot_id, m.position, min(m.max_bytes, self.config.snapshot_chunk_bytes)
            )
            if found is None:
                error = ErrorCode.SNAPSHOT_NOT_FOUND
        if error != ErrorCode.NONE:
            self._send(
                FetchSnapshotResponse(
                    self.node_id,
                    m.src,
                    self.epoch,
                    self._known_leader(),
                    m.request_id,
                    m.snapshot_id,
                    error,
                )
            )
            return
        size, chunk = found
        self._send(
            FetchSnapshotResponse(
                self.node_id,
                m.src,
                self.epoch,
                self.node_id,
                m.request_id,
                m.snapshot_id,
                position=m.position,
                size=size,
                chunk=chunk,
            )
        )

    # -- follower and observer --------------------------------------------------------------------
    def _maybe_send_fetch(self) -> None:
        r = self._role
        if not isinstance(r, (FollowerState, UnattachedState)) or self._next_fetch_ms is None:
            return
        if isinstance(r, FollowerState) and r.election_deadline_ms is not None:
            return  # our leader resigned: wait for the election instead
        if self._snapshot_to_install is not None or self._installing:
            return  # the log is about to be replaced: a fetch from its old end would be wrong
        if self._fetch_inflight is not None:
            if self._now < self._fetch_inflight[2]:
                return
            self._fetch_inflight = None  # lost: ask again
        if self._now < self._next_fetch_ms:
            return
        if isinstance(r, FollowerState):
            dst = self.leader_id
        else:  # an observer looking for the leader asks any voter
            others = sorted(v for v in self.voters if v != self.node_id)
            if not others:
                self._next_fetch_ms = self._now + self.config.request_timeout_ms
                return
            dst = self._rng.choice(others)
        rid = self._next_request_id()
        if isinstance(r, FollowerState) and r.snapshot is not None:
            self._send(
                FetchSnapshotRequest(
                    self.node_id,
                    dst,
                    self.epoch,
                    rid,
                    r.snapshot.snapshot_id,
                    len(r.snapshot.data),
                    self.config.snapshot_chunk_bytes,
                )
            )
        else:
            self._send(
                FetchRequest(
                    self.node_id,
                    dst,
                    self.epoch,
                    self._log.log_end_offset,
                    self._log.last_fetched_epoch,
                    rid,
                    self.config.fetch_max_entries,
                    self.config.fetch_max_wait_ms,
                    self.high_watermark,
                )
            )
        self._fetch_inflight = (rid, dst, self._now + self.config.request_timeout_ms)

    def _take_response(self, m) -> bool:
        """Accept only the answer to our one outstanding request: duplicates and late answers
        are dropped, so a stale diverging epoch can never truncate newer data."""
        inflight = self._fetch_inflight
        if inflight is None or inflight[0] != m.request_id or inflight[1] != m.src:
            return False
        self._fetch_inflight = None
        if self._maybe_observe_epoch(m.epoch, m.leader_id):
            return False
        if m.error != ErrorCode.NONE:
            self._on_fetch_error(m)
            return False
        if m.epoch < self.epoch:
            self._next_fetch_ms = self._now
            return False
        if not isinstance(self._role, FollowerState) and m.leader_id == m.src:
            self._become_follower(m.epoch, m.src)  # an observer found the leader
        r = self._role
        if not isinstance(r, FollowerState) or m.src != self.leader_id:
            return False
        r.fetch_deadline_ms = self._now + self.config.fetch_timeout_ms
        r.last_fetch_ok_ms = self._now
        self._next_fetch_ms = self._now
        return True

    def _on_fetch_error(self, m) -> None:
        r = self._role
        self._next_fetch_ms = self._now + self.config.retry_backoff_ms
        if m.epoch != self.epoch:
            return
        if m.leader_id is not None and m.leader_id != self.node_id and self.leader_id is None:
            self._become_follower(self.epoch, m.leader_id)
        elif isinstance(r, FollowerState) and m.src == self.leader_id and m.leader_id is None:
            if self.is_observer:
                self._become_unattached_same_epoch()
            elif m.error == ErrorCode.NETWORK_EXCEPTION:
                self._on_leader_unreachable()
            else:
                self._maybe_elect_soon(())  # our leader resigned without telling us
        elif isinstance(r, FollowerState) and m.error == ErrorCode.SNAPSHOT_NOT_FOUND:
            r.snapshot = None

    def handle_fetch_response(self, m: FetchResponse) -> None:
        if not self._take_response(m):
            return
        r: FollowerState = self._role
        log = self._log
        if m.diverging_epoch is not None:
            local = log.end_offset_for_epoch(m.diverging_epoch.epoch)
            offset = (
                min(m.diverging_epoch.end_offset, local.end_offset)
                if local.epoch >= 0
                else log.log_start_offset
            )
            offset = max(offset, log.log_start_offset)
            if offset < self.high_watermark:
                raise RuntimeError(
                    f"node {self.node_id}: truncation to {offset} below the high "
                    f"watermark {self.high_watermark}"
                )
            log.truncate_to(offset)
        elif m.snapshot_id is not None:
            r.snapshot = SnapshotFetch(m.snapshot_id)
        else:
            if m.records and m.records[0].offset == log.log_end_offset:
                log.append(m.records)
            hw = min(m.high_watermark, log.log_end_offset)
            if hw > self.high_watermark:
                self.high_watermark = hw

    def handle_fetch_snapshot_response(self, m: FetchSnapshotResponse) -> None:
        if not self._take_response(m):
            return
        r: FollowerState = self._role
        fetch = r.snapshot
        if fetch is None or m.snapshot_id != fetch.snapshot_id or m.position != len(fetch.data):
            return
        fetch.data += m.chunk
        if len(fetch.data) < m.size:
            return
        r.snapshot = None
        # The install (files written and fsynced) is the driver's: an effect of the next Ready.
        # Until it is done (advance), the log still ends where it did: no fetch goes out.
        self._snapshot_to_install = SnapshotInstall(fetch.snapshot_id, bytes(fetch.data))
        self.high_watermark = max(self.high_watermark, fetch.snapshot_id.offset)
        self._applied = fetch.snapshot_id.offset
        self._snapshot_to_load = fetch.snapshot_id
