"""Frozen dataclasses for every Raft RPC of the Quorum service: Vote (with pre-vote),
BeginQuorumEpoch, EndQuorumEpoch, Fetch and FetchSnapshot; the codec maps them to protobuf."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Union

from clients.errors import ErrorCode
from kraft.raft.log import Entry, EpochEndOffset, OffsetAndEpoch

# Every message names its sender and receiver (`src`, `dst`) and the sender's `epoch`. Responses
# carry the responder's view of the leader so a lagging node catches up from any reply.


@dataclass(frozen=True, slots=True)
class VoteRequest:
    """`epoch` is the epoch the candidate stands in; a pre-vote proposes its epoch + 1 without
    bumping anyone's. (`last_epoch`, `last_offset`) is the candidate's log end, for up-to-dateness."""

    src: int
    dst: int
    epoch: int
    last_epoch: int
    last_offset: int
    pre_vote: bool = False

    @property
    def candidate_id(self) -> int:
        return self.src


@dataclass(frozen=True, slots=True)
class VoteResponse:
    src: int
    dst: int
    epoch: int
    leader_id: int | None
    vote_granted: bool
    pre_vote: bool = False
    error: ErrorCode = ErrorCode.NONE
    error_message: str = ""  # why a request was refused, for the requester's log


@dataclass(frozen=True, slots=True)
class BeginQuorumEpochRequest:
    """The new leader announces itself to every voter."""

    src: int
    dst: int
    epoch: int

    @property
    def leader_id(self) -> int:
        return self.src


@dataclass(frozen=True, slots=True)
class BeginQuorumEpochResponse:
    src: int
    dst: int
    epoch: int
    leader_id: int | None
    error: ErrorCode = ErrorCode.NONE
    error_message: str = ""  # why a request was refused, for the requester's log


@dataclass(frozen=True, slots=True)
class EndQuorumEpochRequest:
    """A leader that resigns asks voters to elect quickly, the most caught-up first."""

    src: int
    dst: int
    epoch: int
    preferred_successors: tuple[int, ...] = ()

    @property
    def leader_id(self) -> int:
        return self.src


@dataclass(frozen=True, slots=True)
class EndQuorumEpochResponse:
    src: int
    dst: int
    epoch: int
    leader_id: int | None
    error: ErrorCode = ErrorCode.NONE
    error_message: str = ""  # why a request was refused, for the requester's log


@dataclass(frozen=True, slots=True)
class FetchRequest:
    """Followers and observers pull. `fetch_offset` acknowledges everything below it (voters flush
    first); `last_fetched_epoch` is the epoch of the entry just below it. `request_id` pairs the
    response with the request, so a duplicated or late response is dropped."""

    src: int
    dst: int
    epoch: int
    fetch_offset: int
    last_fetched_epoch: int
    request_id: int
    max_entries: int = 1000
    max_wait_ms: int = 0
    # The high watermark the fetcher knows (KIP-1166): a leader whose own is ahead answers at
    # once instead of parking the fetch, so a caught-up replica learns of a commit without
    # waiting out max_wait_ms. None: not sent; the fetch parks as before.
    known_high_watermark: int | None = None

    @property
    def replica_id(self) -> int:
        return self.src


@dataclass(frozen=True, slots=True)
class FetchResponse:
    """Exactly one of: `records` (possibly empty), `diverging_epoch` (truncate, then fetch again),
    `snapshot_id` (fetch that snapshot: the offset is below the leader's log start)."""

    src: int
    dst: int
    epoch: int
    leader_id: int | None
    request_id: int
    error: ErrorCode = ErrorCode.NONE
    high_watermark: int = -1
    log_start_offset: int = 0
    records: tuple[Entry, ...] = ()
    diverging_epoch: EpochEndOffset | None = None
    snapshot_id: OffsetAndEpoch | None = None
    error_message: str = ""  # why a request was refused, for the requester's log


@dataclass(frozen=True, slots=True)
class FetchSnapshotRequest:
    src: int
    dst: int
    epoch: int
    request_id: int
    snapshot_id: OffsetAndEpoch
    position: int
    max_bytes: int

    @property
    def replica_id(self) -> int:
        return self.src


@dataclass(frozen=True, slots=True)
class FetchSnapshotResponse:
    """One chunk of a snapshot: bytes [position, position + len(chunk)) of `size`."""

    src: int
    dst: int
    epoch: int
    leader_id: int | None
    request_id: int
    snapshot_id: OffsetAndEpoch
    error: ErrorCode = ErrorCode.NONE
    position: int = 0
    size: int = 0
    chunk: bytes = b""
    error_message: str = ""  # why a request was refused, for the requester's log


Message = Union[
    VoteRequest,
    VoteResponse,
    BeginQuorumEpochRequest,
    BeginQuorumEpochResponse,
    EndQuorumEpochRequest,
    EndQuorumEpochResponse,
    FetchRequest,
    FetchResponse,
    FetchSnapshotRequest,
    FetchSnapshotResponse,
]


def error_response(
    request: Message,
    responder: int,
    epoch: int,
    leader_id: int | None,
    error: ErrorCode,
    error_message: str = "",
) -> Message:
    """The answer to `request` that carries only `error` and the responder's epoch and leader: what
    a node sends when it could not handle the request (its loop did not answer in time). Every
    requester already treats such an answer like a lost one (retry after a backoff)."""
    head = (responder, request.src, epoch, leader_id)
    tail = dict(error=error, error_message=error_message)
    if isinstance(request, VoteRequest):
        return VoteResponse(*head, vote_granted=False, pre_vote=request.pre_vote, **tail)
    if isinstance(request, BeginQuorumEpochRequest):
        return BeginQuorumEpochResponse(*head, **tail)
    if isinstance(request, EndQuorumEpochRequest):
        return EndQuorumEpochResponse(*head, **tail)
    if isinstance(request, FetchRequest):
        return FetchResponse(*head, request.request_id, **tail)
    if isinstance(request, FetchSnapshotRequest):
        return FetchSnapshotResponse(*head, request.request_id, request.snapshot_id, **tail)
    raise TypeError(f"{type(request).__name__} is not a request")
