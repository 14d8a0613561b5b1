"""A coordinator that replays the `__consumer_offsets` partition (as after a failover) describes
every settled group exactly as the one that wrote it did; a compacted log gives the same state."""

from group_harness import Harness
from hypothesis import given, settings
from hypothesis import strategies as st

from broker.group.messages import HeartbeatRequest, OffsetFetchRequest
from broker.group.partition_coordinator import GroupCoordinator
from broker.group.records import GroupMetadataKey, OffsetCommitKey, encode_record
from clients.errors import ErrorCode as E
from clients.types import TopicPartition

G = "g"
TP = TopicPartition("orders", 0)
INSTANCES = (None, None, "i-2", "i-3")  # clients 0, 1 dynamic; 2, 3 static


class Client:
    def __init__(self, instance):
        self.instance, self.member_id, self.generation = instance, "", -1
        self.join_handle = self.sync_handle = None
        self.synced = -1  # the generation it last synced

    def forget(self):
        self.member_id, self.generation = "", -1


def learn(h: Harness, clients) -> None:
    """Clients take in answers to their parked requests, as a real consumer would."""
    for cl in clients:
        if cl.join_handle is not None and h.answer(cl.join_handle) is not None:
            a = h.answer(cl.join_handle)
            cl.join_handle = None
            if a.error in (E.NONE, E.MEMBER_ID_REQUIRED):
                cl.member_id = a.member_id
                cl.generation = a.generation_id if a.error == E.NONE else -1
            elif a.error in (E.UNKNOWN_MEMBER_ID, E.FENCED_INSTANCE_ID):
                cl.forget()
        if cl.sync_handle is not None and h.answer(cl.sync_handle) is not None:
            if h.answer(cl.sync_handle).error in (E.UNKNOWN_MEMBER_ID, E.FENCED_INSTANCE_ID):
                cl.forget()
            cl.sync_handle = None


def poll(h: Harness, cl: Client, n: int) -> str:
    """What a consumer's poll loop would do next: join, sync, or heartbeat and rejoin when
    told a rebalance is on."""
    if cl.join_handle is not None or cl.sync_handle is not None:
        return "heartbeat" if cl.member_id else "wait"
    if not cl.member_id:
        return "join"
    if cl.synced != cl.generation:
        cl.synced = cl.generation
        return "sync"
    if h.heartbeat(G, cl.member_id, cl.generation, instance=cl.instance) != E.NONE:
        return "join"
    return "commit" if n % 2 else "wait"


def step(h: Harness, clients, op: str, who: int, n: int) -> None:
    if op == "round":  # every client's poll loop runs once
        for i in range(len(clients)):
            step(h, clients, "poll", i, n)
        return
    cl = clients[who]
    if op == "poll":
        op = poll(h, cl, n)
    if op == "join":
        cl.join_handle = h.join(G, cl.member_id, instance=cl.instance)
    elif op == "restart" and cl.instance is not None:
        cl.forget()
        cl.join_handle = h.join(G, instance=cl.instance)
    elif op == "sync":
        leader = h.c.describe_group(G).leader == cl.member_id
        assignments = {m.member_id: b"p%d" % n for m in h.c.describe_group(G).members}
        cl.sync_handle = h.sync(
            G, cl.member_id, cl.generation, assignments if leader else {}, instance=cl.instance
        )
    elif op == "heartbeat":
        if h.heartbeat(G, cl.member_id, cl.generation, instance=cl.instance) in (
            E.UNKNOWN_MEMBER_ID,
            E.FENCED_INSTANCE_ID,
        ):
            cl.forget()
    elif op == "leave" and cl.member_id:
        h.leave(G, cl.member_id)
        cl.forget()
    elif op == "commit":
        h.commit(G, {TP: n}, cl.generation, cl.member_id, cl.instance)
    elif op == "simple-commit":
        h.commit("simple", {TopicPartition("t", who): n})
    elif op == "advance":
        h.advance((1_000, 4_000, 11_000, 31_000)[who])
    elif op == "hold":  # appends wait: a slow ISR
        h.auto_commit = False
    elif op == "flush":  # they commit, or fail (leader lost its ISR)
        h.auto_commit = True
        h.complete_appends(E.NONE if n % 3 else E.NOT_ENOUGH_REPLICAS)
    learn(h, clients)


def settled(c: GroupCoordinator, group_id: str) -> bool:
    """Stable and Empty are what a record captures; an Empty group with no generation and no
    offsets (only a MEMBER_ID_REQUIRED joiner) has nothing on disk at all."""
    d = c.describe_group(group_id)
    return d.state == "Stable" or (d.state == "Empty" and (d.generation_id > 0 or d.offsets))


