"""The transactional chaos workload: consume-transform-produce with exactly-once.

A feeder writes unique ints into the input topic (idempotent, acks=all). Processors, each a
read_committed member of one consumer group with a transactional producer, poll the input and,
per poll, in one transaction: copy every record to the output topic's same partition as
"<txn id>/<input partition>:<input offset>:<value>", send the next input offsets to the
transaction, then commit (or, one time in ABORT_EVERY, abort on purpose). Observers read the
output read_committed and record every poll. At the end a read_committed drain of the output, a
drain of the input and the group's committed offsets go into the same history, which the audit's
transactional checks read (chaos/audit/txn_checks.py).

History file (`txn_history.jsonl`), one JSON object a line, Jepsen-style invoke/completion pairs:
    process  str             "processor-<n>.<life>", "observer-<n>", "drain"
    type     str             invoke, ok (committed), fail (aborted for sure), info (unknown)
    f        str             "txn": one transaction; "poll": an observer's read_committed poll;
                             "drain-out", "drain-in": the final reads; "committed": the group's
                             final offsets
    time     int             ns since the run started (the chaos history's clock)
    value                    txn: {"id", "reads": {"in-p": [offset, ...]},
                                   "writes": {"out-p": ["<output value>", ...]},
                                   "commit_at": ns when commit was asked (completions only)}
                             poll / drain-out / drain-in: {"topic-p": [[offset, value], ...]}
                             committed: {"in-p": next offset}
"""

from __future__ import annotations

import dataclasses
import random
import threading
import time
from collections.abc import Callable

from chaos.history import JsonLinesWriter
from chaos.workload import join_all, spawn_worker
from clients.admin import Admin
from clients.consumer import Consumer
from clients.errors import ErrorCode, KraftError
from clients.producer import Producer
from clients.types import TopicPartition

IN_TOPIC = "chaos-txn-in"
OUT_TOPIC = "chaos-txn-out"
GROUP = "chaos-txn-group"
ABORT_EVERY = 8  # about one transaction in eight is aborted on purpose
TXN_TIMEOUT_MS = 10_000  # a processor lost mid-transaction is aborted by its coordinator
FEED_SETTINGS = dict(
    acks="all",
    linger_ms=1,
    request_timeout_ms=3000,
    delivery_timeout_ms=10000,
    retry_backoff_ms=100,
    max_block_ms=5000,
)
READ_SETTINGS = dict(
    auto_offset_reset="earliest",
    request_timeout_ms=3000,
    fetch_max_wait_ms=200,
    isolation_level="read_committed",
)
MEMBER_SETTINGS = dict(
    group_id=GROUP,
    enable_auto_commit=False,
    session_timeout_ms=6000,
    heartbeat_interval_ms=1000,
    max_poll_interval_ms=60000,
)
# Fatal for this producer instance: another one took its transactional id, or its epoch is gone.
FENCED = frozenset(
    {
        ErrorCode.PRODUCER_FENCED,
        ErrorCode.INVALID_PRODUCER_EPOCH,
        ErrorCode.TRANSACTION_COORDINATOR_FENCED,
    }
)


class TxnRecorder:
    """The transactional history's writer, shared by the workload's threads."""

    def __init__(self, writer: JsonLinesWriter, clock_ns: Callable[[], int]) -> None:
        self._writer, self.clock_ns = writer, clock_ns
        self._lock = threading.Lock()
        self.counts: dict[str, int] = {}

    def op(self, process: str, type_: str, f: str, value=None) -> None:
        with self._lock:
            self._writer.write_json(
                {"process": process, "type": type_, "f": f, "time": self.clock_ns(), "value": value}
            )
            self.counts[f"{f}:{type_}"] = self.counts.get(f"{f}:{type_}", 0) + 1


def output_value(txn_id: str, record) -> str:
    return f"{txn_id}/{record.partition}:{record.offset}:{record.value.decode(errors='replace')}"


def _reads(records) -> dict[str, list]:
    out: dict[str, list] = {}
    for r in records:
        out.setdefault(f"{r.topic}-{r.partition}", []).append(
            [r.offset, None if r.value is None else r.value.decode(errors="replace")]
        )
    return out


