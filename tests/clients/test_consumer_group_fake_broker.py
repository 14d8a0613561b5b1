"""Consumer groups against the fake broker and fake coordinator over real gRPC: partitions split
and handed over, callbacks and commits around rebalances, committed positions, coordinator
errors retried, fatal ones raised, static membership, pattern subscriptions, poll timeouts."""

from __future__ import annotations

import pathlib
import re
import sys
import threading
import time

import pytest
import trio

from clients.consumer import AsyncConsumer, Consumer, ConsumerRebalanceListener
from clients.errors import ErrorCode, KraftError
from clients.producer import AsyncProducer, Producer
from clients.types import TopicPartition as TP

sys.path.insert(0, str(pathlib.Path(__file__).parent))  # pytest runs with --import-mode=importlib
from fake_group_coordinator import fake_cluster  # noqa: E402

FAST = dict(
    group_id="g",
    session_timeout_ms=1000,
    heartbeat_interval_ms=50,
    auto_offset_reset="earliest",
    fetch_max_wait_ms=50,
    retry_backoff_ms=20,
)


@pytest.fixture
def fake():
    with fake_cluster(6) as pair:
        yield pair


class Recorder(ConsumerRebalanceListener):
    def __init__(self) -> None:
        self.events: list = []

    def on_partitions_revoked(self, partitions):
        self.events.append(("revoked", sorted(partitions)))

    def on_partitions_assigned(self, partitions):
        self.events.append(("assigned", sorted(partitions)))

    def on_partitions_lost(self, partitions):
        self.events.append(("lost", sorted(partitions)))


class Member:
    """One group consumer in its own task (nurseries close in order, consumers need not),
    polling and keeping what it read until `stop`."""

    def __init__(self, address: str, **config) -> None:
        self.address, self.config = address, config
        self.recorder = Recorder()
        self.consumer: AsyncConsumer | None = None
        self.records: list = []
        self.stop = trio.Event()
        self.closed = trio.Event()

    async def run(self, task_status=trio.TASK_STATUS_IGNORED) -> None:
        async with AsyncConsumer(self.address, **{**FAST, **self.config}) as c:
            self.consumer = c
            c.subscribe(["t"], listener=self.recorder)
            task_status.started()
            while not self.stop.is_set():
                self.records += await c.poll(timeout_ms=30)
        self.closed.set()

    async def close(self) -> None:
        self.stop.set()
        await self.closed.wait()


async def poll_until(consumer: AsyncConsumer, count: int, within: float = 10.0) -> list:
    """Poll until `count` records came, failing after `within` seconds."""
    got: list = []
    with trio.fail_after(within):
        while len(got) < count:
            got += await consumer.poll(timeout_ms=50)
    return got


async def until(check, timeout: float = 10.0, what: str = "") -> None:
    with trio.fail_after(timeout):
        while not check():
            await trio.sleep(0.02)


async def produce(broker, n, partitions=6, topic="t"):
    async with AsyncProducer(broker.address, linger_ms=0) as p:
        for i in range(n):
            await p.send(topic, b"%d" % i, partition=i % partitions)
        await p.flush()


async def test_three_members_split_six_partitions_and_a_leaver_hands_its_share_over(fake):
    broker, coordinator = fake
    members = [Member(broker.address, client_id=f"c{i}") for i in range(3)]
    async with trio.open_nursery() as nursery:
        for m in members:
            await nursery.start(m.run)
        everything = {TP("t", p) for p in range(6)}
        await until(
            lambda: (
                sorted(len(m.consumer.assignment()) for m in members) == [2, 2, 2]
                and set().union(*(m.consumer.assignment() for m in members)) == everything
            )
        )
        group = coordinator.groups["g"]
        assert len(group.members) == 3 and group.protocol == "range"
        leaver = members[0].consumer.assignment()
        await members[0].close()
        assert members[0].recorder.events[-1] == ("revoked", sorted(leaver))
        await until(lambda: sorted(len(m.consumer.assignment()) for m in members[1:]) == [3, 3])
        await produce(broker, 60)
        await until(lambda: sum(len(m.records) for m in members[1:]) == 60)
        for m in members[1:]:
            await m.close()
    assert coordinator.calls["LeaveGroup"] == 3
    # Eager: every rebalance revokes all before assigning anew; never two assigned in a row.
    for m in members:
        kinds = [e[0] for e in m.recorder.events]
        assert kinds[0] == "assigned" and all(a != b for a, b in zip(kinds, kinds[1:])), kinds


