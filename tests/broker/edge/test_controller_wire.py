"""Every Controller request and response survives dataclass -> protobuf bytes -> dataclass, with
every field set to something other than its default; NOT_CONTROLLER answers say where to go."""

import dataclasses

import pytest

from broker.edge import controller_wire as wire
from clients.errors import ErrorCode
from clients.wire import controller_pb2 as pb
from clients.wire import controller_pb2_grpc
from kraft.controller import messages as m
from kraft.security import acl

BINDING = acl.AclBinding(
    acl.ResourceType.TOPIC,
    "orders",
    acl.PatternType.PREFIXED,
    "User:alice",
    "10.0.0.1",
    acl.Operation.WRITE,
    acl.Permission.DENY,
)
FILTER = acl.AclBindingFilter(
    acl.ResourceType.GROUP,
    "billing",
    acl.PatternType.MATCH,
    "User:bob",
    "10.0.0.2",
    acl.Operation.READ,
    acl.Permission.ALLOW,
)

Op = m.AlterConfigOpType
NC = ErrorCode.NOT_CONTROLLER

SAMPLES = [
    m.CreateTopicsRequest(
        (
            m.CreatableTopic("orders", 6, 3, {"retention.ms": "1000"}),
            m.CreatableTopic("audit", 1, 1, {"cleanup.policy": "compact"}),
        ),
        validate_only=True,
        internal=True,
    ),
    m.CreateTopicsResponse(
        (m.CreateTopicResult("orders", 36, "exists", "9f2c", 6, 3, {"retention.ms": "1000"}),),
        NC,
        "go",
        2,
    ),
    m.DeleteTopicsRequest(("orders", "audit")),
    m.DeleteTopicsResponse(
        (m.DeleteTopicResult("orders", 3, "no such topic", "9f2c"),), NC, "go", 2
    ),
    m.CreatePartitionsRequest((m.CreatePartitionsTopic("orders", 12),), validate_only=True),
    m.CreatePartitionsResponse((m.CreatePartitionsResult("orders", 37, "too few"),), NC, "go", 2),
    m.DescribeConfigsRequest(
        (
            m.ConfigResource("topic", "orders", ("retention.ms",)),
            m.ConfigResource("broker", "1", ("log.dirs", "num.partitions")),
        )
    ),
    m.DescribeConfigsResponse(
        (
            m.DescribeConfigsResult(
                "broker",
                "1",
                40,
                "bad",
                (m.ConfigEntry("retention.ms", "1000", True, "DEFAULT_CONFIG"),),
            ),
        ),
        NC,
        "go",
        2,
    ),
    m.IncrementalAlterConfigsRequest(
        (
            m.AlterConfigsResource(
                "topic",
                "orders",
                (
                    m.AlterConfigOp("retention.ms", Op.SET, "1000"),
                    m.AlterConfigOp("cleanup.policy", Op.APPEND, "compact"),
                    m.AlterConfigOp("cleanup.policy", Op.SUBTRACT, "delete"),
                    m.AlterConfigOp("segment.ms", Op.DELETE, ""),
                ),
            ),
        ),
        validate_only=True,
    ),
    m.IncrementalAlterConfigsResponse(
        (m.AlterConfigsResult("broker", "1", 40, "bad"),), NC, "go", 2
    ),
    m.RegisterBrokerRequest(
        7, "inc-7a", "host-7", 9099, "rack-b", ("CLIENT://host-7:9099", "INTERNAL://host-7:9100")
    ),
    m.RegisterBrokerResponse(NC, "go", 17, 2),
    m.BrokerHeartbeatRequest(
        7,
        17,
        1234,
        want_fence=True,
        want_shutdown=True,
        offline_replicas=(("ab" * 16, 0), ("ab" * 16, 2), ("cd" * 16, 1)),
        unreachable_brokers=(3, 5),
    ),
    m.BrokerHeartbeatResponse(
        NC, "go", is_caught_up=True, is_fenced=False, should_shut_down=True, controller_id=2
    ),
    m.AlterPartitionRequest(
        7,
        17,
        (
            m.PartitionIsrChange("9f2c", 3, 5, 9, (7, 8), (17, 21)),
            m.PartitionIsrChange("77aa", 1, 2, 4, (7,), (-1,)),
        ),
    ),
    m.AlterPartitionResponse(
        NC, "go", (m.AlterPartitionResult("9f2c", 3, 74, "stale", 7, 5, (7, 8), 9),), 2
    ),
    m.AllocateProducerIdsRequest(7, 17),
    m.AllocateProducerIdsResponse(NC, "go", 5000, 1000, 2),
    m.ElectLeadersRequest(m.ElectionType.UNCLEAN, (("orders", 1), ("audit", 0), ("orders", 0))),
    m.ElectLeadersResponse((m.ElectLeadersResult("orders", 1, 84, "not needed"),), NC, "go", 2),
    m.CreateAclsRequest((BINDING,)),
    m.CreateAclsResponse((m.AclCreationResult(42, "bad principal"),), NC, "go", 2),
    m.DeleteAclsRequest((FILTER,)),
    m.DeleteAclsResponse((m.DeleteAclsFilterResult(42, "bad", (BINDING,)),), NC, "go", 2),
    m.DescribeAclsRequest((FILTER,)),
    m.DescribeAclsResponse((BINDING,), NC, "go", 2),
    m.AlterUserScramCredentialsRequest(
        (m.ScramCredentialDeletion("bob", "SCRAM-SHA-512"),),
        (m.ScramCredentialUpsertion("alice", "SCRAM-SHA-256", 4096, b"salt", b"salted"),),
    ),
    m.AlterUserScramCredentialsResponse(
        (m.AlterUserScramCredentialsResult("bob", 91, "no such credential"),), NC, "go", 2
    ),
    m.DescribeUserScramCredentialsRequest(("alice",)),
    m.DescribeUserScramCredentialsResponse(
        (
            m.DescribeUserScramCredentialsResult(
                "alice", 91, "none", (m.ScramCredentialInfo("SCRAM-SHA-256", 4096),)
            ),
        ),
        NC,
        "go",
        2,
    ),
]
# Proto fields no dataclass carries (the controller answers once records commit, not by timeout).
NOT_IN_DATACLASSES = {
    (pb.CreateTopicsRequest, "timeout_ms"),
    (pb.DeleteTopicsRequest, "timeout_ms"),
    (pb.CreatePartitionsRequest, "timeout_ms"),
    (pb.ConfigEntry, "read_only"),
    (pb.ConfigEntry, "documentation"),
}