@dataclasses.dataclass
class TxnWorkload:
    recorder: TxnRecorder
    bootstrap: str
    partitions: int
    stop: threading.Event
    processors: int = 2
    observers: int = 1
    rate: float = 50.0  # input records per second
    recreate_s: float = 20.0
    seed: int = 0
    security: dict = dataclasses.field(default_factory=dict)
    errors: list[str] = dataclasses.field(default_factory=list)

    def __post_init__(self) -> None:
        self.threads: list[threading.Thread] = []
        self._lives = 0
        self._lock = threading.Lock()

    def start(self) -> None:
        self._spawn("feeder", self._feeder)
        for i in range(self.processors):
            self._spawn(f"processor-{i}", lambda rng, i=i: self._processor(i, rng))
        for i in range(self.observers):
            self._spawn(f"observer-{i}", lambda rng, i=i: self._observer(i, rng))

    def _spawn(self, name: str, session) -> None:
        rng = random.Random(f"{self.seed}:{name}")
        self.threads.append(
            spawn_worker(f"chaos-txn-{name}", lambda: session(rng), self.stop, self.errors)
        )

    def join(self, timeout: float = 60.0) -> None:
        join_all(self.threads, timeout)

    def _life(self) -> int:
        with self._lock:
            self._lives += 1
            return self._lives

    # --- the feeder: unique ints per input partition ------------------------------------------

    def _feeder(self, rng: random.Random) -> None:
        client = Producer(
            self.bootstrap, client_id="chaos-txn-feeder", **FEED_SETTINGS, **self.security
        )
        n = 0
        try:
            end = time.monotonic() + self.recreate_s
            while not self.stop.is_set() and time.monotonic() < end:
                n += 1
                try:
                    client.send(IN_TOPIC, str(n).encode(), partition=rng.randrange(self.partitions))
                except KraftError:
                    pass  # the drain of the input says what was written
                self.stop.wait(1.0 / self.rate)
        finally:
            client.close(timeout=5.0)

    # --- processors: one transaction per poll ---------------------------------------------------

    def _processor(self, index: int, rng: random.Random) -> None:
        life = self._life()
        process = f"processor-{index}.{life}"
        # The same transactional id across lives: a new life fences the old one (its
        # unfinished transaction is aborted by the coordinator).
        producer = Producer(
            self.bootstrap,
            client_id=process,
            transactional_id=f"chaos-txn-{index}",
            transaction_timeout_ms=TXN_TIMEOUT_MS,
            **self.security,
        )
        consumer = Consumer(
            self.bootstrap, client_id=process, **READ_SETTINGS, **MEMBER_SETTINGS, **self.security
        )
        try:
            producer.init_transactions(30.0)
            consumer.subscribe([IN_TOPIC])
            end = time.monotonic() + self.recreate_s * rng.uniform(0.75, 1.25)
            count = 0
            while not self.stop.is_set() and time.monotonic() < end:
                records = consumer.poll(timeout_ms=500)
                if not records:
                    continue
                count += 1
                if not self._transaction(
                    f"{process}.{count}",
                    process,
                    producer,
                    consumer,
                    records,
                    abort=rng.randrange(ABORT_EVERY) == 0,
                ):
                    return  # fenced or unknown outcome: this life ends
        finally:
            consumer.close()
            producer.close(timeout=5.0)

    def _transaction(
        self,
        txn_id: str,
        process: str,
        producer: Producer,
        consumer: Consumer,
        records,
        abort: bool,
    ) -> bool:
        """One transaction over one poll's records; False when this life must end."""
        rec = self.recorder
        reads: dict[str, list] = {}
        writes: dict[str, list] = {}
        offsets: dict[TopicPartition, int] = {}
        for r in records:
            reads.setdefault(f"{r.topic}-{r.partition}", []).append(r.offset)
            writes.setdefault(f"{OUT_TOPIC}-{r.partition}", []).append(output_value(txn_id, r))
            offsets[TopicPartition(r.topic, r.partition)] = r.offset + 1
        value = {"id": txn_id, "reads": reads, "writes": writes}
        rec.op(process, "invoke", "txn", value)
        commit_at = None
        try:
            producer.begin_transaction()
            for r in records:
                producer.send(OUT_TOPIC, output_value(txn_id, r).encode(), partition=r.partition)
            producer.send_offsets_to_transaction(offsets, consumer.group_metadata(), 10.0)
            if abort:
                producer.abort_transaction(10.0)
                rec.op(process, "fail", "txn", value)
                rewind(consumer, offsets)
                return True
            commit_at = rec.clock_ns()
            producer.commit_transaction(10.0)
        except Exception as exc:  # noqa: BLE001 - any failure leaves the outcome unknown
            rec.op(process, "info", "txn", {**value, "commit_at": commit_at})
            if not (isinstance(exc, KraftError) and exc.code in FENCED):
                self.errors.append(f"{process} {txn_id}: {type(exc).__name__}: {exc}")
            return False
        rec.op(process, "ok", "txn", {**value, "commit_at": commit_at})
        return True

    # --- observers: read_committed polls of the output ------------------------------------------

    def _observer(self, index: int, rng: random.Random) -> None:
        process = f"observer-{index}.{self._life()}"
        client = Consumer(self.bootstrap, client_id=process, **READ_SETTINGS, **self.security)
        tps = [TopicPartition(OUT_TOPIC, p) for p in range(self.partitions)]
        try:
            client.assign(tps)
            client.seek_to_beginning(*tps)
            end = time.monotonic() + self.recreate_s * rng.uniform(0.75, 1.25)
            while not self.stop.is_set() and time.monotonic() < end:
                self.recorder.op(process, "invoke", "poll")
                try:
                    records = client.poll(timeout_ms=500)
                except KraftError:
                    self.recorder.op(process, "fail", "poll")
                    continue
                self.recorder.op(process, "ok", "poll", _reads(records))
        finally:
            client.close()


