from google.protobuf.internal import containers as _containers
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class Entry(_message.Message):
    __slots__ = ("offset", "epoch", "payload", "control")
    OFFSET_FIELD_NUMBER: _ClassVar[int]
    EPOCH_FIELD_NUMBER: _ClassVar[int]
    PAYLOAD_FIELD_NUMBER: _ClassVar[int]
    CONTROL_FIELD_NUMBER: _ClassVar[int]
    offset: int
    epoch: int
    payload: bytes
    control: bool
    def __init__(self, offset: _Optional[int] = ..., epoch: _Optional[int] = ..., payload: _Optional[bytes] = ..., control: _Optional[bool] = ...) -> None: ...

class OffsetAndEpoch(_message.Message):
    __slots__ = ("offset", "epoch")
    OFFSET_FIELD_NUMBER: _ClassVar[int]
    EPOCH_FIELD_NUMBER: _ClassVar[int]
    offset: int
    epoch: int
    def __init__(self, offset: _Optional[int] = ..., epoch: _Optional[int] = ...) -> None: ...

class EpochEndOffset(_message.Message):
    __slots__ = ("epoch", "end_offset")
    EPOCH_FIELD_NUMBER: _ClassVar[int]
    END_OFFSET_FIELD_NUMBER: _ClassVar[int]
    epoch: int
    end_offset: int
    def __init__(self, epoch: _Optional[int] = ..., end_offset: _Optional[int] = ...) -> None: ...

class VoteRequest(_message.Message):
    __slots__ = ("src", "dst", "epoch", "last_epoch", "last_offset", "pre_vote", "cluster_id")
    SRC_FIELD_NUMBER: _ClassVar[int]
    DST_FIELD_NUMBER: _ClassVar[int]
    EPOCH_FIELD_NUMBER: _ClassVar[int]
    LAST_EPOCH_FIELD_NUMBER: _ClassVar[int]
    LAST_OFFSET_FIELD_NUMBER: _ClassVar[int]
    PRE_VOTE_FIELD_NUMBER: _ClassVar[int]
    CLUSTER_ID_FIELD_NUMBER: _ClassVar[int]
    src: int
    dst: int
    epoch: int
    last_epoch: int
    last_offset: int
    pre_vote: bool
    cluster_id: str
    def __init__(self, src: _Optional[int] = ..., dst: _Optional[int] = ..., epoch: _Optional[int] = ..., last_epoch: _Optional[int] = ..., last_offset: _Optional[int] = ..., pre_vote: _Optional[bool] = ..., cluster_id: _Optional[str] = ...) -> None: ...

class VoteResponse(_message.Message):
    __slots__ = ("src", "dst", "epoch", "leader_id", "vote_granted", "pre_vote", "error_code", "error_message")
    SRC_FIELD_NUMBER: _ClassVar[int]
    DST_FIELD_NUMBER: _ClassVar[int]
    EPOCH_FIELD_NUMBER: _ClassVar[int]
    LEADER_ID_FIELD_NUMBER: _ClassVar[int]
    VOTE_GRANTED_FIELD_NUMBER: _ClassVar[int]
    PRE_VOTE_FIELD_NUMBER: _ClassVar[int]
    ERROR_CODE_FIELD_NUMBER: _ClassVar[int]
    ERROR_MESSAGE_FIELD_NUMBER: _ClassVar[int]
    src: int
    dst: int
    epoch: int
    leader_id: int
    vote_granted: bool
    pre_vote: bool
    error_code: int
    error_message: str
    def __init__(self, src: _Optional[int] = ..., dst: _Optional[int] = ..., epoch: _Optional[int] = ..., leader_id: _Optional[int] = ..., vote_granted: _Optional[bool] = ..., pre_vote: _Optional[bool] = ..., error_code: _Optional[int] = ..., error_message: _Optional[str] = ...) -> None: ...

class BeginQuorumEpochRequest(_message.Message):
    __slots__ = ("src", "dst", "epoch", "cluster_id")
    SRC_FIELD_NUMBER: _ClassVar[int]
    DST_FIELD_NUMBER: _ClassVar[int]
    EPOCH_FIELD_NUMBER: _ClassVar[int]
    CLUSTER_ID_FIELD_NUMBER: _ClassVar[int]
    src: int
    dst: int
    epoch: int
    cluster_id: str
    def __init__(self, src: _Optional[int] = ..., dst: _Optional[int] = ..., epoch: _Optional[int] = ..., cluster_id: _Optional[str] = ...) -> None: ...

