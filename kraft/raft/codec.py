"""The Quorum service's wire edge: every Raft message dataclass (messages.py) to its protobuf twin
in clients/wire/quorum_pb2 and back (DescribeQuorum's QuorumInfo converts in clients/quorum_info.py).
Pure; field names match on both sides except
`error` (proto `error_code`). `leader_id` None is an unset proto3 `optional`; `diverging_epoch` and
`snapshot_id` None are unset sub-messages."""

from __future__ import annotations

import dataclasses
from typing import Any

from clients.errors import ErrorCode
from clients.wire import quorum_pb2 as pb
from kraft.raft import messages as m
from kraft.raft.log import Entry, EpochEndOffset, OffsetAndEpoch

# Dataclass -> (protobuf class, gRPC method name of the RPC that carries it).
PROTO_OF: dict[type, type] = {
    m.VoteRequest: pb.VoteRequest,
    m.VoteResponse: pb.VoteResponse,
    m.BeginQuorumEpochRequest: pb.BeginQuorumEpochRequest,
    m.BeginQuorumEpochResponse: pb.BeginQuorumEpochResponse,
    m.EndQuorumEpochRequest: pb.EndQuorumEpochRequest,
    m.EndQuorumEpochResponse: pb.EndQuorumEpochResponse,
    m.FetchRequest: pb.FetchRequest,
    m.FetchResponse: pb.FetchResponse,
    m.FetchSnapshotRequest: pb.FetchSnapshotRequest,
    m.FetchSnapshotResponse: pb.FetchSnapshotResponse,
}
DATACLASS_OF: dict[type, type] = {v: k for k, v in PROTO_OF.items()}
RPC_OF: dict[type, str] = {
    m.VoteRequest: "Vote",
    m.BeginQuorumEpochRequest: "BeginQuorumEpoch",
    m.EndQuorumEpochRequest: "EndQuorumEpoch",
    m.FetchRequest: "Fetch",
    m.FetchSnapshotRequest: "FetchSnapshot",
}
RESPONSE_OF: dict[type, type] = {
    m.VoteRequest: m.VoteResponse,
    m.BeginQuorumEpochRequest: m.BeginQuorumEpochResponse,
    m.EndQuorumEpochRequest: m.EndQuorumEpochResponse,
    m.FetchRequest: m.FetchResponse,
    m.FetchSnapshotRequest: m.FetchSnapshotResponse,
}

_OPTIONAL_INTS = {"leader_id", "known_high_watermark"}
_SUB_MESSAGES = {
    "diverging_epoch": (pb.EpochEndOffset, EpochEndOffset),
    "snapshot_id": (pb.OffsetAndEpoch, OffsetAndEpoch),
}


def to_proto(message: m.Message) -> Any:
    """A Raft message dataclass as its protobuf message."""
    out = PROTO_OF[type(message)]()
    for f in dataclasses.fields(message):
        value = getattr(message, f.name)
        if f.name == "error":
            out.error_code = int(value)
        elif f.name in _OPTIONAL_INTS:
            if value is not None:
                setattr(out, f.name, value)
        elif f.name in _SUB_MESSAGES:
            if value is not None:
                getattr(out, f.name).CopyFrom(_SUB_MESSAGES[f.name][0](**value._asdict()))
        elif f.name == "records":
            out.records.extend(
                pb.Entry(offset=e.offset, epoch=e.epoch, payload=e.payload, control=e.control)
                for e in value
            )
        elif f.name == "preferred_successors":
            out.preferred_successors.extend(value)
        else:
            setattr(out, f.name, value)
    return out


def from_proto(proto: Any) -> m.Message:
    """A protobuf message of the Quorum service as its Raft message dataclass."""
    cls = DATACLASS_OF[type(proto)]
    kwargs: dict[str, Any] = {}
    for f in dataclasses.fields(cls):
        if f.name == "error":
            kwargs["error"] = ErrorCode(proto.error_code)
        elif f.name in _OPTIONAL_INTS:
            kwargs[f.name] = getattr(proto, f.name) if proto.HasField(f.name) else None
        elif f.name in _SUB_MESSAGES:
            sub = getattr(proto, f.name)
            kwargs[f.name] = (
                _SUB_MESSAGES[f.name][1](*_fields(sub)) if proto.HasField(f.name) else None
            )
        elif f.name == "records":
            kwargs["records"] = tuple(
                Entry(e.offset, e.epoch, bytes(e.payload), e.control) for e in proto.records
            )
        elif f.name == "preferred_successors":
            kwargs[f.name] = tuple(proto.preferred_successors)
        elif f.name == "chunk":
            kwargs[f.name] = bytes(proto.chunk)
        else:
            kwargs[f.name] = getattr(proto, f.name)
    return cls(**kwargs)


def _fields(sub: Any) -> tuple:
    return tuple(getattr(sub, d.name) for d in sub.DESCRIPTOR.fields)