def rewind(consumer: Consumer, offsets: dict, clock: Callable[[], float] = time.monotonic) -> None:
    """After an abort, read again from what the group has committed (Kafka's EOS loop).
    The abort's marker may not have reached the group's offsets partition yet (the
    coordinator writes it after answering): a read_committed consumer's committed() waits
    for it, retried here past one request timeout, as faults can delay it."""
    deadline = clock() + 3 * TXN_TIMEOUT_MS / 1000
    while True:
        try:
            committed = consumer.committed(list(offsets))
            break
        except KraftError as exc:
            if exc.code != ErrorCode.UNSTABLE_OFFSET_COMMIT or clock() > deadline:
                raise
    for tp in offsets:
        start = committed.get(tp)
        if start is None:
            consumer.seek_to_beginning(tp)
        else:
            consumer.seek(tp, start)


def settled_ends(
    read_lso: Callable[[], dict],
    read_end: Callable[[], dict],
    deadline: float,
    clock: Callable[[], float],
    sleep: Callable[[float], None],
) -> tuple[dict, list[str]]:
    """The last stable offsets once no transaction is open (each equal to its partition's end),
    so a read_committed drain reaches every committed record: a processor lost mid-transaction
    holds the LSO back until its coordinator aborts it (transaction timeout plus the abort
    check), and a drain to the LSO taken before then would report the committed output behind
    it as lost. At `deadline`: the last LSO read and the partitions still open."""
    lso: dict = {}
    open_on: list[str] = []
    while True:
        try:
            lso, end = read_lso(), read_end()
            open_on = [
                f"{tp.topic}-{tp.partition}" for tp in sorted(end) if lso.get(tp, -1) < end[tp]
            ]
            if not open_on:
                return lso, []
        except KraftError:
            pass
        if clock() >= deadline:
            return lso, open_on
        sleep(0.5)


def drain_transactional(
    rec: TxnRecorder,
    bootstrap: str,
    partitions: int,
    timeout_s: float,
    security: dict | None = None,
) -> str:
    """The final reads: the output read_committed (once no transaction is open: settled_ends)
    and the input, each to its end offsets, and the group's committed offsets. Returns "" when
    complete, else what was missing."""
    security = security or {}
    deadline = time.monotonic() + timeout_s
    problems = []
    for f, topic, isolation in (
        ("drain-out", OUT_TOPIC, "read_committed"),
        ("drain-in", IN_TOPIC, "read_uncommitted"),
    ):
        settings = {**READ_SETTINGS, "isolation_level": isolation}
        client = Consumer(bootstrap, client_id=f"chaos-txn-{f}", **settings, **security)
        tps = [TopicPartition(topic, p) for p in range(partitions)]
        try:
            ends: dict = {}
            if isolation == "read_committed":
                with Consumer(
                    bootstrap,
                    client_id=f"chaos-txn-{f}-ends",
                    **{**settings, "isolation_level": "read_uncommitted"},
                    **security,
                ) as log_ends:
                    ends, open_on = settled_ends(
                        lambda: client.end_offsets(tps),
                        lambda: log_ends.end_offsets(tps),
                        deadline,
                        time.monotonic,
                        time.sleep,
                    )
                if open_on:
                    problems.append(f"transactions still open on {', '.join(open_on)}")
            while not ends and time.monotonic() < deadline:
                try:
                    ends = client.end_offsets(tps)
                except KraftError:
                    time.sleep(0.5)
            client.assign(tps)
            client.seek_to_beginning(*tps)
            behind = set(tps) if ends else set()
            while behind and time.monotonic() < deadline:
                records = client.poll(timeout_ms=500)
                if records:
                    rec.op("drain", "ok", f, _reads(records))
                behind = {tp for tp in behind if client.position(tp) < ends[tp]}
            if not ends or behind:
                problems.append(f"{topic} not read to its end in {timeout_s:g} s")
        finally:
            client.close()
    try:
        with Admin(bootstrap, request_timeout_ms=5000, **security) as admin:
            offsets = admin.list_group_offsets(GROUP)
        rec.op(
            "drain",
            "ok",
            "committed",
            {f"{tp.topic}-{tp.partition}": o for tp, o in sorted(offsets.items())},
        )
    except KraftError as exc:
        problems.append(f"committed offsets of {GROUP}: {exc}")
    return "; ".join(problems)
