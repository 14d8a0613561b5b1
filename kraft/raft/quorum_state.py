"""The `quorum-state` file: Raft's election state (epoch, vote, leader) in Kafka's QuorumStateData
JSON shape, replaced crash-safely on every write; an unreadable file stops the node with help."""

from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path

from kraft.fs import atomic_write
from kraft.raft.log import ElectionState
from kraft.raft.validation import INT32_MAX, INT64_MAX, MAX_EPOCH

QUORUM_STATE_FILE = "quorum-state"
DATA_VERSION_KEY = "data_version"
# Kafka's QuorumStateData: version 0 has clusterId, version 1 dropped it; we write version 0.
DATA_VERSION = 0
READABLE_VERSIONS = (0, 1)
NO_ID = -1  # Kafka's UNKNOWN_LEADER_ID and NOT_VOTED
_REQUIRED = ("leaderId", "leaderEpoch", "votedId", "appliedOffset", "currentVoters")
_FORMAT_HINT = "kraft format --config <server.properties>"


class QuorumStateError(Exception):
    """`quorum-state` exists but cannot be trusted; the node must stop rather than forget a vote."""


def _unreadable(path: Path, why: str) -> QuorumStateError:
    return QuorumStateError(
        f"quorum-state at {path} is unreadable ({why}); restore it from a backup or re-format "
        f"this node with: {_FORMAT_HINT} (a re-formatted voter must rejoin with an empty log)"
    )


def encode_quorum_state(state: ElectionState, voters: Iterable[int]) -> str:
    doc = {
        "clusterId": "",
        "leaderId": NO_ID if state.leader_id is None else state.leader_id,
        "leaderEpoch": state.epoch,
        "votedId": NO_ID if state.voted_for is None else state.voted_for,
        "appliedOffset": 0,
        "currentVoters": [{"voterId": v} for v in sorted(voters)],
        DATA_VERSION_KEY: DATA_VERSION,
    }
    # One line, as Kafka's FileBasedStateStore reads only the first line.
    return json.dumps(doc, separators=(",", ":")) + "\n"


def decode_quorum_state(text: str, path: Path) -> tuple[ElectionState, tuple[int, ...]]:
    """(election state, voter ids); raises QuorumStateError saying what is wrong with `path`."""
    try:
        doc = json.loads(text)
    except ValueError as e:
        raise _unreadable(path, f"not valid JSON: {e}") from None
    if not isinstance(doc, dict):
        raise _unreadable(path, f"expected a JSON object, found {type(doc).__name__}")
    version = doc.get(DATA_VERSION_KEY)
    if version not in READABLE_VERSIONS:
        raise _unreadable(
            path,
            f"{DATA_VERSION_KEY} is {version!r}, this version reads "
            f"{', '.join(map(str, READABLE_VERSIONS))}",
        )
    missing = [k for k in _REQUIRED if k not in doc]
    if missing:
        raise _unreadable(path, f"missing {', '.join(missing)}")
    bad = [
        k
        for k in ("leaderId", "leaderEpoch", "votedId", "appliedOffset")
        if not isinstance(doc[k], int) or isinstance(doc[k], bool)
    ]
    if bad:
        raise _unreadable(path, f"{', '.join(bad)} must be integers")
    if doc["leaderEpoch"] < 0:
        raise _unreadable(path, f"leaderEpoch is {doc['leaderEpoch']}, below 0")
    if doc["leaderEpoch"] >= MAX_EPOCH:
        # Epochs are int32 and no node ever holds the last one: a larger value is damage (or an
        # older version's answer to a forged request) and the node could never elect again.
        raise _unreadable(
            path,
            f"leaderEpoch is {doc['leaderEpoch']}, above the largest epoch "
            f"a node can hold ({MAX_EPOCH - 1})",
        )
    for key in ("leaderId", "votedId"):
        if not NO_ID <= doc[key] <= INT32_MAX:
            raise _unreadable(path, f"{key} is {doc[key]}, outside {NO_ID}..{INT32_MAX}")
    if not -1 <= doc["appliedOffset"] <= INT64_MAX:
        raise _unreadable(path, f"appliedOffset is {doc['appliedOffset']}, outside -1..{INT64_MAX}")
    voters = doc["currentVoters"]
    if voters is None:  # nullable in Kafka's schema
        voters = []
    if not isinstance(voters, list) or not all(
        isinstance(v, dict) and type(v.get("voterId")) is int for v in voters
    ):
        raise _unreadable(path, 'currentVoters must be a list of {"voterId": <int>}')
    out_of_range = [v["voterId"] for v in voters if not 0 <= v["voterId"] <= INT32_MAX]
    if out_of_range:
        raise _unreadable(path, f"voterId {out_of_range[0]} is outside 0..{INT32_MAX}")
    leader, voted = doc["leaderId"], doc["votedId"]
    state = ElectionState(
        epoch=doc["leaderEpoch"],
        voted_for=None if voted == NO_ID else voted,
        leader_id=None if leader == NO_ID else leader,
    )
    return state, tuple(v["voterId"] for v in voters)


def write_initial(path: Path, voters: Iterable[int], *, overwrite: bool = False) -> None:
    """What `kraft format` writes: epoch 0, no vote, no leader, the configured voters. Refuses to
    replace an existing file unless told to: that file may hold a vote this node must keep."""
    path = Path(path)
    if path.exists() and not overwrite:
        raise FileExistsError(
            f"quorum-state at {path} already exists: this node is formatted; "
            f"delete the log dir first to re-format it"
        )
    path.parent.mkdir(parents=True, exist_ok=True)
    atomic_write(path, encode_quorum_state(ElectionState(), voters))


class FileElectionStore:
    """ElectionStore on the `quorum-state` file. ElectionState carries no voter set, so the voters
    read from the file (written by `kraft format`) are written back unchanged."""

    def __init__(self, path: Path) -> None:
        self.path = Path(path)
        self._voters: tuple[int, ...] | None = None

    @property
    def voters(self) -> tuple[int, ...]:
        if self._voters is None:
            self.read()
        return self._voters or ()

    def read(self) -> ElectionState | None:
        """None only when the file does not exist; raises QuorumStateError when it is damaged."""
        try:
            raw = self.path.read_bytes()
        except FileNotFoundError:
            return None
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError as e:
            raise _unreadable(self.path, f"not UTF-8 text: {e}") from None
        state, self._voters = decode_quorum_state(text, self.path)
        return state

    def write(self, state: ElectionState) -> None:
        if self._voters is None:
            self.read()
        atomic_write(self.path, encode_quorum_state(state, self._voters or ()))
