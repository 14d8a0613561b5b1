"""Fixtures for the CLI tests: in-memory stand-ins for Producer, Consumer and Admin with the client
library's API swapped into the CLI's factories (`fakes`), and the parser the integrator builds."""

from __future__ import annotations

import argparse
import dataclasses
from typing import Any, NamedTuple

import pytest

from clients.cli import common, run_command
from clients.errors import ErrorCode, KraftError
from clients.group_admin import GroupDescription, GroupListing, GroupOffset, MemberDescription
from entry import commands


class TP(NamedTuple):
    topic: str
    partition: int


class Meta(NamedTuple):
    topic: str
    partition: int
    offset: int
    timestamp: int


class Record(NamedTuple):
    topic: str
    partition: int
    offset: int
    timestamp: int
    key: bytes | None
    value: bytes | None
    headers: list


class NewTopic(NamedTuple):
    name: str
    num_partitions: int
    replication_factor: int
    configs: dict


class PartitionInfo(NamedTuple):
    partition: int
    leader: int
    leader_epoch: int
    replicas: list
    isr: list


class TopicDescription(NamedTuple):
    name: str
    partitions: list
    is_internal: bool


class ConfigEntry(NamedTuple):
    name: str
    value: str
    is_default: bool
    read_only: bool
    source: str


class PartitionReplication(NamedTuple):
    topic: str
    partition: int
    error_code: int
    error_message: str
    role: str
    leader: int
    high_watermark: int
    log_end_offset: int
    log_start_offset: int
    replica_log_end_offsets: dict


class ElectionResult(NamedTuple):
    topic: str
    partition: int
    error_code: int = 0
    error_message: str = ""


class FakeFuture:
    def __init__(self) -> None:
        self._result: Any = None
        self._exc: BaseException | None = None
        self._done = False
        self._callbacks: list = []

    def complete(self, result: Any = None, exc: BaseException | None = None) -> None:
        self._result, self._exc, self._done = result, exc, True
        for fn in self._callbacks:
            fn(self)

    def done(self) -> bool:
        return self._done

    def result(self, timeout: float | None = None) -> Any:
        if self._exc is not None:
            raise self._exc
        return self._result

    def exception(self, timeout: float | None = None) -> BaseException | None:
        return self._exc

    def add_done_callback(self, fn: Any) -> None:
        if self._done:
            fn(self)
        else:
            self._callbacks.append(fn)


class _Closing:
    closed = False

    def __enter__(self) -> Any:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def close(self) -> None:
        self.closed = True


class FakeProducer(_Closing):
    """Acknowledges each send at once (or, with `fail_from`, fails every send from that index)."""

    def __init__(
        self, bootstrap: str, partitions: list[int] = (0, 1, 2), fail_from: int = -1, **config: Any
    ) -> None:
        self.bootstrap, self.config = bootstrap, config
        self.partitions = list(partitions)
        self.fail_from = fail_from
        self.sent: list[dict] = []
        self.flushed = 0

    def partitions_for(self, topic: str) -> list[int]:
        if not self.partitions:
            raise KraftError(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"no topic {topic}")
        return self.partitions

    def send(
        self,
        topic: str,
        value: bytes | None,
        key: bytes | None = None,
        *,
        partition: int | None = None,
        headers: Any = None,
        timestamp_ms: Any = None,
    ) -> Any:
        index = len(self.sent)
        self.sent.append(
            {"topic": topic, "key": key, "value": value, "partition": partition, "headers": headers}
        )
        future = FakeFuture()
        if 0 <= self.fail_from <= index:
            future.complete(exc=KraftError(ErrorCode.NOT_ENOUGH_REPLICAS, "isr too small"))
        else:
            future.complete(Meta(topic, partition or 0, index, 1_700_000_000_000 + index))
        return future

    def send_batch(
        self,
        topic: str,
        values: list,
        keys: Any = None,
        *,
        partition: int | None = None,
        timestamp_ms: Any = None,
        on_delivery: Any = None,
    ) -> Any:
        """One future for the whole call, failed if any record failed (as RecordsFuture)."""
        futures = [
            self.send(topic, v, None if keys is None else keys[i], partition=partition)
            for i, v in enumerate(values)
        ]
        future = FakeFuture()
        failed = [f.exception() for f in futures if f.exception() is not None]
        if failed:
            future.complete(exc=failed[0])
        else:
            future.complete([f.result() for f in futures])
        return future

    def flush(self, timeout: float | None = None) -> None:
        self.flushed += 1


