"""With an authorizer on, each servicer checks the request's principal against the image's ACLs:
alice produces to her topic and not bob's, and transactional records only under a transactional
id she may Write, Metadata lists each only their own topics, anonymous
callers cannot delete topics or groups, and node-to-node calls need ClusterAction."""

import pytest

from broker.group import messages as m_group
from broker.replication.replica_manager import ReplicaManager
from broker.security.request_authorizer import RequestAuthorizer
from broker.services import controller_servicer
from broker.services.broker_servicer import BrokerServicer
from broker.services.group_servicer import GroupServicer
from clients.errors import ErrorCode as E
from clients.grpc_server import RequestContext, serving_as
from clients.record.codec import encode_batch
from clients.wire import broker_pb2 as pb
from clients.wire import controller_pb2 as cpb
from clients.wire import group_pb2 as gpb
from kraft.controller import messages as m
from kraft.log.log_config import LogConfig
from kraft.log.log_manager import LogManager
from kraft.metadata import records as r
from kraft.metadata.acl_records import acl_to_record
from kraft.metadata.delta import replay_all
from kraft.metadata.image import EMPTY_IMAGE, PartitionRegistration
from kraft.security.acl import AclBinding, Permission
from kraft.security.acl import Operation as O
from kraft.security.acl import PatternType as P
from kraft.security.acl import ResourceType as R
from kraft.security.authorizer import AuthorizerConfig

ALICE = RequestContext("User:alice", "10.0.0.1")
BOB = RequestContext("User:bob", "10.0.0.2")
ANONYMOUS = RequestContext()
TOPICS = {"alice-orders": "a" * 32, "bob-orders": "b" * 32}


def allow(rtype, name, principal, op, pattern=P.LITERAL):
    return AclBinding(rtype, name, pattern, principal, "*", op, Permission.ALLOW)


ACLS = [
    allow(R.TOPIC, "alice-", "User:alice", O.ALL, P.PREFIXED),
    allow(R.TRANSACTIONAL_ID, "alice-", "User:alice", O.WRITE, P.PREFIXED),
    allow(R.GROUP, "alice-", "User:alice", O.READ, P.PREFIXED),
    allow(R.TOPIC, "bob-orders", "User:bob", O.READ),
    allow(R.TOPIC, "bob-orders", "User:bob", O.WRITE),
]


class FakeMetadata:
    def __init__(self, image):
        self.image = image


@pytest.fixture
def image():
    records = [r.RegisterBrokerRecord(1, "i", 1, "h", 9092, fenced=False)]
    for name, topic_id in TOPICS.items():
        records += [r.TopicRecord(name, topic_id), r.PartitionRecord(topic_id, 0, (1,), (1,), 1)]
    records += [acl_to_record(f"acl{i}", b) for i, b in enumerate(ACLS)]
    return replay_all(EMPTY_IMAGE, records, last_offset=len(records) - 1, epoch=1)


@pytest.fixture
def authz(image):
    return RequestAuthorizer(lambda: image, AuthorizerConfig())


@pytest.fixture
def broker(tmp_path, image, authz):
    replicas = ReplicaManager(LogManager([tmp_path], LogConfig(), now_ms=0), node_id=1)
    for name, topic_id in TOPICS.items():
        replicas.apply_registration(
            name,
            0,
            topic_id,
            LogConfig(),
            PartitionRegistration(
                replicas=(1,), isr=(1,), leader=1, leader_epoch=1, partition_epoch=1
            ),
        )
    return BrokerServicer(
        replicas,
        FakeMetadata(image),
        channel=None,
        cluster_id="c",
        clock_ms=lambda: 0,
        authorizer=authz,
    )


def produce(topic):
    batch = encode_batch([(b"k", b"v", (), 1000)])
    return pb.ProduceRequest(
        acks=1,
        topics=[
            pb.TopicProduceData(
                name=topic, partitions=[pb.PartitionProduceData(partition=0, records=batch)]
            )
        ],
    )


async def test_alice_produces_to_her_topic_and_not_to_bobs(broker):
    with serving_as(ALICE):
        mine = (await broker.Produce(produce("alice-orders"))).topics[0].partitions[0]
        theirs = (await broker.Produce(produce("bob-orders"))).topics[0].partitions[0]
    assert mine.error_code == 0
    assert theirs.error_code == E.TOPIC_AUTHORIZATION_FAILED
    for words in (
        "User:alice",
        "Write",
        "Topic 'bob-orders'",
        "kraft acl add --allow-principal User:alice --operation Write --topic bob-orders",
    ):
        assert words in theirs.error_message
    assert broker.replicas.get("bob-orders", 0).log.log_end_offset == 0


