"""The Controller service's wire edge: each request and response dataclass of
kraft/controller/messages.py to its protobuf twin in clients/wire/controller_pb2 and back."""

from __future__ import annotations

import dataclasses
from typing import Any

from google.protobuf.message import Message

from clients.errors import ErrorCode
from clients.wire import controller_pb2 as pb
from kraft.controller import messages as m
from kraft.security import acl

# RPC name -> (request dataclass, response dataclass).
_RPCS: dict[str, tuple[type, type]] = {
    "CreateTopics": (m.CreateTopicsRequest, m.CreateTopicsResponse),
    "DeleteTopics": (m.DeleteTopicsRequest, m.DeleteTopicsResponse),
    "CreatePartitions": (m.CreatePartitionsRequest, m.CreatePartitionsResponse),
    "DescribeConfigs": (m.DescribeConfigsRequest, m.DescribeConfigsResponse),
    "AlterConfigs": (m.IncrementalAlterConfigsRequest, m.IncrementalAlterConfigsResponse),
    "RegisterBroker": (m.RegisterBrokerRequest, m.RegisterBrokerResponse),
    "BrokerHeartbeat": (m.BrokerHeartbeatRequest, m.BrokerHeartbeatResponse),
    "AlterPartition": (m.AlterPartitionRequest, m.AlterPartitionResponse),
    "AllocateProducerIds": (m.AllocateProducerIdsRequest, m.AllocateProducerIdsResponse),
    "ElectLeaders": (m.ElectLeadersRequest, m.ElectLeadersResponse),
    "CreateAcls": (m.CreateAclsRequest, m.CreateAclsResponse),
    "DeleteAcls": (m.DeleteAclsRequest, m.DeleteAclsResponse),
    "DescribeAcls": (m.DescribeAclsRequest, m.DescribeAclsResponse),
    "AlterUserScramCredentials": (
        m.AlterUserScramCredentialsRequest,
        m.AlterUserScramCredentialsResponse,
    ),
    "DescribeUserScramCredentials": (
        m.DescribeUserScramCredentialsRequest,
        m.DescribeUserScramCredentialsResponse,
    ),
}
RPC_OF: dict[type, str] = {req: rpc for rpc, (req, _) in _RPCS.items()}
RESPONSE_OF: dict[type, type] = dict(_RPCS.values())

# Dataclass -> protobuf class, for the top-level messages and everything nested in them.
PROTO_OF: dict[type, type] = {
    m.CreatableTopic: pb.CreatableTopic,
    m.CreateTopicsRequest: pb.CreateTopicsRequest,
    m.CreateTopicResult: pb.CreateTopicsResult,
    m.CreateTopicsResponse: pb.CreateTopicsResponse,
    m.DeleteTopicsRequest: pb.DeleteTopicsRequest,
    m.DeleteTopicResult: pb.DeleteTopicsResult,
    m.DeleteTopicsResponse: pb.DeleteTopicsResponse,
    m.CreatePartitionsTopic: pb.CreatePartitionsTopic,
    m.CreatePartitionsRequest: pb.CreatePartitionsRequest,
    m.CreatePartitionsResult: pb.CreatePartitionsResult,
    m.CreatePartitionsResponse: pb.CreatePartitionsResponse,
    m.ConfigResource: pb.ConfigResource,
    m.DescribeConfigsRequest: pb.DescribeConfigsRequest,
    m.ConfigEntry: pb.ConfigEntry,
    m.DescribeConfigsResult: pb.DescribeConfigsResult,
    m.DescribeConfigsResponse: pb.DescribeConfigsResponse,
    m.AlterConfigOp: pb.AlterableConfig,
    m.AlterConfigsResource: pb.AlterConfigsResource,
    m.IncrementalAlterConfigsRequest: pb.AlterConfigsRequest,
    m.AlterConfigsResult: pb.AlterConfigsResult,
    m.IncrementalAlterConfigsResponse: pb.AlterConfigsResponse,
    m.RegisterBrokerRequest: pb.RegisterBrokerRequest,
    m.RegisterBrokerResponse: pb.RegisterBrokerResponse,
    m.BrokerHeartbeatRequest: pb.BrokerHeartbeatRequest,
    m.BrokerHeartbeatResponse: pb.BrokerHeartbeatResponse,
    m.PartitionIsrChange: pb.PartitionIsrChange,
    m.AlterPartitionRequest: pb.AlterPartitionRequest,
    m.AlterPartitionResult: pb.AlterPartitionResult,
    m.AlterPartitionResponse: pb.AlterPartitionResponse,
    m.AllocateProducerIdsRequest: pb.AllocateProducerIdsRequest,
    m.AllocateProducerIdsResponse: pb.AllocateProducerIdsResponse,
    m.ElectLeadersRequest: pb.ElectLeadersRequest,
    m.ElectLeadersResult: pb.ElectLeadersResult,
    m.ElectLeadersResponse: pb.ElectLeadersResponse,
    acl.AclBinding: pb.AclBinding,
    acl.AclBindingFilter: pb.AclBindingFilter,
    m.CreateAclsRequest: pb.CreateAclsRequest,
    m.AclCreationResult: pb.AclCreationResult,
    m.CreateAclsResponse: pb.CreateAclsResponse,
    m.DeleteAclsRequest: pb.DeleteAclsRequest,
    m.DeleteAclsFilterResult: pb.DeleteAclsFilterResult,
    m.DeleteAclsResponse: pb.DeleteAclsResponse,
    m.DescribeAclsRequest: pb.DescribeAclsRequest,
    m.DescribeAclsResponse: pb.DescribeAclsResponse,
    m.ScramCredentialUpsertion: pb.ScramCredentialUpsertion,
    m.ScramCredentialDeletion: pb.ScramCredentialDeletion,
    m.AlterUserScramCredentialsRequest: pb.AlterUserScramCredentialsRequest,
    m.AlterUserScramCredentialsResult: pb.AlterUserScramCredentialsResult,
    m.AlterUserScramCredentialsResponse: pb.AlterUserScramCredentialsResponse,
    m.DescribeUserScramCredentialsRequest: pb.DescribeUserScramCredentialsRequest,
    m.ScramCredentialInfo: pb.ScramCredentialInfo,
    m.DescribeUserScramCredentialsResult: pb.DescribeUserScramCredentialsResult,
    m.DescribeUserScramCredentialsResponse: pb.DescribeUserScramCredentialsResponse,
}
DATACLASS_OF: dict[type, type] = {v: k for k, v in PROTO_OF.items()}