class FakeConsumer(_Closing):
    """Serves `records` in order, `batch` per poll; remembers assign/seek calls."""

    def __init__(
        self,
        bootstrap: str,
        records: list[Record] = (),
        partitions: list[int] = (0,),
        batch: int = 2,
        **config: Any,
    ) -> None:
        self.bootstrap, self.config = bootstrap, config
        self.records = list(records)
        self.partitions = list(partitions)
        self.batch = batch
        self.assigned: list = []
        self.seeks: list = []
        self.polls = 0
        self.subscribed: list | None = None

    def partitions_for_topic(self, topic: str) -> list[int]:
        return self.partitions

    def assign(self, tps: list) -> None:
        self.assigned = list(tps)

    def subscribe(self, topics: list) -> None:
        """Like a group of one: every partition is this member's at once."""
        self.subscribed = list(topics)
        self.assigned = [TP(t, p) for t in topics for p in self.partitions]

    def assignment(self) -> set:
        return set(self.assigned)

    def seek(self, tp: Any, offset: int) -> None:
        self.seeks.append((tp, offset))

    def seek_to_beginning(self, *tps: Any) -> None:
        self.seeks.extend((tp, "earliest") for tp in tps)

    def seek_to_end(self, *tps: Any) -> None:
        self.seeks.extend((tp, "latest") for tp in tps)

    def position(self, tp: Any) -> int:
        return 0

    def end_offsets(self, tps: list) -> dict:
        return {tp: sum(1 for r in self.records if r.partition == tp.partition) for tp in tps}

    def poll(self, timeout_ms: int = 1000, max_records: int | None = None) -> list[Record]:
        self.polls += 1
        n = self.batch if max_records is None else min(self.batch, max_records)
        out, self.records = self.records[:n], self.records[n:]
        return out


class FakeAdmin(_Closing):
    def __init__(self, bootstrap: str) -> None:
        self.bootstrap = bootstrap
        self.topics: dict[str, TopicDescription] = {}
        self.configs: dict[str, dict] = {}
        self.calls: list = []
        self.replication: dict = {}
        self.election_results: list | None = None
        self.groups: dict[str, GroupDescription] = {}
        self.group_offsets: dict[str, dict] = {}
        self.time_offsets: dict = {}  # {tp: offset} answers for a timestamp

    def add_topic(
        self, name: str, partitions: int = 1, replicas: list = (1,), internal: bool = False
    ) -> None:
        self.topics[name] = TopicDescription(
            name,
            [
                PartitionInfo(p, replicas[0], 3, list(replicas), list(replicas))
                for p in range(partitions)
            ],
            internal,
        )
        self.configs[name] = {
            "retention.ms": ConfigEntry("retention.ms", "604800000", True, False, "DEFAULT_CONFIG")
        }

    def create_topics(self, new_topics: list) -> None:
        for t in new_topics:
            self.calls.append(("create", t))
            if t.name in self.topics:
                raise KraftError(ErrorCode.TOPIC_ALREADY_EXISTS, f"{t.name} exists")
            self.add_topic(t.name, max(t.num_partitions, 1))

    def list_topics(self) -> list[str]:
        return list(self.topics)

    def describe_topics(self, names: list | None = None) -> list:
        if names and any(n not in self.topics for n in names):
            raise KraftError(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, "unknown topic")
        return [t for n, t in self.topics.items() if names is None or n in names]

    def delete_topics(self, names: list) -> None:
        for n in names:
            if n not in self.topics:
                raise KraftError(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, "unknown topic")
            del self.topics[n]

    def describe_configs(self, topic: str) -> dict:
        return self.configs[topic]

    def alter_configs(self, topic: str, set: dict = None, delete: list = None) -> None:
        if topic not in self.topics:
            raise KraftError(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, "unknown topic")
        self.calls.append(("alter", topic, dict(set or {}), list(delete or [])))

    def create_partitions(self, totals: dict) -> None:
        self.calls.append(("partitions", totals))

    def list_offsets(self, specs: dict) -> dict:
        return {
            tp: (
                0
                if spec == "earliest"
                else 10 * (tp.partition + 1)
                if spec == "latest"
                else self.time_offsets.get(tp, -1)
            )
            for tp, spec in specs.items()
        }

    def add_group(
        self, group_id: str, state: str = "Stable", members: tuple = (), offsets: dict | None = None
    ) -> None:
        """A group with `members` ((member_id, client_id, [(topic, p), ...]), ...) and
        committed `offsets` ({(topic, p): offset}); log ends as list_offsets says."""
        described = tuple(
            MemberDescription(m, None, c, "/127.0.0.1", tuple(TP(*tp) for tp in tps))
            for m, c, tps in members
        )
        self.group_offsets[group_id] = {TP(*tp): o for tp, o in (offsets or {}).items()}
        self.groups[group_id] = GroupDescription(
            group_id,
            state,
            "consumer",
            "range",
            3,
            members[0][0] if members else "",
            1,
            described,
            (),
        )

    def list_groups(self, states: list | None = None) -> list:
        return [
            GroupListing(g.group_id, g.state, "consumer", 1)
            for g in sorted(self.groups.values(), key=lambda g: g.group_id)
            if not states or g.state in states
        ]

    def describe_groups(self, group_ids: list, include_offsets: bool = True) -> list:
        out = []
        for gid in group_ids:
            g = self.groups.get(gid)
            if g is None:
                out.append(GroupDescription(gid, "Dead", "", "", 0, "", 1, (), ()))
                continue
            offsets = ()
            if include_offsets:
                offsets = tuple(
                    GroupOffset(
                        tp.topic,
                        tp.partition,
                        o,
                        10 * (tp.partition + 1),
                        10 * (tp.partition + 1) - o,
                    )
                    for tp, o in sorted(self.group_offsets[gid].items())
                )
            out.append(dataclasses.replace(g, offsets=offsets))
        return out

    def delete_groups(self, group_ids: list) -> None:
        for gid in group_ids:
            self.calls.append(("delete-group", gid))
            g = self.groups.get(gid)
            if g is None:
                raise KraftError(
                    ErrorCode.GROUP_ID_NOT_FOUND,
                    f"group '{gid}' does not exist (see: kraft group list)",
                )
            if g.members:
                raise KraftError(ErrorCode.NON_EMPTY_GROUP, f"group '{gid}' has active members")
            del self.groups[gid]

    def list_group_offsets(self, group_id: str) -> dict:
        return dict(self.group_offsets.get(group_id, {}))

    def alter_group_offsets(self, group_id: str, offsets: dict) -> None:
        self.calls.append(("alter-offsets", group_id, dict(offsets)))
        self.group_offsets.setdefault(group_id, {}).update(offsets)

    def describe_partitions(self, tps: list) -> dict:
        """Partition p's leader: high watermark 10*(p+1), log end 2 past it, the last replica
        one behind the high watermark; set `replication[tp]` to answer otherwise."""
        out = {}
        for tp in tps:
            if tp in self.replication:
                out[tp] = self.replication[tp]
                continue
            info = self.topics[tp.topic].partitions[tp.partition]
            hw = 10 * (tp.partition + 1)
            ends = {r: hw + 2 for r in info.replicas}
            ends[info.replicas[-1]] = hw - 1
            out[tp] = PartitionReplication(
                tp.topic, tp.partition, 0, "", "leader", info.leader, hw, hw + 2, 0, ends
            )
        return out

    def elect_leaders(self, election_type: str = "preferred", partitions: list = None) -> list:
        """Elects every partition asked for; `election_results` (if set) is the answer instead."""
        self.calls.append(
            ("elect", election_type, None if partitions is None else list(partitions))
        )
        if self.election_results is not None:
            return list(self.election_results)
        return [ElectionResult(tp.topic, tp.partition) for tp in partitions or ()]