async def test_metadata_lists_each_principal_only_the_topics_it_may_describe(broker):
    seen = {}
    for who in (ALICE, BOB, ANONYMOUS):
        with serving_as(who):
            response = await broker.Metadata(pb.MetadataRequest(all_topics=True))
        seen[who.principal] = [t.name for t in response.topics]
    assert seen == {
        "User:alice": ["alice-orders"],
        "User:bob": ["bob-orders"],
        "User:ANONYMOUS": [],
    }
    with serving_as(ALICE):
        named = await broker.Metadata(pb.MetadataRequest(topics=["bob-orders"]))
    assert named.topics[0].error_code == E.TOPIC_AUTHORIZATION_FAILED


async def test_consumers_fetch_and_list_offsets_only_where_they_may_read(broker):
    request = pb.FetchRequest(
        replica_id=-1,
        max_wait_ms=0,
        topics=[
            pb.FetchTopic(
                topic="bob-orders",
                partitions=[
                    pb.FetchPartition(partition=0, fetch_offset=0, current_leader_epoch=-1)
                ],
            )
        ],
    )
    with serving_as(BOB):
        assert (await broker.Fetch(request)).topics[0].partitions[0].error_code == 0
    with serving_as(ALICE):
        refused = await broker.Fetch(request)
        offsets = await broker.ListOffsets(
            pb.ListOffsetsRequest(
                topics=[
                    pb.ListOffsetsTopic(
                        name="bob-orders",
                        partitions=[
                            pb.ListOffsetsPartition(
                                partition=0, timestamp=-1, current_leader_epoch=-1
                            )
                        ],
                    )
                ]
            )
        )
    assert refused.topics[0].partitions[0].error_code == E.TOPIC_AUTHORIZATION_FAILED
    assert offsets.topics[0].partitions[0].error_code == E.TOPIC_AUTHORIZATION_FAILED


async def test_a_follower_fetch_needs_cluster_action(broker):
    request = pb.FetchRequest(
        replica_id=2,
        max_wait_ms=0,
        topics=[
            pb.FetchTopic(
                topic="alice-orders",
                partitions=[
                    pb.FetchPartition(partition=0, fetch_offset=0, current_leader_epoch=-1)
                ],
            )
        ],
    )
    with serving_as(ALICE):
        answer = (await broker.Fetch(request)).topics[0].partitions[0]
    assert answer.error_code == E.CLUSTER_AUTHORIZATION_FAILED


async def test_anonymous_cannot_delete_a_group(authz):
    groups = GroupServicer(coordinators=None, replicas=None, node_id=1, authorizer=authz)
    with serving_as(ANONYMOUS):
        response = await groups.DeleteGroups(gpb.DeleteGroupsRequest(group_ids=["billing"]))
    assert response.groups[0].error_code == E.GROUP_AUTHORIZATION_FAILED
    assert "--group billing" in response.groups[0].error_message


class Forwarded:
    def __init__(self):
        self.requests = []

    async def __call__(self, request):
        self.requests.append(request)
        results = tuple(m.CreateTopicResult(t.name) for t in request.topics)
        return m.CreateTopicsResponse(results), 7


async def test_controller_calls_are_screened_item_by_item(authz):
    forwarded = Forwarded()
    service = controller_servicer.ControllerServicer(forwarded, authz)
    with serving_as(ANONYMOUS):
        deleted = await service.DeleteTopics(cpb.DeleteTopicsRequest(names=["bob-orders"]))
    assert deleted.topics[0].error_code == E.TOPIC_AUTHORIZATION_FAILED
    assert forwarded.requests == []  # nothing reached the controller
    with serving_as(ALICE):
        created = await service.CreateTopics(
            cpb.CreateTopicsRequest(
                topics=[cpb.CreatableTopic(name="bob-new"), cpb.CreatableTopic(name="alice-new")]
            )
        )
    assert [(t.name, t.error_code) for t in created.topics] == [
        ("bob-new", E.TOPIC_AUTHORIZATION_FAILED),
        ("alice-new", 0),
    ]
    assert [t.name for t in forwarded.requests[0].topics] == ["alice-new"]
    with serving_as(ALICE):
        registered = await service.RegisterBroker(cpb.RegisterBrokerRequest(broker_id=9))
        acls = await service.CreateAcls(cpb.CreateAclsRequest())
    assert registered.error_code == E.CLUSTER_AUTHORIZATION_FAILED
    assert acls.error_code == E.CLUSTER_AUTHORIZATION_FAILED


