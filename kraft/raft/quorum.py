"""Quorum arithmetic: majorities, vote tallies, log up-to-dateness and the high watermark a leader
may expose (the offset a majority of voters has made durable)."""

from __future__ import annotations

from collections.abc import Iterable


def majority(voter_count: int) -> int:
    return voter_count // 2 + 1


def log_is_up_to_date(
    candidate_epoch: int, candidate_end_offset: int, last_epoch: int, log_end_offset: int
) -> bool:
    """Raft's election restriction: compare the last epoch first, then the length."""
    return (candidate_epoch, candidate_end_offset) >= (last_epoch, log_end_offset)


def majority_end_offset(end_offsets: Iterable[int], voter_count: int) -> int | None:
    """The largest offset that at least a majority of voters have reached (None if fewer voters
    than a majority have reported at all)."""
    ordered = sorted(end_offsets, reverse=True)
    need = majority(voter_count)
    return ordered[need - 1] if voter_count and len(ordered) >= need else None


class VoteTally:
    """Grants and rejections from distinct voters in one election round; duplicates count once."""

    def __init__(self, voters: frozenset[int], node_id: int) -> None:
        self.voters = voters
        self.granted = {node_id}
        self.rejected: set[int] = set()

    def record(self, voter_id: int, granted: bool) -> None:
        if voter_id not in self.voters or voter_id in self.granted or voter_id in self.rejected:
            return
        (self.granted if granted else self.rejected).add(voter_id)

    @property
    def won(self) -> bool:
        # An empty voter set can never be won: an unformatted node must not lead itself.
        return bool(self.voters) and len(self.granted & self.voters) >= majority(len(self.voters))

    @property
    def lost(self) -> bool:
        return len(self.rejected) > len(self.voters) - majority(len(self.voters))