# Field names match on both sides except these; repeated fields become tuples, maps dicts.
# (dataclass, field) -> proto field.
_RENAMED: dict[tuple[type, str], str] = {
    (m.ConfigResource, "keys"): "config_names",
    (m.AlterConfigsResource, "ops"): "configs",
    (m.CreatePartitionsResponse, "topics"): "results",
    (m.ElectLeadersRequest, "partitions"): "topic_partitions",
}

_RESOURCE_TYPES = {"topic": pb.TOPIC, "broker": pb.BROKER}
_RESOURCE_NAMES = {v: k for k, v in _RESOURCE_TYPES.items()}
_UNKNOWN_RESOURCE = "unknown"  # the controller refuses it with a per-resource error


def _resource_to_pb(name: str) -> int:
    return _RESOURCE_TYPES.get(name, pb.RESOURCE_UNKNOWN)


def _resource_from_pb(value: int) -> str:
    return _RESOURCE_NAMES.get(value, _UNKNOWN_RESOURCE)


def _enum_from_pb(enum_type: type) -> Any:
    def convert(value: int) -> Any:
        try:
            return enum_type(value)
        except ValueError:
            names = ", ".join(f"{e.value} ({e.name})" for e in enum_type)
            raise ValueError(f"{enum_type.__name__} {value} is unknown; use {names}") from None

    return convert


def _partitions_to_pb(partitions: tuple[tuple[str, int], ...] | None) -> list:
    if partitions is None:
        return []
    if not partitions:
        # On the wire no partitions means all of them: refuse rather than widen the request.
        raise ValueError(
            "ElectLeadersRequest.partitions is empty, which the wire would read as "
            "every partition; pass None to mean every partition"
        )
    return _runs(partitions, pb.TopicPartitions, "topic")


def _runs(pairs, message: type, key: str) -> list:
    """One `message` per run of the same topic (name or id, in field `key`), so the order of
    the (topic, partition) pairs survives the round trip."""
    runs: list = []
    for topic, partition in pairs:
        if not runs or getattr(runs[-1], key) != topic:
            runs.append(message(**{key: topic}))
        runs[-1].partitions.append(partition)
    return runs


def _partitions_from_pb(runs) -> tuple[tuple[str, int], ...] | None:
    return tuple((run.topic, p) for run in runs for p in run.partitions) or None


