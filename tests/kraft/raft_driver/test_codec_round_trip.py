"""Every Raft message survives dataclass -> protobuf -> bytes -> protobuf -> dataclass unchanged,
optional fields both set and unset."""

import pytest

from clients.errors import ErrorCode
from clients.quorum_info import (
    QuorumInfo,
    ReplicaInfo,
    quorum_info_from_proto,
    quorum_info_to_proto,
)
from kraft.raft import codec
from kraft.raft.log import Entry, EpochEndOffset, OffsetAndEpoch
from kraft.raft.messages import (
    BeginQuorumEpochRequest,
    BeginQuorumEpochResponse,
    EndQuorumEpochRequest,
    EndQuorumEpochResponse,
    FetchRequest,
    FetchResponse,
    FetchSnapshotRequest,
    FetchSnapshotResponse,
    VoteRequest,
    VoteResponse,
)

MESSAGES = [
    VoteRequest(1, 2, 7, 6, 1234567890123, pre_vote=True),
    VoteRequest(1, 2, 7, 0, 0),
    VoteResponse(2, 1, 7, None, True, pre_vote=True),
    VoteResponse(2, 1, 8, 3, False, error=ErrorCode.FENCED_LEADER_EPOCH),
    BeginQuorumEpochRequest(1, 3, 9),
    BeginQuorumEpochResponse(3, 1, 9, 1),
    BeginQuorumEpochResponse(3, 1, 10, None, ErrorCode.INVALID_REQUEST),
    BeginQuorumEpochResponse(
        3,
        1,
        10,
        None,
        ErrorCode.INVALID_REQUEST,
        error_message="epoch 2147483647 leaves no epoch to elect in",
    ),
    EndQuorumEpochRequest(1, 2, 4, (3, 2)),
    EndQuorumEpochRequest(1, 2, 4),
    EndQuorumEpochResponse(2, 1, 4, None),
    EndQuorumEpochResponse(2, 1, 5, 3, ErrorCode.FENCED_LEADER_EPOCH),
    FetchRequest(2, 1, 3, 100, 2, 41, max_entries=8, max_wait_ms=500),
    FetchResponse(
        1,
        2,
        3,
        1,
        41,
        high_watermark=90,
        log_start_offset=10,
        records=(Entry(100, 3, b"\x00a"), Entry(101, 3, b"", control=True)),
    ),
    FetchResponse(1, 2, 3, 1, 42, diverging_epoch=EpochEndOffset(2, 77)),
    FetchResponse(1, 2, 3, 1, 42, diverging_epoch=EpochEndOffset(0, 0)),
    FetchResponse(1, 2, 3, 1, 43, snapshot_id=OffsetAndEpoch(50, 2)),
    FetchResponse(1, 2, 3, None, 44, ErrorCode.NOT_LEADER_OR_FOLLOWER),
    FetchResponse(1, 2, 3, 1, 45, ErrorCode.UNKNOWN_SERVER_ERROR),
    FetchResponse(1, 2, 3, None, 46, ErrorCode.INVALID_REQUEST, error_message="fetch_offset is -1"),
    FetchSnapshotRequest(2, 1, 3, 46, OffsetAndEpoch(50, 2), 4096, 1 << 20),
    FetchSnapshotResponse(
        1, 2, 3, 1, 46, OffsetAndEpoch(50, 2), position=4096, size=9000, chunk=b"\xff" * 10
    ),
    FetchSnapshotResponse(1, 2, 3, None, 47, OffsetAndEpoch(0, 0), ErrorCode.SNAPSHOT_NOT_FOUND),
]


@pytest.mark.parametrize("message", MESSAGES, ids=lambda m: type(m).__name__)
def test_message_round_trips(message):
    proto = codec.to_proto(message)
    wire = type(proto).FromString(proto.SerializeToString())
    back = codec.from_proto(wire)
    assert back == message
    assert type(back) is type(message)
    assert type(back.error if hasattr(back, "error") else ErrorCode.NONE) is ErrorCode


def test_every_message_type_is_covered():
    assert {type(m) for m in MESSAGES} == set(codec.PROTO_OF)


def test_unset_optional_fields_stay_unset_on_the_wire():
    proto = codec.to_proto(FetchResponse(1, 2, 3, None, 4))
    assert not proto.HasField("leader_id")
    assert not proto.HasField("diverging_epoch")
    assert not proto.HasField("snapshot_id")
    assert codec.to_proto(FetchResponse(1, 2, 3, 0, 4)).HasField("leader_id")  # 0 is a node id


@pytest.mark.parametrize(
    "info",
    [
        QuorumInfo(
            1,
            "Leader",
            1,
            5,
            40,
            42,
            (ReplicaInfo(1, 42, 1000), ReplicaInfo(2, 40, None)),
            (ReplicaInfo(9, 3, 999),),
        ),
        QuorumInfo(2, "Unattached", None, 0, 0, 0, (), ()),
    ],
)
def test_describe_quorum_round_trips(info):
    proto = quorum_info_to_proto(info)
    wire = type(proto).FromString(proto.SerializeToString())
    assert quorum_info_from_proto(wire) == info