class BeginQuorumEpochResponse(_message.Message):
    __slots__ = ("src", "dst", "epoch", "leader_id", "error_code", "error_message")
    SRC_FIELD_NUMBER: _ClassVar[int]
    DST_FIELD_NUMBER: _ClassVar[int]
    EPOCH_FIELD_NUMBER: _ClassVar[int]
    LEADER_ID_FIELD_NUMBER: _ClassVar[int]
    ERROR_CODE_FIELD_NUMBER: _ClassVar[int]
    ERROR_MESSAGE_FIELD_NUMBER: _ClassVar[int]
    src: int
    dst: int
    epoch: int
    leader_id: int
    error_code: int
    error_message: str
    def __init__(self, src: _Optional[int] = ..., dst: _Optional[int] = ..., epoch: _Optional[int] = ..., leader_id: _Optional[int] = ..., error_code: _Optional[int] = ..., error_message: _Optional[str] = ...) -> None: ...

class EndQuorumEpochRequest(_message.Message):
    __slots__ = ("src", "dst", "epoch", "preferred_successors", "cluster_id")
    SRC_FIELD_NUMBER: _ClassVar[int]
    DST_FIELD_NUMBER: _ClassVar[int]
    EPOCH_FIELD_NUMBER: _ClassVar[int]
    PREFERRED_SUCCESSORS_FIELD_NUMBER: _ClassVar[int]
    CLUSTER_ID_FIELD_NUMBER: _ClassVar[int]
    src: int
    dst: int
    epoch: int
    preferred_successors: _containers.RepeatedScalarFieldContainer[int]
    cluster_id: str
    def __init__(self, src: _Optional[int] = ..., dst: _Optional[int] = ..., epoch: _Optional[int] = ..., preferred_successors: _Optional[_Iterable[int]] = ..., cluster_id: _Optional[str] = ...) -> None: ...

class EndQuorumEpochResponse(_message.Message):
    __slots__ = ("src", "dst", "epoch", "leader_id", "error_code", "error_message")
    SRC_FIELD_NUMBER: _ClassVar[int]
    DST_FIELD_NUMBER: _ClassVar[int]
    EPOCH_FIELD_NUMBER: _ClassVar[int]
    LEADER_ID_FIELD_NUMBER: _ClassVar[int]
    ERROR_CODE_FIELD_NUMBER: _ClassVar[int]
    ERROR_MESSAGE_FIELD_NUMBER: _ClassVar[int]
    src: int
    dst: int
    epoch: int
    leader_id: int
    error_code: int
    error_message: str
    def __init__(self, src: _Optional[int] = ..., dst: _Optional[int] = ..., epoch: _Optional[int] = ..., leader_id: _Optional[int] = ..., error_code: _Optional[int] = ..., error_message: _Optional[str] = ...) -> None: ...

class FetchRequest(_message.Message):
    __slots__ = ("src", "dst", "epoch", "fetch_offset", "last_fetched_epoch", "request_id", "max_entries", "max_wait_ms", "known_high_watermark", "cluster_id")
    SRC_FIELD_NUMBER: _ClassVar[int]
    DST_FIELD_NUMBER: _ClassVar[int]
    EPOCH_FIELD_NUMBER: _ClassVar[int]
    FETCH_OFFSET_FIELD_NUMBER: _ClassVar[int]
    LAST_FETCHED_EPOCH_FIELD_NUMBER: _ClassVar[int]
    REQUEST_ID_FIELD_NUMBER: _ClassVar[int]
    MAX_ENTRIES_FIELD_NUMBER: _ClassVar[int]
    MAX_WAIT_MS_FIELD_NUMBER: _ClassVar[int]
    KNOWN_HIGH_WATERMARK_FIELD_NUMBER: _ClassVar[int]
    CLUSTER_ID_FIELD_NUMBER: _ClassVar[int]
    src: int
    dst: int
    epoch: int
    fetch_offset: int
    last_fetched_epoch: int
    request_id: int
    max_entries: int
    max_wait_ms: int
    known_high_watermark: int
    cluster_id: str
    def __init__(self, src: _Optional[int] = ..., dst: _Optional[int] = ..., epoch: _Optional[int] = ..., fetch_offset: _Optional[int] = ..., last_fetched_epoch: _Optional[int] = ..., request_id: _Optional[int] = ..., max_entries: _Optional[int] = ..., max_wait_ms: _Optional[int] = ..., known_high_watermark: _Optional[int] = ..., cluster_id: _Optional[str] = ...) -> None: ...