# Fields whose representation differs: (dataclass, field) -> (dataclass value -> proto value,
# proto value -> dataclass value). Enums from the wire raise ValueError when unknown, so a
# servicer can answer INVALID_REQUEST instead of passing on a value no command expects.
_SPECIAL: dict[tuple[type, str], tuple[Any, Any]] = {
    (m.ConfigResource, "keys"): (lambda keys: list(keys or ()), lambda v: tuple(v) or None),
    (m.AlterConfigOp, "op"): (int, _enum_from_pb(m.AlterConfigOpType)),
    (m.ElectLeadersRequest, "election_type"): (int, _enum_from_pb(m.ElectionType)),
    (m.ElectLeadersRequest, "partitions"): (_partitions_to_pb, _partitions_from_pb),
    (m.RegisterBrokerRequest, "rack"): (lambda rack: rack or "", lambda v: v or None),
    (m.BrokerHeartbeatRequest, "offline_replicas"): (
        lambda pairs: _runs(pairs, pb.TopicIdPartitions, "topic_id"),
        lambda runs: tuple((r.topic_id, p) for r in runs for p in r.partitions),
    ),
}
for _cls in (acl.AclBinding, acl.AclBindingFilter):
    for _field, _enum in (
        ("resource_type", acl.ResourceType),
        ("pattern_type", acl.PatternType),
        ("operation", acl.Operation),
        ("permission_type", acl.Permission),
    ):
        _SPECIAL[(_cls, _field)] = (int, _enum_from_pb(_enum))
for _cls in (
    m.ConfigResource,
    m.DescribeConfigsResult,
    m.AlterConfigsResource,
    m.AlterConfigsResult,
):
    _SPECIAL[(_cls, "resource_type")] = (_resource_to_pb, _resource_from_pb)


def to_proto(message: Any) -> Message:
    """A Controller request or response dataclass (or one nested in them) as protobuf."""
    cls = type(message)
    out = PROTO_OF[cls]()
    fields_pb = out.DESCRIPTOR.fields_by_name
    for f in dataclasses.fields(message):
        name = _RENAMED.get((cls, f.name), f.name)
        value = getattr(message, f.name)
        special = _SPECIAL.get((cls, f.name))
        if special is not None:
            value = special[0](value)
        if value is None:  # a proto3 `optional` left unset
            continue
        fd = fields_pb[name]
        if _is_map(fd):
            getattr(out, name).update(value)
        elif fd.is_repeated:
            getattr(out, name).extend(
                to_proto(v) if dataclasses.is_dataclass(v) else v for v in value
            )
        else:
            setattr(out, name, value)
    return out


def from_proto(proto: Message) -> Any:
    """A protobuf message of the Controller service as its dataclass."""
    cls = DATACLASS_OF[type(proto)]
    fields_pb = proto.DESCRIPTOR.fields_by_name
    kwargs: dict[str, Any] = {}
    for f in dataclasses.fields(cls):
        name = _RENAMED.get((cls, f.name), f.name)
        fd = fields_pb[name]
        raw = getattr(proto, name)
        special = _SPECIAL.get((cls, f.name))
        if special is not None:
            kwargs[f.name] = special[1](raw)
        elif _is_map(fd):
            kwargs[f.name] = dict(raw)
        elif fd.is_repeated:
            kwargs[f.name] = tuple(from_proto(v) if isinstance(v, Message) else v for v in raw)
        elif fd.has_presence and not proto.HasField(name):
            kwargs[f.name] = None
        else:
            kwargs[f.name] = raw
    return cls(**kwargs)


def _is_map(fd) -> bool:
    return fd.is_repeated and fd.message_type is not None and fd.message_type.GetOptions().map_entry


def request_error(
    request: type | Message | str, error_code: int, error_message: str, controller_id: int = -1
) -> Message:
    """The protobuf response to `request` (a request protobuf class or message, or the RPC name)
    refusing it as a whole: no results, the request-level error, metadata_offset -1 (nothing to
    wait for). Other fields carry the response dataclass's defaults (a heartbeat answer says
    fenced)."""
    response_cls = _RPCS[_rpc_name(request)][1]
    required = {
        f.name: ()
        for f in dataclasses.fields(response_cls)
        if f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING
    }
    out = to_proto(
        response_cls(
            **required,
            error_code=error_code,
            error_message=error_message,
            controller_id=controller_id,
        )
    )
    out.metadata_offset = -1
    return out


def not_controller(
    request: type | Message | str, controller_id: int, message: str | None = None
) -> Message:
    """request_error() for a node that is not the active controller: NOT_CONTROLLER, and where
    to go (`controller_id`, -1 when this node does not know)."""
    rpc = _rpc_name(request)
    if message is None:
        message = (
            f"this node is not the active controller; send {rpc} to node {controller_id}"
            if controller_id >= 0
            else f"this node is not the active controller and does not know which one is; "
            f"retry {rpc} after a short wait"
        )
    return request_error(rpc, ErrorCode.NOT_CONTROLLER, message, controller_id)


def _rpc_name(request: type | Message | str) -> str:
    if isinstance(request, str):
        return request
    return RPC_OF[DATACLASS_OF[request if isinstance(request, type) else type(request)]]