def test_commit_then_a_new_member_resumes_where_the_last_one_committed(fake):
    broker, coordinator = fake
    with Producer(broker.address, linger_ms=0) as p:
        for i in range(12):
            p.send("t", b"%d" % i, partition=i % 6)
        p.flush()
    with Consumer(broker.address, enable_auto_commit=False, **FAST) as c:
        c.subscribe("t")
        got = []
        while len(got) < 12:
            got += c.poll(timeout_ms=2000)
        c.commit()
        assert c.committed([TP("t", 0), TP("t", 5)]) == {TP("t", 0): 2, TP("t", 5): 2}
        c.commit({TP("t", 0): 1})
        assert c.committed([TP("t", 0)]) == {TP("t", 0): 1}
    with Consumer(broker.address, **FAST) as c:
        c.subscribe(["t"])
        again = []
        for _ in range(20):
            again += c.poll(timeout_ms=100)
            if again and c.assignment():
                break
        assert [(r.partition, r.offset) for r in again] == [(0, 1)]
        assert c.position(TP("t", 3)) == 2
    # Closing with auto-commit committed what the second consumer read.
    assert coordinator.groups["g"].offsets[("t", 0)] == 2


async def test_revocation_commits_with_the_old_generation_before_rejoining(fake):
    broker, coordinator = fake
    await produce(broker, 6)
    first = AsyncConsumer(broker.address, client_id="a", **FAST)
    await first.start()
    first.subscribe(["t"])
    got = []
    with trio.fail_after(10):
        while len(got) < 6:
            got += await first.poll(timeout_ms=100)
    assert coordinator.groups["g"].generation == 1
    async with AsyncConsumer(broker.address, client_id="b", **FAST) as second:
        second.subscribe(["t"])
        with trio.fail_after(10):
            while len(second.assignment()) != 3 or len(first.assignment()) != 3:
                await first.poll(timeout_ms=20)
                await second.poll(timeout_ms=20)
        revoke_commit = [c for c in coordinator.commits if c[2].startswith("a")][0]
        assert revoke_commit[1] == 1 and revoke_commit[3] == {("t", p): 1 for p in range(6)}
        await second.aclose()
    await first.aclose()


async def test_reset_none_names_the_partition_and_the_group(fake):
    broker, _ = fake
    async with AsyncConsumer(broker.address, **{**FAST, "auto_offset_reset": "none"}) as c:
        c.subscribe(["t"])
        with pytest.raises(KraftError) as info:
            with trio.fail_after(10):
                while True:
                    await c.poll(timeout_ms=50)
        assert "no offset committed in group 'g'" in info.value.message
        assert re.search(r"t-\d", info.value.message)


async def test_coordinator_errors_are_retried_after_a_new_lookup(fake):
    broker, coordinator = fake
    await produce(broker, 6)
    coordinator.errors["FindCoordinator"].append(ErrorCode.COORDINATOR_NOT_AVAILABLE)
    coordinator.errors["JoinGroup"].append(ErrorCode.NOT_COORDINATOR)
    coordinator.errors["SyncGroup"].append(ErrorCode.COORDINATOR_NOT_AVAILABLE)
    coordinator.errors["OffsetFetch"].append(ErrorCode.COORDINATOR_LOAD_IN_PROGRESS)
    coordinator.errors["Heartbeat"].append(ErrorCode.NOT_COORDINATOR)
    coordinator.errors["OffsetCommit"].append(ErrorCode.NOT_COORDINATOR)
    async with AsyncConsumer(broker.address, enable_auto_commit=False, **FAST) as c:
        c.subscribe(["t"])
        await poll_until(c, 6)
        await trio.sleep(0.2)  # a heartbeat or two
        await c.commit()
        assert await c.committed([TP("t", 1)]) == {TP("t", 1): 1}
    assert coordinator.calls["FindCoordinator"] >= 4
    assert all(not q for q in coordinator.errors.values())