def _wire(message):
    proto = wire.to_proto(message)
    return wire.from_proto(type(proto).FromString(proto.SerializeToString()))


def _nested(obj):
    yield obj
    for f in dataclasses.fields(obj):
        value = getattr(obj, f.name)
        for item in value if isinstance(value, tuple) else (value,):
            if dataclasses.is_dataclass(item):
                yield from _nested(item)


def _default(f):
    if f.default_factory is not dataclasses.MISSING:
        return f.default_factory()
    return f.default


@pytest.mark.parametrize("message", SAMPLES, ids=lambda s: type(s).__name__)
def test_round_trip(message):
    assert _wire(message) == message


@pytest.mark.parametrize("message", SAMPLES, ids=lambda s: type(s).__name__)
def test_every_field_in_the_samples_is_not_its_default(message):
    for obj in _nested(message):
        for f in dataclasses.fields(obj):
            assert getattr(obj, f.name) not in (_default(f), ()), (type(obj).__name__, f.name)


def test_every_proto_field_is_filled_by_some_sample():
    # Per field across all samples: a zero enum or `false` is the wire default, so the
    # dataclass-side sample for it may be the only one that leaves it unset.
    filled = set()

    def visit(proto):
        for fd, value in proto.ListFields():
            filled.add((type(proto), fd.name))
            if fd.message_type and not fd.message_type.GetOptions().map_entry:
                for item in value:
                    visit(item)

    for sample in SAMPLES + [m.BrokerHeartbeatResponse(is_fenced=True)]:
        visit(wire.to_proto(sample))
    every = {
        (cls, fd.name)
        for cls in wire.PROTO_OF.values()
        for fd in cls.DESCRIPTOR.fields
        if fd.name != "metadata_offset"
    }  # the servicer's, set after to_proto
    assert every - NOT_IN_DATACLASSES - filled == set()


def test_the_samples_cover_every_message_and_every_rpc():
    covered = {type(obj) for s in SAMPLES for obj in _nested(s)}
    assert covered == set(wire.PROTO_OF)
    assert set(wire.RESPONSE_OF) == set(wire.RPC_OF)
    assert {type(s) for s in SAMPLES} == set(wire.RPC_OF) | set(wire.RESPONSE_OF.values())
    for rpc in wire.RPC_OF.values():
        assert hasattr(controller_pb2_grpc.ControllerStub(_NoChannel()), rpc)
        assert hasattr(controller_pb2_grpc.ControllerServicer, rpc)


