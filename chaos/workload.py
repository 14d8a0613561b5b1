"""The chaos workload: idempotent acks=all producers writing unique ints per partition, consumers
that assign every partition and record each poll, members of one consumer group that commit what
they polled, and the final drain; all into chaos.history."""

from __future__ import annotations

import collections
import dataclasses
import queue
import random
import threading
import time
from collections.abc import Callable

from chaos.history import JsonLinesWriter, Op
from clients.consumer import Consumer, ConsumerRebalanceListener
from clients.errors import ErrorCode, KraftError
from clients.producer import Producer
from clients.types import TopicPartition

# Each logical process has at most one op in flight (the history's rule), so one producer client
# carries several processes (slots) to keep a few sends overlapping. A send that fails in any way
# after it was handed to the client is `info`, not `fail`: a timed-out or retried batch may still
# have been appended, and a `fail` the log contradicts would be reported as an aborted read.
DRAIN_PROCESS = "drain"
CLOSE_TIMEOUT_S = 5.0
PRODUCER_SETTINGS = dict(
    acks="all",
    linger_ms=1,
    request_timeout_ms=3000,
    delivery_timeout_ms=10000,
    retry_backoff_ms=100,
    max_block_ms=5000,
)
CONSUMER_SETTINGS = dict(
    auto_offset_reset="earliest", request_timeout_ms=3000, fetch_max_wait_ms=200
)
GROUP = "chaos-group"
# Kafka's shortest session (group.min.session.timeout.ms) so a member cut off by a fault is
# replaced within a fault window; commits are the workload's own, after each poll.
GROUP_SETTINGS = dict(
    group_id=GROUP,
    enable_auto_commit=False,
    session_timeout_ms=6000,
    heartbeat_interval_ms=1000,
    max_poll_interval_ms=60000,
)
# A commit that failed this way certainly changed nothing; anything else may have landed.
COMMIT_REFUSED = frozenset(
    {
        ErrorCode.ILLEGAL_GENERATION,
        ErrorCode.UNKNOWN_MEMBER_ID,
        ErrorCode.REBALANCE_IN_PROGRESS,
        ErrorCode.FENCED_INSTANCE_ID,
    }
)


class Recorder:
    """The history writer shared by every worker thread: one clock, one lock, op counters."""

    def __init__(self, writer: JsonLinesWriter, clock_ns: Callable[[], int]) -> None:
        self._writer, self.clock_ns = writer, clock_ns
        self._lock = threading.Lock()
        self._next_process = 0
        self.counts: collections.Counter = collections.Counter()  # (f, type) -> ops
        self.last_ok_send_ns: int | None = None

    def new_process(self) -> int:
        with self._lock:
            self._next_process += 1
            return self._next_process

    def op(
        self,
        process,
        type_: str,
        f: str,
        value=None,
        partition: str | None = None,
        offset: int | None = None,
        group: str | None = None,
        rebalanced=(),
    ) -> None:
        with self._lock:
            now = self.clock_ns()
            self._writer.write(
                Op(process, type_, f, now, value, partition, offset, group, tuple(rebalanced))
            )
            self.counts[(f, type_)] += 1
            if f == "send" and type_ == "ok":
                self.last_ok_send_ns = now


