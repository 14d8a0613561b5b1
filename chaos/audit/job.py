"""The audit's Spark driver: starts (or reuses) a SparkSession, reads segment files on the workers,
runs every check whose input was given, and returns the violations, notices and figures."""

from __future__ import annotations

import os
import sys
import tempfile
import time
import zipfile
from dataclasses import asdict
from pathlib import Path

from chaos.audit import history_checks as hc
from chaos.audit import metadata_checks, segments, txn_checks
from chaos.audit import replica_checks as rc
from chaos.audit.checks import CHECKS, TXN_CHECKS, AuditResult, Violation, violation_from_row
from chaos.audit.history_scan import HistoryFrames, timeline, write_ops
from chaos.audit.inputs import ClusterFiles, load_cluster
from chaos.history import Op

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("chaos", "clients", "kraft")
LISTED_PER_CHECK = 200  # violations kept per check; the rest are counted
TASK_BYTES = 32 * 2**20  # segment bytes per scan task, about
SHUFFLE_BYTES = 16 * 2**20  # input bytes per shuffle partition, about


def _driver_memory() -> str:
    """On local[*] the executors run in the driver's JVM and cache the scanned history there
    (before the history was read in the executors, a 30-minute run's 240 MB history needed 8g
    in the driver). A third of the machine, 2g to 8g; KRAFT_AUDIT_DRIVER_MEMORY overrides."""
    if os.environ.get("KRAFT_AUDIT_DRIVER_MEMORY"):
        return os.environ["KRAFT_AUDIT_DRIVER_MEMORY"]
    try:
        total = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):
        return "2g"
    return f"{max(2, min(8, total // 3 // 2**30))}g"


DRIVER_MEMORY = _driver_memory()
_LOG4J = """rootLogger.level = error
rootLogger.appenderRef.stderr.ref = console
appender.console.type = Console
appender.console.name = console
appender.console.target = SYSTEM_ERR
appender.console.layout.type = PatternLayout
appender.console.layout.pattern = spark %p %c{1}: %m%n
# Spark sets the root level to its entry class's logger level (WARN unless configured) and
# announces it when they differ: configured equal, it stays quiet.
logger.gateway.name = org.apache.spark.api.python.PythonGatewayServer
logger.gateway.level = error
"""


class _Frames:
    """Driver rows as cached DataFrames, released after the audit. Cached because the optimizer
    would otherwise copy the rows into every plan branch that uses them (out of memory on big
    histories)."""

    def __init__(self, spark) -> None:
        self.spark, self.made, self.releasers = spark, [], []

    def __call__(self, rows, fields):
        df = hc.frame(self.spark, rows, fields).cache()
        self.made.append(df)
        return df

    def keep(self, *dfs) -> None:
        self.made.extend(dfs)

    def on_release(self, fn) -> None:
        self.releasers.append(fn)

    def release(self) -> None:
        for df in self.made:
            df.unpersist()
        for fn in self.releasers:
            fn()


def create_session(master: str = "local[*]", shuffle_partitions: int | None = None):
    """A quiet session (no UI, no progress bars, errors-only logging) whose Python workers can
    import this repo's packages; on a real cluster they are shipped as a zip."""
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    paths = os.environ.get("PYTHONPATH", "").split(os.pathsep)
    if str(ROOT) not in paths:
        os.environ["PYTHONPATH"] = os.pathsep.join([str(ROOT)] + [p for p in paths if p])
    from pyspark.sql import SparkSession

    log4j = Path(tempfile.gettempdir()) / "kraft-audit-log4j2.properties"
    log4j.write_text(_LOG4J)
    cores = os.cpu_count() or 2
    java_options = [f"-Dlog4j2.configurationFile=file:{log4j}"]
    if master.startswith("local"):
        # The driver is the executor: the JIT's optimising tier costs a short audit more CPU
        # than it ever wins back (measured: a third less CPU per audit with C1 only).
        java_options.append(os.environ.get("KRAFT_AUDIT_JIT", "-XX:TieredStopAtLevel=1"))
    spark = (
        SparkSession.builder.master(master)
        .appName("kraft-audit")
        .config("spark.ui.enabled", "false")
        .config("spark.driver.memory", DRIVER_MEMORY)
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.sql.shuffle.partitions", str(shuffle_partitions or 2 * cores))
        .config("spark.sql.execution.arrow.pyspark.enabled", "true")
        # Adaptive execution runs every shuffle stage as a job of its own: on the audit's
        # many small stages that costs more than it saves.
        .config("spark.sql.adaptive.enabled", "false")
        .config("spark.driver.extraJavaOptions", " ".join(java_options))
        .getOrCreate()
    )
    spark.sparkContext.setLogLevel("ERROR")
    if not master.startswith("local"):
        spark.sparkContext.addPyFile(_code_zip())
    return spark