class Fakes:
    """Which fake each factory hands out; tests configure these before running a command."""

    Record = Record
    TP = TP
    PartitionReplication = PartitionReplication
    ElectionResult = ElectionResult

    def __init__(self) -> None:
        self.admin = FakeAdmin("fake:9092")
        self.producer_options: dict = {}
        self.consumer_options: dict = {}
        self.producer: FakeProducer | None = None
        self.consumer: FakeConsumer | None = None

    def make_producer(self, bootstrap: str, **config: Any) -> FakeProducer:
        self.producer = FakeProducer(bootstrap, **self.producer_options, **config)
        return self.producer

    def make_consumer(self, bootstrap: str, **config: Any) -> FakeConsumer:
        self.consumer = FakeConsumer(bootstrap, **self.consumer_options, **config)
        return self.consumer


@pytest.fixture
def fakes(monkeypatch: pytest.MonkeyPatch) -> Fakes:
    f = Fakes()
    monkeypatch.setattr(common, "make_producer", f.make_producer)
    monkeypatch.setattr(common, "make_consumer", f.make_consumer)
    monkeypatch.setattr(common, "make_admin", lambda bootstrap: f.admin)
    monkeypatch.setattr(
        common,
        "new_topic",
        lambda name, p=-1, r=-1, configs=None: NewTopic(name, p, r, configs or {}),
    )
    monkeypatch.setattr(common, "topic_partition", TP)
    return f


def build_parser() -> argparse.ArgumentParser:
    return commands.build_parser(packages=("clients",))


def run(argv: list[str]) -> int:
    return run_command(build_parser().parse_args(argv))


@pytest.fixture
def parser() -> argparse.ArgumentParser:
    return build_parser()


@pytest.fixture
def cli() -> Any:
    """cli(["topic", "list"]) parses like `kraft topic list` and returns the exit code."""
    return run
