"""The Group service over a real replica manager and log: a member joins, syncs and commits through
the servicer; the coordinator follows leadership of its `__consumer_offsets` partition (a new
leader epoch reloads the log, losing leadership answers parked requests NOT_COORDINATOR), and a
new leader waits for its log to be committed before it answers from it."""

from __future__ import annotations

from types import SimpleNamespace

import trio
import trio.testing

from broker.group.coordinator_registry import GroupCoordinators
from broker.group.messages import GroupConfig
from broker.group.records import OFFSETS_TOPIC
from broker.replication.replica_manager import ReplicaManager
from broker.services.group_servicer import GroupServicer
from clients.errors import ErrorCode as E
from clients.wire import group_pb2 as pb
from kraft.log.log_config import LogConfig
from kraft.metadata.image import PartitionRegistration

GROUP = "g"
COMPACTED = LogConfig(cleanup_policy="compact")


class OneOffsetsPartition:
    """Just what the coordinators read of the metadata image: `__consumer_offsets` has one
    partition, so every group lives in partition 0."""

    image = SimpleNamespace(
        topic=lambda name: SimpleNamespace(partitions={0: None}) if name == OFFSETS_TOPIC else None
    )


class Broker:
    def __init__(self, tmp_path, replicas=(1,)) -> None:
        from kraft.log.log_manager import LogManager

        self.replicas = ReplicaManager(LogManager([tmp_path], LogConfig(), now_ms=0), node_id=1)
        self.followers = tuple(r for r in replicas if r != 1)
        self.all_replicas = replicas
        self.groups = GroupCoordinators(
            self.replicas,
            OneOffsetsPartition(),
            channel=None,
            config=GroupConfig(initial_rebalance_delay_ms=0),
            clock_ms=lambda: int(trio.current_time() * 1000),
        )
        self.servicer = GroupServicer(self.groups, self.replicas, node_id=1)

    def lead(self, leader_epoch: int, leader: int = 1) -> None:
        self.replicas.apply_registration(
            OFFSETS_TOPIC,
            0,
            "offsets-id",
            COMPACTED,
            PartitionRegistration(
                replicas=self.all_replicas,
                isr=self.all_replicas,
                leader=leader,
                leader_epoch=leader_epoch,
                partition_epoch=leader_epoch,
            ),
        )

    def follower_fetches(self, offset: int, last_fetched_epoch: int, leader_epoch: int) -> None:
        for follower in self.followers:
            answer = self.replicas.read_for_follower(
                OFFSETS_TOPIC,
                0,
                follower,
                fetch_offset=offset,
                last_fetched_epoch=last_fetched_epoch,
                current_leader_epoch=leader_epoch,
                max_bytes=1 << 20,
                now_ms=0,
            )
            assert answer.error_code == 0, answer


def join(member_id: str = "") -> pb.JoinGroupRequest:
    return pb.JoinGroupRequest(
        group_id=GROUP,
        member_id=member_id,
        protocol_type="consumer",
        protocols=[pb.Protocol(name="range", metadata=b"sub")],
        session_timeout_ms=10_000,
        rebalance_timeout_ms=30_000,
        client_id="c",
    )


async def stable_member(servicer: GroupServicer) -> tuple[str, int]:
    first = await servicer.JoinGroup(join())
    assert first.error_code == E.MEMBER_ID_REQUIRED
    joined = await servicer.JoinGroup(join(first.member_id))
    assert joined.error_code == 0 and joined.leader == first.member_id
    synced = await servicer.SyncGroup(
        pb.SyncGroupRequest(
            group_id=GROUP,
            generation_id=joined.generation_id,
            member_id=joined.member_id,
            assignments=[pb.MemberAssignment(member_id=joined.member_id, assignment=b"mine")],
        )
    )
    assert (synced.error_code, synced.assignment) == (0, b"mine")
    return joined.member_id, joined.generation_id


def commit(member_id: str, generation: int, offset: int) -> pb.OffsetCommitRequest:
    return pb.OffsetCommitRequest(
        group_id=GROUP,
        generation_id=generation,
        member_id=member_id,
        partitions=[pb.CommitPartition(topic="t", partition=0, offset=offset, leader_epoch=-1)],
    )


async def committed(servicer: GroupServicer) -> pb.OffsetFetchResponse:
    return await servicer.OffsetFetch(pb.OffsetFetchRequest(group_id=GROUP, all_partitions=True))