class FetchResponse(_message.Message):
    __slots__ = ("src", "dst", "epoch", "leader_id", "request_id", "error_code", "high_watermark", "log_start_offset", "records", "diverging_epoch", "snapshot_id", "error_message")
    SRC_FIELD_NUMBER: _ClassVar[int]
    DST_FIELD_NUMBER: _ClassVar[int]
    EPOCH_FIELD_NUMBER: _ClassVar[int]
    LEADER_ID_FIELD_NUMBER: _ClassVar[int]
    REQUEST_ID_FIELD_NUMBER: _ClassVar[int]
    ERROR_CODE_FIELD_NUMBER: _ClassVar[int]
    HIGH_WATERMARK_FIELD_NUMBER: _ClassVar[int]
    LOG_START_OFFSET_FIELD_NUMBER: _ClassVar[int]
    RECORDS_FIELD_NUMBER: _ClassVar[int]
    DIVERGING_EPOCH_FIELD_NUMBER: _ClassVar[int]
    SNAPSHOT_ID_FIELD_NUMBER: _ClassVar[int]
    ERROR_MESSAGE_FIELD_NUMBER: _ClassVar[int]
    src: int
    dst: int
    epoch: int
    leader_id: int
    request_id: int
    error_code: int
    high_watermark: int
    log_start_offset: int
    records: _containers.RepeatedCompositeFieldContainer[Entry]
    diverging_epoch: EpochEndOffset
    snapshot_id: OffsetAndEpoch
    error_message: str
    def __init__(self, src: _Optional[int] = ..., dst: _Optional[int] = ..., epoch: _Optional[int] = ..., leader_id: _Optional[int] = ..., request_id: _Optional[int] = ..., error_code: _Optional[int] = ..., high_watermark: _Optional[int] = ..., log_start_offset: _Optional[int] = ..., records: _Optional[_Iterable[_Union[Entry, _Mapping]]] = ..., diverging_epoch: _Optional[_Union[EpochEndOffset, _Mapping]] = ..., snapshot_id: _Optional[_Union[OffsetAndEpoch, _Mapping]] = ..., error_message: _Optional[str] = ...) -> None: ...

class FetchSnapshotRequest(_message.Message):
    __slots__ = ("src", "dst", "epoch", "request_id", "snapshot_id", "position", "max_bytes", "cluster_id")
    SRC_FIELD_NUMBER: _ClassVar[int]
    DST_FIELD_NUMBER: _ClassVar[int]
    EPOCH_FIELD_NUMBER: _ClassVar[int]
    REQUEST_ID_FIELD_NUMBER: _ClassVar[int]
    SNAPSHOT_ID_FIELD_NUMBER: _ClassVar[int]
    POSITION_FIELD_NUMBER: _ClassVar[int]
    MAX_BYTES_FIELD_NUMBER: _ClassVar[int]
    CLUSTER_ID_FIELD_NUMBER: _ClassVar[int]
    src: int
    dst: int
    epoch: int
    request_id: int
    snapshot_id: OffsetAndEpoch
    position: int
    max_bytes: int
    cluster_id: str
    def __init__(self, src: _Optional[int] = ..., dst: _Optional[int] = ..., epoch: _Optional[int] = ..., request_id: _Optional[int] = ..., snapshot_id: _Optional[_Union[OffsetAndEpoch, _Mapping]] = ..., position: _Optional[int] = ..., max_bytes: _Optional[int] = ..., cluster_id: _Optional[str] = ...) -> None: ...