OPS = st.lists(
    st.tuples(
        st.sampled_from(
            ("poll",) * 4
            + ("round",) * 4
            + (
                "join",
                "sync",
                "heartbeat",
                "leave",
                "commit",
                "simple-commit",
                "advance",
                "restart",
                "hold",
                "flush",
            )
        ),
        st.integers(0, 3),
        st.integers(0, 99),
    ),
    max_size=80,
)


@settings(max_examples=300, deadline=None)
@given(OPS)
def test_replay_rebuilds_every_settled_group(ops):
    h = Harness()
    clients = [Client(i) for i in INSTANCES]
    for op, who, n in ops:
        step(h, clients, op, who, n)
        if h.pending:
            continue  # the log is behind the coordinator for now
        fresh = h.fresh()
        for group_id in (G, "simple"):
            if settled(h.c, group_id):
                assert fresh.describe_group(group_id) == h.c.describe_group(group_id), ops
            assert fresh.handle_offset_fetch(OffsetFetchRequest(group_id)) == h.fetch(group_id)
        live = h.c.describe_group(G)
        instances = [m.group_instance_id for m in live.members if m.group_instance_id]
        assert len(instances) == len(set(instances))  # one member per instance id
    h.run(h.c.resign())
    assert set(h.answers) == set(range(1, h._handles + 1))  # every request answered, once


def test_a_group_mid_rebalance_loads_as_its_last_stable_generation():
    h = Harness()
    (a, b), gen = h.form_group(G, 2)
    h.commit(G, {TP: 5}, gen, a)
    h.join_new(G)  # a rebalance begins, then the leader moves
    fresh = h.fresh()
    d = fresh.describe_group(G)
    assert (d.state, d.generation_id, {m.member_id for m in d.members}) == ("Stable", gen, {a, b})
    # The members carry on against the new coordinator with what they had.
    assert fresh.handle_heartbeat(HeartbeatRequest(G, gen, b), h.now).error == E.NONE
    assert fresh.describe_group(G).offsets[0].offset == 5


def test_loaded_members_get_a_full_session_from_the_takeover():
    h = Harness()
    (a,), gen = h.form_group(G, 1)
    h.now += 60_000  # the old coordinator died a minute ago
    fresh = h.fresh()
    assert fresh.tick(h.now + 9_999) == ()
    assert fresh.describe_group(G).state == "Stable"
    fresh.tick(h.now + 10_000)
    assert fresh.describe_group(G).state != "Stable"


def test_compacted_log_rebuilds_the_same_state():
    h = Harness()
    (a, b), gen = h.form_group(G, 2)
    for i in range(3):
        h.commit(G, {TP: i, TopicPartition("orders", 1): 10 * i}, gen, a)
    h.leave(G, b)
    h.join(G, a)  # generation + 1 with a alone
    h.complete_sync(G, [a], gen + 1)
    h.commit("simple", {TP: 1})
    last = {}
    for offset, (key, value) in enumerate(h.log):  # the cleaner keeps each key's last record
        last[key] = (offset, value)
    compacted = GroupCoordinator()
    for key, (offset, value) in sorted(last.items(), key=lambda kv: kv[1][0]):
        compacted.replay(key, value, offset)
    compacted.become_coordinator(h.now)
    full = h.fresh()
    for group_id in (G, "simple"):
        assert compacted.describe_group(group_id) == full.describe_group(group_id)
    assert compacted.loaded_offset == full.loaded_offset == len(h.log)


def test_group_tombstone_keeps_offsets_and_offset_tombstone_drops_one():
    h = Harness()
    (a,), gen = h.form_group(G, 1)
    h.commit(G, {TP: 3}, gen, a)
    log = h.log + [encode_record(GroupMetadataKey(G), None)]
    d = _load(log).describe_group(G)
    assert (d.state, d.members, [o.offset for o in d.offsets]) == ("Empty", (), [3])
    log.append(encode_record(OffsetCommitKey(G, TP.topic, TP.partition), None))
    assert _load(log).describe_group(G).state == "Dead"  # nothing left: the group is gone


def _load(log) -> GroupCoordinator:
    c = GroupCoordinator()
    for offset, (key, value) in enumerate(log):
        c.replay(key, value, offset)
    c.become_coordinator(0)
    return c


def test_an_emptied_group_whose_record_fails_goes_back_to_what_the_log_says():
    h = Harness()
    (a, b), gen = h.form_group(G, 2)
    h.auto_commit = False
    h.leave(G, a, b)
    assert (h.state(G), h.generation(G)) == ("Empty", gen + 1)
    h.complete_appends(E.NOT_ENOUGH_REPLICAS)
    assert h.c.describe_group(G) == h.fresh().describe_group(G)
    assert (h.state(G), h.generation(G)) == ("Stable", gen)
    h.auto_commit = True
    h.advance(10_000)  # the departed members' sessions end again
    assert (h.state(G), h.generation(G)) == ("Empty", gen + 1)
    assert h.c.describe_group(G) == h.fresh().describe_group(G)
