"""The per-partition history checks (chaos/audit/partition_checks.py) against the Spark SQL checks
they replaced (sql_history_checks.py): the same violation rows, values and messages on random
histories full of every history anomaly, with and without replica logs; and the same timeline."""

import random
from collections import Counter

import pytest
from audit_helpers import MS

from chaos.audit import history_checks as hc
from chaos.audit.checks import violation_from_row
from chaos.audit.history_scan import HistoryFrames, timeline, write_ops
from chaos.audit.segments import RECORD_FIELDS, ddl
from chaos.history import Op

PARTITIONS = ("t-0", "t-1", "u-0")
WRITERS = ("w0", "w1", "w2")
READERS = ("r0", "r1", "r2")
GROUPS = ("g", "h")


def random_history(rng: random.Random, junk: bool = True) -> tuple[list[Op], dict[str, list[int]]]:
    """Ops with every kind of history anomaly, and each partition's acknowledged values in
    offset order (the "true" log the replicas are made from). junk: some polled values are
    strings, not workload values (a history pyarrow's JSON reader cannot hold in a column)."""
    logs = {p: [] for p in PARTITIONS}
    ops, t, next_value = [], 0, 1000
    failed = []

    def at():
        nonlocal t
        t += MS
        return t

    for _ in range(rng.randint(150, 250)):
        roll = rng.random()
        if roll < 0.45:  # a send
            w, p = rng.choice(WRITERS), rng.choice(PARTITIONS)
            v = next_value if rng.random() > 0.05 else rng.choice(sum(logs.values(), [0]))
            next_value += 1
            ops.append(Op(w, "invoke", "send", at(), v, p))
            outcome = rng.choices(("ok", "fail", "info"), (8, 1, 1))[0]
            if outcome == "ok":
                offset = len(logs[p])
                if rng.random() < 0.08 and offset:  # a wrong or repeated offset
                    offset = rng.randrange(offset + 2)
                if rng.random() > 0.05:  # else lost: no poll, no log has it
                    logs[p].append(v)
                ops.append(Op(w, "ok", "send", at(), v, p, offset))
            else:
                if outcome == "fail":
                    failed.append((p, v))
                ops.append(Op(w, outcome, "send", at(), v, p))
        elif roll < 0.55:  # a consumer reset
            r = rng.choice(READERS)
            mode = rng.choice(("assign", "subscribe"))
            target = list(PARTITIONS) if mode == "assign" else ["t", "u"]
            ops += [Op(r, "invoke", mode, at(), target), Op(r, "ok", mode, at(), target)]
        elif roll < 0.85:  # a poll
            r = rng.choice(READERS)
            value, rebalanced = {}, ()
            for p in rng.sample(PARTITIONS, rng.randint(1, 2)):
                if not logs[p]:
                    continue
                start = rng.randrange(len(logs[p]))
                pairs = []
                for o in range(start, min(len(logs[p]), start + rng.randint(1, 6))):
                    if rng.random() < 0.1:
                        continue  # a skip
                    v = logs[p][o]
                    if rng.random() < 0.04:
                        v = rng.randint(0, 3000)  # another value at the offset
                    if rng.random() < 0.03 and failed:
                        v = rng.choice(failed)[1]  # an aborted send's value
                    if rng.random() < 0.02 and junk:
                        v = "not-an-int"  # no workload value
                    pairs.append([o, v])
                if rng.random() < 0.1:
                    pairs.reverse()  # offsets going backwards
                value[p] = pairs
            if rng.random() < 0.1:
                rebalanced = (rng.choice(PARTITIONS),)
            ops += [
                Op(r, "invoke", "poll", at()),
                Op(r, "ok", "poll", at(), value, rebalanced=rebalanced),
            ]
        else:  # a commit
            g, p = rng.choice(GROUPS), rng.choice(PARTITIONS)
            c = rng.randint(0, len(logs[p]) + 2)
            ops += [
                Op(f"c-{g}", "invoke", "commit", at(), {p: c}, group=g),
                Op(f"c-{g}", "ok", "commit", at(), {p: c}, group=g),
            ]
    return ops, logs