class FetchSnapshotResponse(_message.Message):
    __slots__ = ("src", "dst", "epoch", "leader_id", "request_id", "snapshot_id", "error_code", "position", "size", "chunk", "error_message")
    SRC_FIELD_NUMBER: _ClassVar[int]
    DST_FIELD_NUMBER: _ClassVar[int]
    EPOCH_FIELD_NUMBER: _ClassVar[int]
    LEADER_ID_FIELD_NUMBER: _ClassVar[int]
    REQUEST_ID_FIELD_NUMBER: _ClassVar[int]
    SNAPSHOT_ID_FIELD_NUMBER: _ClassVar[int]
    ERROR_CODE_FIELD_NUMBER: _ClassVar[int]
    POSITION_FIELD_NUMBER: _ClassVar[int]
    SIZE_FIELD_NUMBER: _ClassVar[int]
    CHUNK_FIELD_NUMBER: _ClassVar[int]
    ERROR_MESSAGE_FIELD_NUMBER: _ClassVar[int]
    src: int
    dst: int
    epoch: int
    leader_id: int
    request_id: int
    snapshot_id: OffsetAndEpoch
    error_code: int
    position: int
    size: int
    chunk: bytes
    error_message: str
    def __init__(self, src: _Optional[int] = ..., dst: _Optional[int] = ..., epoch: _Optional[int] = ..., leader_id: _Optional[int] = ..., request_id: _Optional[int] = ..., snapshot_id: _Optional[_Union[OffsetAndEpoch, _Mapping]] = ..., error_code: _Optional[int] = ..., position: _Optional[int] = ..., size: _Optional[int] = ..., chunk: _Optional[bytes] = ..., error_message: _Optional[str] = ...) -> None: ...

class DescribeQuorumRequest(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class ReplicaInfo(_message.Message):
    __slots__ = ("replica_id", "log_end_offset", "last_fetch_ms")
    REPLICA_ID_FIELD_NUMBER: _ClassVar[int]
    LOG_END_OFFSET_FIELD_NUMBER: _ClassVar[int]
    LAST_FETCH_MS_FIELD_NUMBER: _ClassVar[int]
    replica_id: int
    log_end_offset: int
    last_fetch_ms: int
    def __init__(self, replica_id: _Optional[int] = ..., log_end_offset: _Optional[int] = ..., last_fetch_ms: _Optional[int] = ...) -> None: ...

class DescribeQuorumResponse(_message.Message):
    __slots__ = ("error_code", "node_id", "role", "leader_id", "leader_epoch", "high_watermark", "log_end_offset", "voters", "observers", "error_message")
    ERROR_CODE_FIELD_NUMBER: _ClassVar[int]
    NODE_ID_FIELD_NUMBER: _ClassVar[int]
    ROLE_FIELD_NUMBER: _ClassVar[int]
    LEADER_ID_FIELD_NUMBER: _ClassVar[int]
    LEADER_EPOCH_FIELD_NUMBER: _ClassVar[int]
    HIGH_WATERMARK_FIELD_NUMBER: _ClassVar[int]
    LOG_END_OFFSET_FIELD_NUMBER: _ClassVar[int]
    VOTERS_FIELD_NUMBER: _ClassVar[int]
    OBSERVERS_FIELD_NUMBER: _ClassVar[int]
    ERROR_MESSAGE_FIELD_NUMBER: _ClassVar[int]
    error_code: int
    node_id: int
    role: str
    leader_id: int
    leader_epoch: int
    high_watermark: int
    log_end_offset: int
    voters: _containers.RepeatedCompositeFieldContainer[ReplicaInfo]
    observers: _containers.RepeatedCompositeFieldContainer[ReplicaInfo]
    error_message: str
    def __init__(self, error_code: _Optional[int] = ..., node_id: _Optional[int] = ..., role: _Optional[str] = ..., leader_id: _Optional[int] = ..., leader_epoch: _Optional[int] = ..., high_watermark: _Optional[int] = ..., log_end_offset: _Optional[int] = ..., voters: _Optional[_Iterable[_Union[ReplicaInfo, _Mapping]]] = ..., observers: _Optional[_Iterable[_Union[ReplicaInfo, _Mapping]]] = ..., error_message: _Optional[str] = ...) -> None: ...