class Values:
    """The next unique value of each partition, shared by all producers."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._next: collections.Counter = collections.Counter()

    def next(self, partition: int) -> int:
        with self._lock:
            self._next[partition] += 1
            return self._next[partition]


@dataclasses.dataclass
class Workload:
    recorder: Recorder
    bootstrap: str
    topic: str
    partitions: int
    stop: threading.Event
    recreate_s: float = 10.0
    rate: float = 100.0  # sends per second over all producers
    producers: int = 3
    slots: int = 3  # logical processes per producer client
    consumers: int = 2
    group_members: int = 2
    seed: int = 0
    errors: list[str] = dataclasses.field(default_factory=list)
    # Security options (kafka-python's names) of every client; empty on a PLAINTEXT cluster.
    security: dict = dataclasses.field(default_factory=dict)
    # The producers' batch.size; 1 makes every record a full batch of its own, so the idempotent
    # producer keeps up to 5 requests of one partition in flight (None: the client's default).
    batch_size: int | None = None

    def __post_init__(self) -> None:
        self.values = Values()
        self.threads: list[threading.Thread] = []

    def name(self, p: int) -> str:
        return f"{self.topic}-{p}"

    def start(self) -> None:
        for i in range(self.producers):
            self._spawn(f"producer-{i}", self._producer, random.Random(f"{self.seed}:p{i}"))
        for i in range(self.consumers):
            self._spawn(f"consumer-{i}", self._consumer, random.Random(f"{self.seed}:c{i}"))
        for i in range(self.group_members):
            self._spawn(f"member-{i}", self._group_member, random.Random(f"{self.seed}:g{i}"))

    def _spawn(
        self, name: str, session: Callable[[random.Random], None], rng: random.Random
    ) -> None:
        self.threads.append(
            spawn_worker(f"chaos-{name}", lambda: session(rng), self.stop, self.errors)
        )

    def join(self, timeout: float = 60.0) -> None:
        join_all(self.threads, timeout)

    def _session_end(self, rng: random.Random) -> float:
        # Jittered, so the clients of different workers are not all recreated at once.
        return time.monotonic() + self.recreate_s * rng.uniform(0.75, 1.25)

    # --- producers --------------------------------------------------------------------------

    def _producer(self, rng: random.Random) -> None:
        """One client's life: its slots send until recreate time, then close (flushing)."""
        rec = self.recorder
        done: queue.Queue = queue.Queue()
        batching = {} if self.batch_size is None else {"batch_size": self.batch_size}
        client = Producer(
            self.bootstrap,
            client_id="chaos-producer",
            **PRODUCER_SETTINGS,
            **batching,
            **self.security,
        )
        gap = self.slots * self.producers / self.rate
        slots = {s: rec.new_process() for s in range(self.slots)}
        pending: dict[int, tuple[int, int]] = {}  # slot -> (partition, value)
        due = {s: time.monotonic() + rng.uniform(0, gap) for s in slots}
        end = self._session_end(rng)
        try:
            while not self.stop.is_set() and time.monotonic() < end:
                for s in slots:
                    if s not in pending and time.monotonic() >= due[s]:
                        self._send(
                            client, s, slots[s], rng.randrange(self.partitions), pending, done
                        )
                try:
                    s, future = done.get(timeout=0.02)
                except queue.Empty:
                    continue
                self._complete(s, future, slots, pending)
                due[s] = time.monotonic() + gap
        finally:
            try:
                client.close(timeout=CLOSE_TIMEOUT_S)
            except Exception as exc:
                self.errors.append(f"producer close: {type(exc).__name__}: {exc}")
            deadline = time.monotonic() + CLOSE_TIMEOUT_S
            while pending and time.monotonic() < deadline:
                try:
                    self._complete(*done.get(timeout=0.1), slots, pending)
                except queue.Empty:
                    pass
            for s, (p, v) in pending.items():  # never answered: unknown outcome
                rec.op(slots[s], "info", "send", v, self.name(p))

    def _send(
        self, client: Producer, slot: int, process: int, p: int, pending: dict, done: queue.Queue
    ) -> None:
        v = self.values.next(p)
        self.recorder.op(process, "invoke", "send", v, self.name(p))
        try:
            future = client.send(self.topic, str(v).encode(), partition=p)
        except KraftError:  # refused before it entered the client (buffer full): not written
            self.recorder.op(process, "fail", "send", v, self.name(p))
            return
        pending[slot] = (p, v)
        future.add_done_callback(lambda f, s=slot: done.put((s, f)))

    def _complete(self, slot: int, future, slots: dict, pending: dict) -> None:
        p, v = pending.pop(slot)
        exc = future.exception()
        if exc is None:
            self.recorder.op(slots[slot], "ok", "send", v, self.name(p), future.result().offset)
        else:
            self.recorder.op(slots[slot], "info", "send", v, self.name(p))
            # Jepsen's rule: a process whose op is indeterminate is gone; its slot goes on as a
            # new process, so per-process order checks never span the unknown.
            slots[slot] = self.recorder.new_process()

    # --- consumers --------------------------------------------------------------------------

    def _consumer(self, rng: random.Random) -> None:
        process = self.recorder.new_process()
        client = Consumer(
            self.bootstrap, client_id="chaos-consumer", **CONSUMER_SETTINGS, **self.security
        )
        try:
            assign(self.recorder, process, client, self.topic, self.partitions)
            end = self._session_end(rng)
            while not self.stop.is_set() and time.monotonic() < end:
                poll(self.recorder, process, client, 500)
        finally:
            client.close()

    def _group_member(self, rng: random.Random) -> None:
        """One member's life in the group: subscribe, poll, commit the next offset of each
        partition it polled; on close its partitions go to the other members."""
        process = self.recorder.new_process()
        changed = Rebalanced()
        client = Consumer(
            self.bootstrap,
            client_id="chaos-member",
            **CONSUMER_SETTINGS,
            **GROUP_SETTINGS,
            **self.security,
        )
        try:
            self.recorder.op(process, "invoke", "subscribe", [self.topic])
            client.subscribe([self.topic], listener=changed)
            self.recorder.op(process, "ok", "subscribe", [self.topic])
            end = self._session_end(rng)
            while not self.stop.is_set() and time.monotonic() < end:
                records = poll(self.recorder, process, client, 500, changed)
                if records:
                    commit(self.recorder, process, client, records)
        finally:
            client.close()


