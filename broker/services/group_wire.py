"""The Group service's wire edge: each protobuf request of clients/wire/group_pb2 to the
dataclass the group handler takes (broker/group/messages.py, broker/handlers/group_messages.py),
and each answer back; and `message`, the hint a person can act on beside every error code."""

from __future__ import annotations

from broker.group import messages as m
from broker.handlers import group_messages as g
from clients.types import TopicPartition
from clients.wire import group_pb2 as pb


# What a client should make of each error the coordinator answers.
def _instance(req) -> str | None:
    return req.group_instance_id if req.HasField("group_instance_id") else None


# -- requests -------------------------------------------------------------------------------------
def join_request(req: pb.JoinGroupRequest) -> m.JoinGroupRequest:
    return m.JoinGroupRequest(
        req.group_id,
        req.member_id,
        req.protocol_type,
        tuple((p.name, p.metadata) for p in req.protocols),
        req.session_timeout_ms,
        req.rebalance_timeout_ms,
        _instance(req),
        req.client_id,
    )


def sync_request(req: pb.SyncGroupRequest) -> m.SyncGroupRequest:
    return m.SyncGroupRequest(
        req.group_id,
        req.generation_id,
        req.member_id,
        _instance(req),
        req.protocol_type or None,
        req.protocol_name or None,
        {a.member_id: a.assignment for a in req.assignments},
    )


def heartbeat_request(req: pb.HeartbeatRequest) -> m.HeartbeatRequest:
    return m.HeartbeatRequest(req.group_id, req.generation_id, req.member_id, _instance(req))


def leave_request(req: pb.LeaveGroupRequest) -> m.LeaveGroupRequest:
    return m.LeaveGroupRequest(
        req.group_id, tuple(m.MemberIdentity(x.member_id, _instance(x)) for x in req.members)
    )


def commit_request(req: pb.OffsetCommitRequest) -> m.OffsetCommitRequest:
    return m.OffsetCommitRequest(
        req.group_id,
        {
            TopicPartition(p.topic, p.partition): m.OffsetAndMetadata(
                p.offset, p.leader_epoch, p.metadata
            )
            for p in req.partitions
        },
        req.generation_id,
        req.member_id,
        _instance(req),
    )


def txn_commit_request(req: pb.TxnOffsetCommitRequest) -> m.TxnOffsetCommitRequest:
    return m.TxnOffsetCommitRequest(
        req.group_id,
        req.transactional_id,
        req.producer_id,
        req.producer_epoch,
        {
            TopicPartition(p.topic, p.partition): m.OffsetAndMetadata(
                p.offset, p.leader_epoch, p.metadata
            )
            for p in req.partitions
        },
        req.generation_id,
        req.member_id,
        _instance(req),
    )


def fetch_request(req: pb.OffsetFetchRequest) -> m.OffsetFetchRequest:
    return m.OffsetFetchRequest(
        req.group_id,
        None
        if req.all_partitions
        else tuple(TopicPartition(p.topic, p.partition) for p in req.partitions),
        req.require_stable,
    )


# -- responses (the group handler's, broker/handlers/group.py: messages already final) ----------
def join_response(r: m.JoinGroupResponse) -> pb.JoinGroupResponse:
    return pb.JoinGroupResponse(
        error_code=r.error,
        error_message=r.message,
        member_id=r.member_id,
        generation_id=r.generation_id,
        protocol_type=r.protocol_type or "",
        protocol_name=r.protocol_name or "",
        leader=r.leader,
        skip_assignment=r.skip_assignment,
        members=[
            pb.JoinedMember(
                member_id=x.member_id, group_instance_id=x.group_instance_id, metadata=x.metadata
            )
            for x in r.members
        ],
    )


def sync_response(r: m.SyncGroupResponse) -> pb.SyncGroupResponse:
    return pb.SyncGroupResponse(
        error_code=r.error,
        error_message=r.message,
        protocol_type=r.protocol_type or "",
        protocol_name=r.protocol_name or "",
        assignment=r.assignment,
    )


def heartbeat_response(r: m.HeartbeatResponse) -> pb.HeartbeatResponse:
    return pb.HeartbeatResponse(error_code=r.error, error_message=r.message)


def leave_response(r: m.LeaveGroupResponse) -> pb.LeaveGroupResponse:
    return pb.LeaveGroupResponse(
        error_code=r.error,
        error_message=r.message,
        members=[
            pb.LeftMember(
                member_id=ident.member_id,
                group_instance_id=ident.group_instance_id,
                error_code=code,
            )
            for ident, code in r.members
        ],
    )


def commit_response(r: g.OffsetCommitResponse) -> pb.OffsetCommitResponse:
    return pb.OffsetCommitResponse(
        error_code=r.error_code,
        error_message=r.error_message,
        partitions=[
            pb.PartitionError(
                topic=p.topic,
                partition=p.partition,
                error_code=p.error_code,
                error_message=p.error_message,
            )
            for p in r.partitions
        ],
    )


def fetch_response(r: g.OffsetFetchResponse) -> pb.OffsetFetchResponse:
    return pb.OffsetFetchResponse(
        error_code=r.error_code,
        error_message=r.error_message,
        partitions=[
            pb.FetchedPartition(
                topic=p.topic,
                partition=p.partition,
                offset=p.offset,
                leader_epoch=p.leader_epoch,
                metadata=p.metadata,
                error_code=p.error_code,
            )
            for p in r.partitions
        ],
    )


def described_group(r: g.DescribedGroup) -> pb.DescribedGroup:
    """`r.end_offsets`: log end offsets this broker knows (the partitions it leads); the client
    asks the other partitions' leaders itself."""
    d = r.group
    if d is None:
        return pb.DescribedGroup(
            group_id=r.group_id,
            error_code=r.error_code,
            error_message=r.error_message,
            state=r.state,
        )
    out = pb.DescribedGroup(
        error_code=r.error_code,
        error_message=r.error_message,
        group_id=d.group_id,
        state=d.state,
        protocol_type=d.protocol_type,
        protocol=d.protocol,
        generation_id=d.generation_id,
        leader=d.leader,
        coordinator=r.coordinator,
    )
    for x in d.members:
        out.members.add(
            member_id=x.member_id,
            group_instance_id=x.group_instance_id,
            client_id=x.client_id,
            client_host=x.client_host,
            metadata=x.metadata,
            assignment=x.assignment,
            assigned_partitions=[
                pb.TopicPartitionRef(topic=tp[0], partition=tp[1])
                for tp in x.assigned_partitions or ()
            ],
        )
    for o in d.offsets:
        end = r.end_offsets.get(o.partition, -1)
        out.offsets.add(
            topic=o.partition[0],
            partition=o.partition[1],
            offset=o.offset,
            leader_epoch=o.leader_epoch,
            metadata=o.metadata,
            log_end_offset=end,
            lag=-1 if o.lag is None else o.lag,
        )
    return out