@pytest.mark.parametrize(
    "code",
    [ErrorCode.COORDINATOR_LOAD_IN_PROGRESS, ErrorCode.REBALANCE_IN_PROGRESS],
    ids=lambda code: code.name,
)
async def test_a_join_answered_retry_later_is_retried_after_the_backoff(fake, code):
    # A coordinator that has just taken over its __consumer_offsets partition answers
    # COORDINATOR_LOAD_IN_PROGRESS until it has loaded it. The answer asks for nothing but a
    # retry after retry_backoff_ms: the join must go out again then, not once the group
    # loop's next deadline (max_poll_interval_ms, 300 s by default) comes round.
    broker, coordinator = fake
    await produce(broker, 6)
    coordinator.errors["JoinGroup"].extend([code, code])
    async with AsyncConsumer(broker.address, enable_auto_commit=False, **FAST) as c:
        c.subscribe(["t"])
        await poll_until(c, 6, within=5)
    assert coordinator.calls["JoinGroup"] >= 4  # two refused, then MEMBER_ID_REQUIRED
    assert not coordinator.errors["JoinGroup"]


async def test_a_fenced_static_member_fails_its_poll(fake):
    broker, coordinator = fake
    coordinator.errors["JoinGroup"].append(ErrorCode.FENCED_INSTANCE_ID)
    async with AsyncConsumer(broker.address, group_instance_id="i1", **FAST) as c:
        c.subscribe(["t"])
        with pytest.raises(KraftError) as info:
            with trio.fail_after(10):
                while True:
                    await c.poll(timeout_ms=50)
        assert info.value.code == ErrorCode.FENCED_INSTANCE_ID
        with pytest.raises(KraftError):
            await c.poll(timeout_ms=1)  # and stays failed


@pytest.mark.parametrize("static, leaves", [(None, 1), ("i1", 0)])
async def test_only_dynamic_members_send_leave_group_on_close(fake, static, leaves):
    broker, coordinator = fake
    async with AsyncConsumer(broker.address, group_instance_id=static, **FAST) as c:
        c.subscribe(["t"])
        with trio.fail_after(10):
            while len(c.assignment()) != 6:
                await c.poll(timeout_ms=20)
    assert coordinator.calls["LeaveGroup"] == leaves
    assert len(coordinator.groups["g"].members) == 1 - leaves


async def test_a_pattern_subscription_picks_up_new_topics(fake):
    broker, _ = fake
    broker.create("p-1", 1)
    broker.create("other", 1)
    async with AsyncConsumer(broker.address, metadata_max_age_ms=100, **FAST) as c:
        c.subscribe(re.compile(r"p-\d"))
        with trio.fail_after(10):
            while c.assignment() != {TP("p-1", 0)}:
                await c.poll(timeout_ms=20)
        broker.create("p-2", 2)
        with trio.fail_after(10):
            while c.assignment() != {TP("p-1", 0), TP("p-2", 0), TP("p-2", 1)}:
                await c.poll(timeout_ms=20)
        assert c.subscription() == {"p-1", "p-2"}


async def test_no_poll_within_max_poll_interval_leaves_and_the_next_poll_rejoins(fake):
    broker, coordinator = fake
    recorder = Recorder()
    async with AsyncConsumer(broker.address, max_poll_interval_ms=400, **FAST) as c:
        c.subscribe(["t"], listener=recorder)
        with trio.fail_after(10):
            while len(c.assignment()) != 6:
                await c.poll(timeout_ms=20)
        await until(lambda: coordinator.calls["LeaveGroup"] == 1, 5)
        assert coordinator.groups["g"].members == {}
        with trio.fail_after(10):
            while recorder.events[-1][0] != "assigned" or len(recorder.events) < 3:
                await c.poll(timeout_ms=20)
        assert [e[0] for e in recorder.events] == ["assigned", "lost", "assigned"]
        assert len(coordinator.groups["g"].members) == 1


async def test_commit_async_callbacks_run_in_a_later_poll(fake):
    broker, coordinator = fake
    await produce(broker, 6)
    done = []
    async with AsyncConsumer(broker.address, enable_auto_commit=False, **FAST) as c:
        c.subscribe(["t"])
        await poll_until(c, 6)
        c.commit_async(callback=lambda offsets, error: done.append((len(offsets), error)))
        with trio.fail_after(5):
            while not done:
                await c.poll(timeout_ms=20)
    assert done == [(6, None)]
    assert coordinator.groups["g"].offsets == {("t", p): 1 for p in range(6)}