def random_log(rng: random.Random, logs: dict[str, list[int]]):
    """Record rows (RECORD_FIELDS) of three replicas of each partition, each a little wrong at
    times (another value, a record that is not a workload value, a missing tail), and a topic
    the history never touches; and the high watermarks."""
    records, hws = [], []
    for name, values in list(logs.items()) + [("other-0", [1, 2, 3])]:
        topic, _, p = name.rpartition("-")
        hws.append((topic, int(p), rng.randint(0, len(values) + 1)))
        for replica in (1, 2, 3):
            for o, v in enumerate(values[: len(values) - rng.choice((0, 0, 1))]):
                if rng.random() < 0.03:
                    v = rng.randint(0, 3000)
                if rng.random() < 0.02:
                    v = None
                records.append((replica, topic, int(p), o, 0, False, v, None))
    return records, hws


def _violations(df) -> Counter:
    out = Counter()
    for row in df.collect():
        v = violation_from_row(row)
        out[
            (v.check, v.partition, v.offsets, v.replicas, repr(sorted(v.values.items())), v.message)
        ] += 1
    return out


def _rows(events):
    """The scan's chunk rows as the row-per-event frame the SQL checks read."""
    from pyspark.sql import functions as F

    from chaos.audit.history_scan import EVENT_FIELDS

    names = [n for n, _ in EVENT_FIELDS]
    # a field the kind lacks is a null list: a null per event, as the SQL checks read it
    full = events.select(
        "kind",
        "key",
        *[
            F.coalesce(n, F.array_repeat(F.lit(None).cast(kind), F.size("idx"))).alias(n)
            for n, kind in EVENT_FIELDS
        ],
    )
    return full.select("kind", F.col("key").alias("partition"), F.inline(F.arrays_zip(*names)))


def _log_chunks(spark, records):
    """Record rows as the segments' log chunks: a row per replica's partition."""
    from chaos.audit.segments import LOG_KEY_FIELDS, LOG_LIST_FIELDS, list_fields

    files: dict = {}
    for replica, topic, p, offset, _, _, value, _ in records:
        chunk = files.setdefault((replica, topic, p), ([], []))
        chunk[0].append(offset)
        chunk[1].append(value)
    rows = [("log", f"{t}-{p}", r, t, p, o, v) for (r, t, p), (o, v) in files.items()]
    return spark.createDataFrame(rows, ddl(LOG_KEY_FIELDS + list_fields(LOG_LIST_FIELDS)))


def _columnar(tmp_path, ops) -> bool:
    """Whether the scan reads these ops with pyarrow's JSON reader, not line by line."""
    from chaos.audit.history_columns import Events, Unfit, events

    path = tmp_path / "columnar.jsonl"
    write_ops(path, ops)
    try:
        events(path.read_bytes(), 0, Events())
    except Unfit:
        return False
    return True


def _both(spark, tmp_path, ops, log):
    import sql_history_checks as old

    path = tmp_path / "history.jsonl"
    write_ops(path, ops)
    h = HistoryFrames(spark, str(path))
    try:
        records = hw = chunks = None
        if log is not None:
            records = spark.createDataFrame(log[0], ddl(RECORD_FIELDS))
            chunks = _log_chunks(spark, log[0])
            hw = spark.createDataFrame(log[1], "topic string, partition int, high_watermark long")
        ev = _rows(h.events)
        kind = ev["kind"]
        sends = ev.filter(kind == "send").select(
            "idx", "process", "type", "partition", "value", "offset"
        )
        commits = ev.filter(kind == "commit").select(
            "idx", "process", "group", "partition", "offset"
        )
        reads = old.sessions(ev)
        before = _violations(
            old.check_history(sends, reads, commits, old.log_values(records, hw, sends, reads))
        )
        after = _violations(hc.check_history(hc.partition_rows(h.events, chunks, hw)))
        ops = ev.filter(kind == "op").select("idx", "process", "type", "f", "time")
        assert timeline(h.ops) == old.timeline(ops)
    finally:
        h.release()
    return before, after


@pytest.mark.parametrize("seed", range(6))
def test_same_violations_as_the_sql_checks(spark, tmp_path, seed):
    """Seeds 0-3 hold string values, which send the scan line by line; 4 and 5 do not, and are
    read by pyarrow's JSON reader (history_columns)."""
    rng = random.Random(seed)
    ops, logs = random_history(rng, junk=seed < 4)
    assert _columnar(tmp_path, ops) == (seed >= 4)
    before, after = _both(spark, tmp_path, ops, random_log(rng, logs) if seed % 2 else None)
    assert after == before
    # the histories are meant to hold every anomaly: a test that compares nothing proves nothing
    assert {k[0] for k in before} == {
        "lost-write",
        "duplicate",
        "inconsistent-offsets",
        "aborted-read",
        "nonmonotonic-send",
        "nonmonotonic-poll",
        "poll-skip",
        "unseen",
        "commit-backwards",
    }