class _NoChannel:
    def unary_unary(self, *args, **kwargs):
        return object()


@pytest.mark.parametrize(
    "message",
    [
        m.RegisterBrokerRequest(7, "inc", "h", 1, None),
        m.ConfigResource("topic", "orders", None),
        m.AlterConfigOp("segment.ms", Op.DELETE, None),
        m.ElectLeadersRequest(m.ElectionType.PREFERRED, None),
    ],
    ids=["no rack", "every key", "no value", "every partition"],
)
def test_none_round_trips_as_the_wire_default(message):
    assert _wire(message) == message


def test_wire_representations():
    assert wire.to_proto(m.RegisterBrokerRequest(7, "inc", "h", 1, None)).rack == ""
    assert wire.to_proto(m.ConfigResource("broker", "1")).resource_type == pb.BROKER
    assert not wire.to_proto(m.AlterConfigOp("a", Op.DELETE)).HasField("value")
    req = wire.to_proto(m.ElectLeadersRequest(m.ElectionType.UNCLEAN, (("a", 1), ("a", 2))))
    assert req.election_type == 1
    assert [(t.topic, list(t.partitions)) for t in req.topic_partitions] == [("a", [1, 2])]
    assert [pb.SET, pb.DELETE, pb.APPEND, pb.SUBTRACT] == [0, 1, 2, 3]


def test_an_empty_partition_list_is_refused_rather_than_read_as_every_partition():
    with pytest.raises(ValueError, match="pass None"):
        wire.to_proto(m.ElectLeadersRequest(m.ElectionType.PREFERRED, ()))


def test_unknown_enum_values_from_the_wire():
    with pytest.raises(ValueError, match=r"AlterConfigOpType 9 is unknown; use 0 \(SET\)"):
        wire.from_proto(pb.AlterableConfig(name="a", op=9))
    with pytest.raises(ValueError, match="ElectionType 5 is unknown"):
        wire.from_proto(pb.ElectLeadersRequest(election_type=5))
    # An unknown resource type reaches the controller, which refuses that resource alone.
    assert wire.from_proto(pb.ConfigResource(resource_type=7)).resource_type == "unknown"
    assert wire.to_proto(m.ConfigResource("group", "g")).resource_type == pb.RESOURCE_UNKNOWN


@pytest.mark.parametrize("rpc", list(wire.RPC_OF.values()))
def test_not_controller_by_rpc_name(rpc):
    proto = wire.not_controller(rpc, 3)
    request_cls = next(req for req, name in wire.RPC_OF.items() if name == rpc)
    assert type(proto) is wire.PROTO_OF[wire.RESPONSE_OF[request_cls]]
    answer = wire.from_proto(proto)
    assert (answer.error_code, answer.controller_id, proto.metadata_offset) == (NC, 3, -1)
    assert f"send {rpc} to node 3" in answer.error_message


def test_not_controller_by_request_type_or_message():
    by_type = wire.not_controller(pb.CreateTopicsRequest, -1)
    by_message = wire.not_controller(pb.CreateTopicsRequest(), -1, "ask elsewhere")
    assert type(by_type) is type(by_message) is pb.CreateTopicsResponse
    assert (by_type.error_code, by_type.controller_id, len(by_type.topics)) == (NC, -1, 0)
    assert "does not know which one is" in by_type.error_message
    assert by_message.error_message == "ask elsewhere"


def test_not_controller_keeps_the_safe_defaults():
    heartbeat = wire.from_proto(wire.not_controller("BrokerHeartbeat", 1))
    assert heartbeat.is_fenced is True and heartbeat.error_code == NC
    register = wire.from_proto(wire.not_controller(pb.RegisterBrokerRequest, 1))
    assert register.broker_epoch == -1


def test_request_error_refuses_the_whole_request():
    proto = wire.request_error("ElectLeaders", ErrorCode.REQUEST_TIMED_OUT, "too slow")
    assert type(proto) is pb.ElectLeadersResponse and proto.metadata_offset == -1
    assert wire.from_proto(proto) == m.ElectLeadersResponse(
        (), ErrorCode.REQUEST_TIMED_OUT, "too slow"
    )


def test_an_unknown_acl_enum_from_the_wire_is_refused_by_name():
    bad = pb.CreateAclsRequest(creations=[pb.AclBinding(resource_type=2, operation=99)])
    with pytest.raises(ValueError, match="Operation 99 is unknown"):
        wire.from_proto(bad)