async def test_auto_commit_commits_positions_on_its_interval(fake):
    broker, coordinator = fake
    await produce(broker, 6)
    async with AsyncConsumer(broker.address, auto_commit_interval_ms=100, **FAST) as c:
        c.subscribe(["t"])
        await poll_until(c, 6)
        await until(lambda: coordinator.groups["g"].offsets == {("t", p): 1 for p in range(6)}, 5)


def test_pause_stops_a_partition_and_resume_reads_on(fake):
    broker, _ = fake
    with Producer(broker.address, linger_ms=0) as p:
        for i in range(10):
            p.send("t", b"%d" % i, partition=i % 2)
        p.flush()
    with Consumer(broker.address, auto_offset_reset="earliest") as c:
        c.assign([TP("t", 0), TP("t", 1)])
        c.pause(TP("t", 1))
        assert c.paused() == {TP("t", 1)}
        got = []
        for _ in range(10):
            got += c.poll(timeout_ms=50)
        assert {r.partition for r in got} == {0} and len(got) == 5
        c.resume(TP("t", 1))
        while len(got) < 10:
            got += c.poll(timeout_ms=2000)
        assert c.paused() == set() and sorted(r.offset for r in got if r.partition == 1) == [
            0,
            1,
            2,
            3,
            4,
        ]


async def test_api_misuse_reads_like_help(fake):
    broker, _ = fake
    async with AsyncConsumer(broker.address) as plain:
        with pytest.raises(KraftError) as info:
            plain.subscribe(["t"])
        assert "group_id=" in info.value.message
    async with AsyncConsumer(broker.address, group_id="g") as c:
        c.assign([TP("t", 0)])
        with pytest.raises(KraftError):
            c.subscribe(["t"])
        c.assign([])
        c.subscribe(["t"])
        with pytest.raises(KraftError):
            c.assign([TP("t", 0)])
        with pytest.raises(ValueError):
            c.subscribe([])
    with pytest.raises(ValueError):
        AsyncConsumer(broker.address, enable_auto_commit=True)


async def test_manual_assignment_commits_outside_the_group_and_is_refused_while_it_has_members(
    fake,
):
    broker, coordinator = fake
    await produce(broker, 36)
    async with AsyncConsumer(broker.address, **FAST) as c:
        c.assign([TP("t", 0)])
        await c.commit({TP("t", 0): 4})
        assert coordinator.commits[-1] == ("g", -1, "", {("t", 0): 4})
        assert await c.committed([TP("t", 0), TP("t", 1)]) == {TP("t", 0): 4, TP("t", 1): None}
        async with AsyncConsumer(broker.address, **FAST) as member:
            member.subscribe(["t"])
            got = []
            with trio.fail_after(10):
                while len(got) < 32:
                    got += await member.poll(timeout_ms=20)
            # The member starts at the committed offset, elsewhere at auto_offset_reset.
            assert sorted(r.offset for r in got if r.partition == 0) == [4, 5]
            with pytest.raises(KraftError) as info:
                await c.commit({TP("t", 0): 5})
            assert info.value.code == ErrorCode.UNKNOWN_MEMBER_ID


