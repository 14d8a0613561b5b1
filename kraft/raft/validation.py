"""What the Quorum service checks in a Raft request before the core sees it: the cluster id, who
it is addressed to, and every id, epoch and offset within its wire type and never negative."""

from __future__ import annotations

from dataclasses import dataclass

from clients.errors import ErrorCode
from kraft.raft.messages import (
    BeginQuorumEpochRequest,
    EndQuorumEpochRequest,
    FetchRequest,
    FetchSnapshotRequest,
    Message,
    VoteRequest,
)

# What is still open until requests are authenticated (the cluster id is no secret: it only keeps
# a node formatted for another cluster out). A request that carries a real voter's id and passes
# every check here can still:
# - Vote (not pre-vote) in the next epoch: the leader and every voter move to it and elect again,
#   one election per request. A forged log end (last_epoch, last_offset) can also win a voter's
#   vote for a real candidate whose log is behind: the one forged election request that could
#   cost a committed entry. Each request moves an epoch by at most RaftConfig.max_epoch_jump, so
#   the end of int32 is millions of requests away, and there the quorum stops electing (no node
#   ever crashes on it).
# - BeginQuorumEpoch: believed only by a voter whose leader has gone quiet (as a pre-vote is
#   granted), which then follows the claimed leader until its fetch timeout.
# - EndQuorumEpoch in the current epoch in the leader's name: its followers elect at once.
# - Fetch in a voter's name: acknowledges up to the leader's log end for that voter, so the high
#   watermark can pass entries the voter does not hold. Observers (any other id) never count,
#   but they can read the whole metadata log.
INT32_MAX = 2**31 - 1
INT64_MAX = 2**63 - 1
# Epochs are int32 on the wire and in quorum-state. No node ever holds MAX_EPOCH itself: a node
# only stands for election while epoch + 1 stays below it, and never adopts it from a message, so
# a stored MAX_EPOCH (or more) can only be damage (see quorum_state.py).
MAX_EPOCH = INT32_MAX


@dataclass(frozen=True)
class Refusal:
    error: ErrorCode
    message: str


def check_request(
    message: Message, cluster_id: str, our_cluster_id: str, node_id: int
) -> Refusal | None:
    """None if `message`, received with `cluster_id`, may be handed to node `node_id`'s core;
    else the error and a message naming the field that is wrong. Nothing here needs the core's
    state: the core itself checks who is a voter and which epochs it may move to."""
    if not our_cluster_id:
        return Refusal(
            ErrorCode.INCONSISTENT_CLUSTER_ID,
            f"node {node_id} has no cluster.id in its meta.properties; re-format it",
        )
    if not cluster_id:
        return Refusal(
            ErrorCode.INCONSISTENT_CLUSTER_ID,
            "cluster_id is empty: every Raft request must carry its cluster's id",
        )
    if cluster_id != our_cluster_id:
        return Refusal(
            ErrorCode.INCONSISTENT_CLUSTER_ID,
            f"cluster_id is {_shown(cluster_id)} but node {node_id} belongs to cluster "
            f"{our_cluster_id!r}; format the sender with this cluster's id",
        )
    problem = field_problem(message)
    if problem is None and message.dst != node_id:
        problem = f"dst is {message.dst} but this is node {node_id}"
    if problem is None and message.src == node_id:
        problem = f"src is {message.src}, this node's own id"
    return None if problem is None else Refusal(ErrorCode.INVALID_REQUEST, problem)


def _shown(value: str, limit: int = 64) -> str:
    """A sender's string as a refusal quotes it (and the node logs it): a request's megabyte of
    cluster_id must not become a megabyte of log line."""
    if len(value) <= limit:
        return repr(value)
    return f"{value[:limit]!r}... ({len(value)} characters)"


def field_problem(message: Message) -> str | None:
    """None if every field of the request is in range, else what is wrong with the first one that
    is not. Honest requests always pass (the simulation checks every one it delivers)."""
    checks = [
        _int("src", message.src, 0, INT32_MAX),
        _int("dst", message.dst, 0, INT32_MAX),
        _int("epoch", message.epoch, 0, MAX_EPOCH),
    ]
    if isinstance(message, VoteRequest):
        # A candidate's log ends in an epoch before the one it stands in.
        checks += [
            _int("epoch", message.epoch, 1, MAX_EPOCH),
            _int("last_epoch", message.last_epoch, 0, message.epoch - 1),
            _int("last_offset", message.last_offset, 0, INT64_MAX),
        ]
    elif isinstance(message, BeginQuorumEpochRequest):
        checks.append(_int("epoch", message.epoch, 1, MAX_EPOCH))
    elif isinstance(message, EndQuorumEpochRequest):
        checks.append(_int("epoch", message.epoch, 1, MAX_EPOCH))
        checks += [
            _int("preferred_successors", v, 0, INT32_MAX) for v in message.preferred_successors
        ]
        if len(set(message.preferred_successors)) != len(message.preferred_successors):
            checks.append("preferred_successors names a voter twice")
        if message.src in message.preferred_successors:
            checks.append("preferred_successors names the resigning leader itself")
    elif isinstance(message, FetchRequest):
        # A fetcher's log never holds an epoch newer than its own.
        checks += [
            _int("fetch_offset", message.fetch_offset, 0, INT64_MAX),
            _int("last_fetched_epoch", message.last_fetched_epoch, 0, message.epoch),
            _int("request_id", message.request_id, 0, INT64_MAX),
            _int("max_entries", message.max_entries, 0, INT32_MAX),
            _int("max_wait_ms", message.max_wait_ms, 0, INT32_MAX),
        ]
        if message.known_high_watermark is not None:
            checks.append(_int("known_high_watermark", message.known_high_watermark, 0, INT64_MAX))
    elif isinstance(message, FetchSnapshotRequest):
        checks += [
            _int("request_id", message.request_id, 0, INT64_MAX),
            _int("snapshot_id.offset", message.snapshot_id.offset, 0, INT64_MAX),
            _int("snapshot_id.epoch", message.snapshot_id.epoch, 0, message.epoch),
            _int("position", message.position, 0, INT64_MAX),
            _int("max_bytes", message.max_bytes, 0, INT32_MAX),
        ]
    else:
        return f"{type(message).__name__} is not a request"
    return next((c for c in checks if c is not None), None)


def _int(name: str, value: int, low: int, high: int) -> str | None:
    if isinstance(value, bool) or not isinstance(value, int):
        return f"{name} must be an integer, not {type(value).__name__}"
    if low <= value <= high:
        return None
    return f"{name} is {value}, outside {low}..{high}"