def spawn_worker(
    name: str, session: Callable[[], None], stop: threading.Event, errors: list[str]
) -> threading.Thread:
    """A daemon thread running `session` again and again until `stop`; a session that raises
    is logged into `errors` and restarted a second later (a worker outlives any client bug)."""

    def loop() -> None:
        while not stop.is_set():
            try:
                session()
            except Exception as exc:
                errors.append(f"{name}: {type(exc).__name__}: {exc}")
                stop.wait(1.0)

    t = threading.Thread(target=loop, name=name, daemon=True)
    t.start()
    return t


def join_all(threads: list[threading.Thread], timeout: float) -> None:
    deadline = time.monotonic() + timeout
    for t in threads:
        t.join(max(0.0, deadline - time.monotonic()))


class Rebalanced(ConsumerRebalanceListener):
    """The partitions whose assignment changed (given up, lost or received) since `take`."""

    def __init__(self) -> None:
        self._names: set[str] = set()

    def _note(self, partitions) -> None:
        self._names.update(f"{tp.topic}-{tp.partition}" for tp in partitions)

    on_partitions_revoked = on_partitions_lost = on_partitions_assigned = _note

    def take(self) -> list[str]:
        names, self._names = sorted(self._names), set()
        return names


def commit(rec: Recorder, process, client: Consumer, records) -> None:
    """Commit, for each partition in `records`, the offset after the last one polled."""
    offsets: dict[TopicPartition, int] = {}
    for r in records:
        offsets[TopicPartition(r.topic, r.partition)] = r.offset + 1
    value = {f"{tp.topic}-{tp.partition}": o for tp, o in sorted(offsets.items())}
    rec.op(process, "invoke", "commit", value, group=GROUP)
    try:
        client.commit(offsets)
    except KraftError as exc:
        rec.op(
            process, "fail" if exc.code in COMMIT_REFUSED else "info", "commit", value, group=GROUP
        )
        return
    rec.op(process, "ok", "commit", value, group=GROUP)


def assign(rec: Recorder, process, client: Consumer, topic: str, partitions: int) -> None:
    tps = [TopicPartition(topic, p) for p in range(partitions)]
    names = [f"{topic}-{p}" for p in range(partitions)]
    rec.op(process, "invoke", "assign", names)
    client.assign(tps)
    client.seek_to_beginning(*tps)
    rec.op(process, "ok", "assign", names)


def poll(
    rec: Recorder, process, client: Consumer, timeout_ms: int, changed: Rebalanced | None = None
) -> list:
    """A poll into the history; a group member's also names the partitions whose assignment
    changed in it (its listener runs inside poll), which restarts their position sequence."""
    rec.op(process, "invoke", "poll")
    try:
        records = client.poll(timeout_ms=timeout_ms)
    except KraftError:
        rec.op(process, "fail", "poll")  # its rebalance, if any, goes with the next ok poll
        return []
    read: dict[str, list] = {}
    for r in records:
        read.setdefault(f"{r.topic}-{r.partition}", []).append([r.offset, _value(r.value)])
    rec.op(process, "ok", "poll", read, rebalanced=changed.take() if changed else ())
    return records


def _value(raw: bytes | None):
    try:
        return int(raw)
    except (TypeError, ValueError):
        return None if raw is None else raw.decode(errors="replace")


@dataclasses.dataclass
class DrainResult:
    complete: bool
    ends: dict[str, int]  # partition -> the end offset the drain read up to
    records: int
    note: str = ""


def drain(
    rec: Recorder,
    bootstrap: str,
    topic: str,
    partitions: int,
    timeout_s: float,
    security: dict | None = None,
) -> DrainResult:
    """A fresh consumer reads every partition from its start to its end offset (asked once the
    producers have stopped); each of its polls goes into the history as process "drain"."""
    deadline = time.monotonic() + timeout_s
    tps = [TopicPartition(topic, p) for p in range(partitions)]
    client = Consumer(bootstrap, client_id="chaos-drain", **CONSUMER_SETTINGS, **(security or {}))
    ends: dict[TopicPartition, int] = {}
    count, note = 0, ""
    try:
        while not ends and time.monotonic() < deadline:
            try:
                ends = client.end_offsets(tps)
            except KraftError as exc:
                note = f"end offsets: {exc}"
                time.sleep(0.5)
        if not ends:
            return DrainResult(False, {}, 0, note or "no broker answered ListOffsets")
        assign(rec, DRAIN_PROCESS, client, topic, partitions)
        behind = set(tps)
        while behind and time.monotonic() < deadline:
            count += len(poll(rec, DRAIN_PROCESS, client, 500))
            for tp in list(behind):
                try:
                    if client.position(tp) >= ends[tp]:
                        behind.discard(tp)
                except KraftError as exc:
                    note = f"position of {tp.topic}-{tp.partition}: {exc}"
        names = {f"{tp.topic}-{tp.partition}": o for tp, o in ends.items()}
        if behind:
            late = ", ".join(f"{tp.topic}-{tp.partition}" for tp in sorted(behind))
            return DrainResult(
                False, names, count, f"{late} not read to the end in {timeout_s:g} s"
            )
        return DrainResult(True, names, count, note)
    finally:
        client.close()