def test_blocking_members_with_manual_commits_read_each_record_exactly_once(fake):
    """Two blocking consumers in threads, one joining midway and the other leaving: commits in
    the revocation listener (from the polling thread) mean nothing is skipped or read twice."""
    broker, coordinator = fake
    seen: list = []
    readers: dict = {"a": 0, "b": 0}
    lock = threading.Lock()
    stop = {"a": threading.Event(), "b": threading.Event()}

    class CommitOnRevoke(ConsumerRebalanceListener):
        def __init__(self) -> None:
            self.consumer = None

        def on_partitions_revoked(self, partitions):
            self.consumer.commit()

    def member(name: str) -> None:
        listener = CommitOnRevoke()
        with Consumer(
            broker.address,
            enable_auto_commit=False,
            client_id=name,
            **{**FAST, "max_poll_records": 7},
        ) as c:
            listener.consumer = c
            c.subscribe(["t"], listener=listener)
            while not stop[name].is_set():
                records = c.poll(timeout_ms=20)
                with lock:
                    seen.extend((r.partition, r.offset) for r in records)
                    readers[name] += len(records)
                if records and len(seen) % 3 == 0:
                    c.commit_async()
                elif records:
                    c.commit()

    with Producer(broker.address, linger_ms=0) as p:

        def produce_some(n):
            for i in range(n):
                p.send("t", b"x", partition=i % 6)
            p.flush()

        a = threading.Thread(target=member, args=("a",))
        a.start()
        produce_some(300)
        deadline = time.monotonic() + 10
        while readers["a"] < 300 and time.monotonic() < deadline:
            time.sleep(0.02)
        b = threading.Thread(target=member, args=("b",))
        b.start()
        produce_some(300)
        deadline = time.monotonic() + 10
        while len(coordinator.groups["g"].members) < 2 and time.monotonic() < deadline:
            time.sleep(0.02)
        produce_some(300)
        stop["a"].set()
        a.join(10)
        produce_some(300)
        deadline = time.monotonic() + 10
        while len(seen) < 1200 and time.monotonic() < deadline:
            time.sleep(0.02)
        stop["b"].set()
        b.join(10)
    assert not a.is_alive() and not b.is_alive()
    assert len(seen) == len(set(seen)) == 1200
    assert readers["a"] > 300 and readers["b"] > 300, readers
    assert coordinator.groups["g"].offsets == {("t", p): 200 for p in range(6)}


def test_a_committed_leader_epoch_keeps_the_next_member_off_a_stale_leader(fake):
    """KIP-320 as a chaos run needed it: a member commits at an offset it read in leader epoch 3;
    the next member's metadata names a leader at epoch 2 (a deposed broker that has not heard,
    whose shorter log would answer OFFSET_OUT_OF_RANGE). It must not fetch there, nor reset to
    the beginning, but wait for metadata at epoch 3 or later and resume at the commit."""
    broker, coordinator = fake
    broker.leader_epoch = 3
    with Producer(broker.address, linger_ms=0) as p:
        for i in range(4):
            p.send("t", b"%d" % i, partition=0)
        p.flush()
    with Consumer(broker.address, enable_auto_commit=False, **FAST) as c:
        c.subscribe(["t"])
        got = []
        while len(got) < 4:
            got += c.poll(timeout_ms=2000)
        c.commit()
    assert (
        coordinator.groups["g"].offsets[("t", 0)],
        coordinator.groups["g"].epochs[("t", 0)],
    ) == (4, 3)

    broker.leader_epoch = 2  # every Metadata answer now names an older leader
    with Producer(broker.address, linger_ms=0) as p:
        for i in range(4, 6):
            p.send("t", b"%d" % i, partition=0)
        p.flush()
    with Consumer(broker.address, enable_auto_commit=False, **FAST) as c:
        c.subscribe(["t"])
        stale = []
        deadline = time.monotonic() + 1.5
        while time.monotonic() < deadline:
            stale += c.poll(timeout_ms=100)
        assert c.assignment() and stale == []  # assigned, but not fetching from it
        broker.leader_epoch = 4
        again = []
        deadline = time.monotonic() + 10
        while len(again) < 2 and time.monotonic() < deadline:
            again += c.poll(timeout_ms=100)
        assert [(r.partition, r.offset) for r in again] == [(0, 4), (0, 5)]


@pytest.mark.parametrize("static", [None, "i1"])
def test_group_metadata_names_the_generation_and_member_it_holds(fake, static):
    broker, coordinator = fake
    with Consumer(broker.address, group_instance_id=static, **FAST) as c:
        before = c.group_metadata()
        assert before == ("g", -1, "", static)  # not in a generation yet
        c.subscribe(["t"])
        for _ in range(100):
            c.poll(timeout_ms=20)
            if len(c.assignment()) == 6:
                break
        meta = c.group_metadata()
        group = coordinator.groups["g"]
        assert (meta.group_id, meta.generation_id, meta.group_instance_id) == (
            "g",
            group.generation,
            static,
        )
        assert meta.generation_id >= 1 and meta.member_id in group.members
    with Consumer(broker.address) as plain:
        with pytest.raises(KraftError, match="group_id"):
            plain.group_metadata()