async def test_without_an_authorizer_everything_but_internal_topics_is_allowed(broker):
    broker = BrokerServicer(
        broker.replicas,
        metadata=None,
        channel=None,
        cluster_id="c",
        clock_ms=lambda: 0,
        authorizer=RequestAuthorizer(),
    )
    with serving_as(ANONYMOUS):
        response = await broker.Produce(produce("bob-orders"))
        internal = await broker.Produce(produce("__transaction_state"))
    assert response.topics[0].partitions[0].error_code == 0
    assert internal.topics[0].partitions[0].error_code == E.INVALID_TOPIC_EXCEPTION


async def test_describe_partitions_shows_only_describable_topics(broker):
    with serving_as(ALICE):
        response = await broker.DescribePartitions(pb.DescribePartitionsRequest())
    assert {p.topic for p in response.partitions} == {"alice-orders"}


class FakeCoordinators:
    """Coordinates two groups; any other call means a check let a request through."""

    class _Driver:
        class core:
            @staticmethod
            def list_groups(states):
                return m_group.ListGroupsResponse(
                    groups=(
                        m_group.ListedGroup("alice-billing", "consumer", "Empty"),
                        m_group.ListedGroup("bob-billing", "consumer", "Empty"),
                    )
                )

    def drivers(self):
        return [self._Driver()]

    def driver_for(self, group_id):
        return None  # not the coordinator: the answer says NOT_COORDINATOR


async def test_list_groups_shows_only_describable_groups(authz):
    groups = GroupServicer(FakeCoordinators(), replicas=None, node_id=1, authorizer=authz)
    with serving_as(ALICE):
        listed = await groups.ListGroups(gpb.ListGroupsRequest())
    assert [g.group_id for g in listed.groups] == ["alice-billing"]


async def test_offset_commit_needs_read_on_each_topic(authz):
    groups = GroupServicer(FakeCoordinators(), replicas=None, node_id=1, authorizer=authz)
    request = gpb.OffsetCommitRequest(
        group_id="alice-billing",
        generation_id=-1,
        partitions=[
            gpb.CommitPartition(topic="alice-orders", partition=0, offset=5),
            gpb.CommitPartition(topic="bob-orders", partition=0, offset=5),
        ],
    )
    with serving_as(ALICE):
        response = await groups.OffsetCommit(request)
        refused = await groups.OffsetCommit(gpb.OffsetCommitRequest(group_id="bob-billing"))
    assert {(p.topic, p.error_code) for p in response.partitions} == {
        ("alice-orders", E.NOT_COORDINATOR),
        ("bob-orders", E.TOPIC_AUTHORIZATION_FAILED),
    }
    assert refused.error_code == E.GROUP_AUTHORIZATION_FAILED


def txn_produce(topic, transactional_id=""):
    batch = encode_batch(
        [(b"k", b"v", (), 1000)],
        producer_id=5,
        producer_epoch=0,
        base_sequence=0,
        is_transactional=True,
    )
    return pb.ProduceRequest(
        acks=1,
        transactional_id=transactional_id,
        topics=[
            pb.TopicProduceData(
                name=topic, partitions=[pb.PartitionProduceData(partition=0, records=batch)]
            )
        ],
    )


async def test_transactional_records_need_write_on_their_transactional_id(broker):
    """Kafka's rule: without it a producer could slip batches into another's transaction."""
    with serving_as(ALICE):
        theirs = (await broker.Produce(txn_produce("alice-orders", "bobs-app"))).topics[0]
        unnamed = (await broker.Produce(txn_produce("alice-orders"))).topics[0]
        plain = (await broker.Produce(produce("alice-orders"))).topics[0]
        mine = (await broker.Produce(txn_produce("alice-orders", "alice-app"))).topics[0]
    assert theirs.partitions[0].error_code == E.TRANSACTIONAL_ID_AUTHORIZATION_FAILED
    assert "--transactional-id bobs-app" in theirs.partitions[0].error_message
    assert unnamed.partitions[0].error_code == E.TRANSACTIONAL_ID_AUTHORIZATION_FAILED
    assert "transactional id" in unnamed.partitions[0].error_message
    assert plain.partitions[0].error_code == 0  # plain records need no transactional id
    assert mine.partitions[0].error_code == 0
    assert broker.replicas.get("alice-orders", 0).log.log_end_offset == 2


async def test_a_transactional_id_longer_than_a_coordinator_takes_is_refused(broker):
    with serving_as(ALICE):
        huge = await broker.Produce(txn_produce("alice-orders", "alice-" + "x" * 300))
        plain = await broker.Produce(
            pb.ProduceRequest(
                acks=1, transactional_id="y" * 250, topics=produce("alice-orders").topics
            )
        )
    for answer in (huge, plain):
        [p] = answer.topics[0].partitions
        assert p.error_code == E.INVALID_REQUEST and "the limit is 249" in p.error_message
    assert broker.replicas.get("alice-orders", 0).log.log_end_offset == 0