async def test_join_sync_commit_and_a_new_leader_epoch_reloads_from_the_log(
    tmp_path, autojump_clock
):
    broker = Broker(tmp_path)
    async with trio.open_nursery() as nursery:
        nursery.start_soon(broker.groups.run)
        broker.lead(leader_epoch=1)
        await trio.testing.wait_all_tasks_blocked()
        member, generation = await stable_member(broker.servicer)
        answer = await broker.servicer.OffsetCommit(commit(member, generation, 42))
        assert (answer.error_code, [p.error_code for p in answer.partitions]) == (0, [0])
        log_end = broker.replicas.get(OFFSETS_TOPIC, 0).log.log_end_offset
        assert log_end == 2  # the group's assignment, then the offset

        broker.lead(leader_epoch=2)  # re-elected: a new driver loads the log
        await trio.testing.wait_all_tasks_blocked()
        [fetched] = (await committed(broker.servicer)).partitions
        assert (fetched.topic, fetched.partition, fetched.offset) == ("t", 0, 42)
        described = await broker.servicer.DescribeGroups(
            pb.DescribeGroupsRequest(group_ids=[GROUP])
        )
        assert [m.member_id for m in described.groups[0].members] == [member]
        assert described.groups[0].state == "Stable"
        nursery.cancel_scope.cancel()


async def test_losing_leadership_answers_a_parked_join_not_coordinator(tmp_path, autojump_clock):
    broker = Broker(tmp_path)
    async with trio.open_nursery() as nursery:
        nursery.start_soon(broker.groups.run)
        broker.lead(leader_epoch=1)
        await trio.testing.wait_all_tasks_blocked()
        member, _ = await stable_member(broker.servicer)
        answers = []

        async def second_member():
            first = await broker.servicer.JoinGroup(join())
            answers.append(await broker.servicer.JoinGroup(join(first.member_id)))

        nursery.start_soon(second_member)
        await trio.testing.wait_all_tasks_blocked()
        assert answers == []  # parked: the first member has not rejoined
        broker.lead(leader_epoch=2, leader=2)  # another broker leads the partition now
        await trio.testing.wait_all_tasks_blocked()
        assert [a.error_code for a in answers] == [E.NOT_COORDINATOR]
        beat = await broker.servicer.Heartbeat(
            pb.HeartbeatRequest(group_id=GROUP, generation_id=1, member_id=member)
        )
        assert beat.error_code == E.NOT_COORDINATOR
        nursery.cancel_scope.cancel()


async def test_a_new_leader_loads_only_once_its_log_is_committed(tmp_path, autojump_clock):
    broker = Broker(tmp_path, replicas=(1, 2))
    async with trio.open_nursery() as nursery:
        nursery.start_soon(broker.groups.run)
        broker.lead(leader_epoch=1)
        broker.follower_fetches(0, -1, 1)
        await trio.testing.wait_all_tasks_blocked()
        sent = []

        async def standalone_commit():
            # Outside group management (generation -1): allowed for a group without members.
            sent.append(await broker.servicer.OffsetCommit(commit("", -1, 9)))

        nursery.start_soon(standalone_commit)
        await trio.testing.wait_all_tasks_blocked()
        assert sent == []  # appended; follower 2 has not fetched it
        broker.lead(leader_epoch=2)  # re-elected with the commit still uncommitted
        await trio.testing.wait_all_tasks_blocked()
        assert sent[0].error_code == E.NOT_COORDINATOR
        assert (await committed(broker.servicer)).error_code == E.COORDINATOR_LOAD_IN_PROGRESS
        log = broker.replicas.get(OFFSETS_TOPIC, 0).log
        assert (log.high_watermark, log.log_end_offset) == (0, 1)
        broker.follower_fetches(1, 1, 2)  # follower 2 has the record: it is committed
        await trio.testing.wait_all_tasks_blocked()
        [fetched] = (await committed(broker.servicer)).partitions
        assert fetched.offset == 9
        nursery.cancel_scope.cancel()