def _code_zip() -> str:
    path = Path(tempfile.mkdtemp(prefix="kraft-audit-")) / "kraft-code.zip"
    with zipfile.ZipFile(path, "w") as z:
        for package in PACKAGES:
            for file in (ROOT / package).rglob("*.py"):
                z.write(file, file.relative_to(ROOT))
    return str(path)


def _files_frame(spark, files, together=None):
    """One row per segment file, in about one task per TASK_BYTES (at least one per core once
    there is something to share), largest first into the lightest task. Files with the same
    together(file) go to one task, one after another (the replicas' copies of a segment, so the
    task decodes byte-identical copies once)."""
    from pyspark.sql import Row

    total = sum(f.size for f in files)
    n = -(-total // TASK_BYTES)
    if total >= TASK_BYTES // 4:
        n = max(n, spark.sparkContext.defaultParallelism)
    groups: dict = {}
    for i, f in enumerate(files):
        groups.setdefault(together(f) if together else i, []).append(f)
    n = max(1, min(n, len(groups), 256))
    bins: list[list] = [[] for _ in range(n)]
    loads = [0] * n
    for group in sorted(groups.values(), key=lambda g: -sum(f.size for f in g)):
        i = loads.index(min(loads))
        bins[i] += [Row(**asdict(f)) for f in group]
        loads[i] += sum(f.size for f in group)
    rdd = spark.sparkContext.parallelize(bins, n).flatMap(lambda rows: rows)
    return spark.createDataFrame(rdd, segments.ddl(segments.FILE_FIELDS))


def _segment(f) -> tuple:
    """What a segment file's replicas' copies share."""
    return f.topic, f.partition, f.segment


def _high_watermarks(frame, cluster: ClusterFiles):
    """The final HW of each partition: the highest any replica checkpointed (the leader's)."""
    hw: dict[tuple[str, int], int] = {}
    for node in cluster.nodes:
        for tp, offset in node.high_watermarks.items():
            hw[tp] = max(hw.get(tp, 0), offset)
    rows = [(t, p, o) for (t, p), o in sorted(hw.items())]
    return frame(
        rows, [("topic", "string"), ("partition", "int"), ("high_watermark", "long")]
    ), bool(rows)


def _checkpoints(frame, cluster: ClusterFiles):
    rows, unreadable, problems = [], [], []
    for node in cluster.nodes:
        for (topic, p), entries in sorted(node.epoch_checkpoints.items()):
            if isinstance(entries, str) and entries != "missing":
                unreadable.append((node.node_id, topic, p))
                problems.append(
                    Violation(
                        "epoch-checkpoint",
                        f"{topic}-{p}",
                        (),
                        (node.node_id,),
                        {"problem": entries},
                        f"replica {node.node_id}: leader-epoch-checkpoint {entries}",
                    )
                )
                continue
            for i, (epoch, start) in enumerate(entries if isinstance(entries, list) else []):
                rows.append((node.node_id, topic, p, epoch, start, i == 0))
    fields = [
        ("replica", "int"),
        ("topic", "string"),
        ("partition", "int"),
        ("epoch", "int"),
        ("start_offset", "long"),
        ("first", "boolean"),
    ]
    return frame(rows, fields), frame(unreadable, fields[:3]), problems


def _segment_checks(spark, frame, cluster, result: AuditResult, history_given: bool, progress):
    """Reads the segment files on the workers; returns (violation frames, the data topics' record
    chunks if the history is given, high watermarks)."""
    from pyspark.sql import functions as F

    # a segment's copies in one task, one after another: scan_batches and log_chunks read
    # byte-identical ones once
    files = _files_frame(spark, cluster.segments, _segment)
    batches = files.mapInArrow(segments.batch_rows, segments.ddl(segments.BATCH_FIELDS)).cache()
    metadata = F.col("topic") == segments.METADATA_TOPIC
    records = (
        files.filter(metadata)
        .mapInArrow(segments.record_rows, segments.ddl(segments.RECORD_FIELDS))
        .cache()
    )
    frame.keep(batches, records)
    # the data topics' records, for the history checks: a row per file, read when they run
    log = (
        files.filter(~metadata).mapInArrow(
            segments.log_chunks,
            segments.ddl(segments.LOG_KEY_FIELDS + segments.list_fields(segments.LOG_LIST_FIELDS)),
        )
        if history_given
        else None
    )
    progress(
        f"scanning {len(cluster.segments)} segment files "
        f"({cluster.total_bytes / 2**20:.1f} MB) on {spark.sparkContext.master}"
    )
    started = time.monotonic()
    torn = F.when(
        F.col("problem_kind") == "torn-tail",
        F.struct("replica", "topic", "partition", "segment", "problem"),
    )
    totals = batches.agg(
        F.count("base_offset").alias("batches"),
        F.sum("records_count").alias("records"),
        F.collect_list(torn).alias("torn"),
    ).collect()[0]
    meta_rows = records.collect()
    scan = time.monotonic() - started
    result.stats.update(
        batches=totals["batches"],
        records=totals["records"] or 0,
        segment_bytes=cluster.total_bytes,
        scan_seconds=round(scan, 2),
        mb_per_s=round(cluster.total_bytes / 2**20 / scan, 1) if scan else None,
    )
    result.stats["torn_replicas"] = sorted({row["replica"] for row in totals["torn"]})
    for row in totals["torn"]:
        result.notices.append(
            f"replica {row['replica']} {row['topic']}-{row['partition']}: torn "
            f"tail in segment {row['segment']} ({row['problem']}); the log "
            f"engine cuts it on restart"
        )

    nodes = cluster.nodes
    result.violations += metadata_checks.check_metadata(meta_rows, nodes)
    if meta_rows or any(n.quorum_state for n in nodes):
        result.checks_run += ["metadata-divergence", "multiple-leaders"]
    facts = metadata_checks.metadata_facts(meta_rows, nodes, result.notices)

    valid = batches.filter(F.col("problem_kind").isNull())
    broken = rc.damaged(batches)
    hw, have_hw = _high_watermarks(frame, cluster)
    checkpoints, unreadable, problems = _checkpoints(frame, cluster)
    result.violations += problems
    compacted = facts.compacted_topics()
    frames = [
        rc.integrity(batches),
        rc.order(valid, broken, compacted),
        rc.epoch_checkpoint(valid, broken.unionByName(unreadable), checkpoints, compacted),
        rc.divergence(valid, hw, compacted),
        rc.producer_sequences(valid, broken, compacted),
    ]
    result.checks_run += [
        "batch-integrity",
        "offset-order",
        "leader-epoch-order",
        "epoch-checkpoint",
        "replica-divergence",
        "producer-sequence",
    ]
    if not have_hw:
        result.notices.append("no replication-offset-checkpoint found: replicas were not compared")
    if facts.found:
        rows = [(t, p, lo, hi) for (t, p), (lo, hi) in sorted(facts.epochs.items())]
        assigned = frame(
            rows, [("topic", "string"), ("partition", "int"), ("lo", "int"), ("hi", "int")]
        )
        frames.append(rc.epoch_assigned(valid, assigned))
        result.checks_run.append("epoch-not-assigned")
    else:
        result.notices.append("no metadata log found: leader epochs were not checked against it")
    return frames, log, hw


def run_audit(
    spark,
    data: list[str] | None = None,
    history: str | Path | list[Op] | None = None,
    progress=lambda line: None,
    txn_history: str | Path | None = None,
) -> AuditResult:
    """Every check whose input is given: segment checks need `data`, history checks `history`
    (the history.jsonl path, read in the executors; a list of ops is written to one first),
    the transactional checks `txn_history` (txn_history.jsonl)."""
    result = AuditResult()
    started = time.monotonic()
    cluster = load_cluster(data) if data else None
    if isinstance(history, list):
        with tempfile.TemporaryDirectory(prefix="kraft-audit-") as tmp:
            path = Path(tmp) / "history.jsonl"
            write_ops(path, history)
            return run_audit(spark, data, path, progress, txn_history)
    # Shuffles sized to the data: a shuffle partition is one task in each of the audit's dozens
    # of small stages, so a small audit runs fastest with one. A history byte weighs about as
    # much as a segment byte.
    work = (
        (cluster.total_bytes if cluster else 0)
        + (os.path.getsize(history) if history else 0)
        + (os.path.getsize(txn_history) if txn_history else 0)
    )
    configured = spark.conf.get("spark.sql.shuffle.partitions")
    spark.conf.set(
        "spark.sql.shuffle.partitions", str(max(1, min(int(configured), -(-work // SHUFFLE_BYTES))))
    )
    frame = _Frames(spark)
    try:
        return _run(spark, frame, cluster, history, progress, result, started, txn_history)
    finally:
        frame.release()
        spark.conf.set("spark.sql.shuffle.partitions", configured)


def _run(spark, frame, cluster, history, progress, result, started, txn_history) -> AuditResult:
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    frames, log, hw = [], None, None
    if cluster:
        result.notices += cluster.notices
        progress(
            f"found {len(cluster.nodes)} node dirs, "
            f"{len({(s.replica, s.topic, s.partition) for s in cluster.segments})} partition replicas"
        )
        frames, log, hw = _segment_checks(
            spark, frame, cluster, result, history is not None, progress
        )
    if history is not None:
        progress(
            f"reading the history ({os.path.getsize(history) / 2**20:.1f} MB) on "
            f"{spark.sparkContext.master}"
        )
        h = HistoryFrames(spark, str(history))
        frame.on_release(h.release)
        result.stats.update(
            operations=h.counts.get("op", 0),
            sends=h.counts.get("send", 0),
            polled_values=h.counts.get("read", 0),
        )
        result.timeline = timeline(h.ops)
        frames.append(hc.check_history(hc.partition_rows(h.events, log, hw)))
        result.checks_run += [
            c
            for c in (
                "lost-write",
                "duplicate",
                "inconsistent-offsets",
                "aborted-read",
                "nonmonotonic-send",
                "nonmonotonic-poll",
                "poll-skip",
                "unseen",
                "commit-backwards",
            )
        ]
    if txn_history is not None:
        from chaos.txn_workload import IN_TOPIC

        ops = txn_checks.read_txn_history(spark, str(Path(txn_history).resolve()))
        frames.append(txn_checks.check_transactions(ops, IN_TOPIC))
        result.checks_run += TXN_CHECKS
    for v in result.violations:  # found on the driver, all listed
        result.totals[v.check] = result.totals.get(v.check, 0) + 1
    if frames:
        progress(f"running {len(result.checks_run)} checks")
        union = frames[0]
        for f in frames[1:]:
            union = union.unionByName(f)
        w = Window.partitionBy("check").orderBy("partition", "offset_lo", "message")
        ranked = (
            union.withColumn("n", F.row_number().over(w))
            .withColumn("total", F.count("*").over(Window.partitionBy("check")))
            .filter(F.col("n") <= LISTED_PER_CHECK)
        )
        counted = set()
        for row in ranked.collect():
            result.violations.append(violation_from_row(row))
            if row["check"] not in counted:
                counted.add(row["check"])
                result.totals[row["check"]] = result.totals.get(row["check"], 0) + row["total"]
    order = {name: i for i, name in enumerate(CHECKS)}
    result.violations.sort(key=lambda v: (order.get(v.check, 99), v.partition or "", v.offsets))
    result.checks_run = [c for c in CHECKS if c in set(result.checks_run)]
    result.stats["seconds"] = round(time.monotonic() - started, 2)
    return result