async def test_a_broker_that_leads_no_offsets_partition_answers_not_coordinator(tmp_path):
    broker = Broker(tmp_path)
    assert (await broker.servicer.JoinGroup(join())).error_code == E.NOT_COORDINATOR
    assert (await committed(broker.servicer)).error_code == E.NOT_COORDINATOR
    deleted = await broker.servicer.DeleteGroups(pb.DeleteGroupsRequest(group_ids=[GROUP]))
    assert [g.error_code for g in deleted.groups] == [E.NOT_COORDINATOR]
    text = deleted.groups[0].error_message
    assert "group 'g'" in text and text.count("find its coordinator again") == 1, text
    joined = await broker.servicer.JoinGroup(join())
    assert joined.error_message.count("find its coordinator again") == 1, joined.error_message


async def test_a_commit_wakes_the_followers_parked_fetch_at_once(tmp_path, autojump_clock):
    """An acks=all commit waits for the followers: their long-polling fetch must take the new
    record now, not when its max wait ends (that cost every commit and rebalance 500 ms)."""
    from broker.services.broker_servicer import BrokerServicer
    from clients.wire import broker_pb2

    broker = Broker(tmp_path, replicas=(1, 2))
    brokers = BrokerServicer(
        broker.replicas, metadata=None, channel=None, cluster_id="c", clock_ms=lambda: 0
    )
    async with trio.open_nursery() as nursery:
        nursery.start_soon(broker.groups.run)
        broker.lead(leader_epoch=1)
        await trio.testing.wait_all_tasks_blocked()
        fetched = []

        async def follower_fetch():
            request = broker_pb2.FetchRequest(
                replica_id=2,
                max_wait_ms=10_000,
                min_bytes=1,
                topics=[
                    broker_pb2.FetchTopic(
                        topic=OFFSETS_TOPIC,
                        partitions=[
                            broker_pb2.FetchPartition(
                                partition=0,
                                current_leader_epoch=1,
                                fetch_offset=0,
                                last_fetched_epoch=-1,
                            )
                        ],
                    )
                ],
            )
            await brokers.Fetch(request)
            fetched.append(trio.current_time())

        nursery.start_soon(follower_fetch)
        await trio.testing.wait_all_tasks_blocked()
        started = trio.current_time()
        nursery.start_soon(broker.servicer.OffsetCommit, commit("", -1, 9))
        await trio.testing.wait_all_tasks_blocked()
        assert fetched and fetched[0] - started < 1.0
        nursery.cancel_scope.cancel()


async def test_a_failed_coordinator_is_restarted_not_left_dead(
    tmp_path, autojump_clock, monkeypatch, caplog
):
    from broker.group.driver import CoordinatorDriver

    original, calls = CoordinatorDriver._load, []

    async def load_failing_once(self):
        calls.append(self)
        if len(calls) == 1:
            raise RuntimeError("a bug while loading")
        return await original(self)

    monkeypatch.setattr(CoordinatorDriver, "_load", load_failing_once)
    broker = Broker(tmp_path)
    async with trio.open_nursery() as nursery:
        nursery.start_soon(broker.groups.run)
        broker.lead(leader_epoch=1)
        await trio.testing.wait_all_tasks_blocked()
        assert (await committed(broker.servicer)).error_code == E.NOT_COORDINATOR
        assert "a bug while loading" in caplog.text
        await trio.sleep(2)  # the restart backoff
        assert len(calls) == 2
        assert (await committed(broker.servicer)).error_code == 0
        nursery.cancel_scope.cancel()


async def test_bad_requests_get_their_error_and_change_nothing(tmp_path, autojump_clock):
    broker = Broker(tmp_path)
    nobody = await broker.servicer.FindCoordinator(pb.FindCoordinatorRequest(key=""))
    assert (nobody.error_code, nobody.node_id) == (E.INVALID_GROUP_ID, -1)
    async with trio.open_nursery() as nursery:
        nursery.start_soon(broker.groups.run)
        broker.lead(leader_epoch=1)
        await trio.testing.wait_all_tasks_blocked()
        too_short = join()
        too_short.session_timeout_ms = 10  # below group.min.session.timeout.ms
        answer = await broker.servicer.JoinGroup(too_short)
        assert answer.error_code == E.INVALID_SESSION_TIMEOUT
        assert "group.min.session.timeout.ms" in answer.error_message
        no_protocols = join()
        del no_protocols.protocols[:]
        assert (
            await broker.servicer.JoinGroup(no_protocols)
        ).error_code == E.INCONSISTENT_GROUP_PROTOCOL
        assert broker.replicas.get(OFFSETS_TOPIC, 0).log.log_end_offset == 0
        nursery.cancel_scope.cancel()
