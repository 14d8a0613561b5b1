"""The `kraft` Spark data source against a real `kraft dev` node: batch reads return exactly the
records produced (offsets, per-partition ranges, startingOffsets JSON), a streaming query
restarted from its checkpoint neither skips nor repeats, and rows written are read back."""

from __future__ import annotations

import importlib.util
import json
import pathlib

import pytest
from system_tools import require_tool

from clients.admin import Admin, NewTopic
from clients.producer import Producer

pytestmark = pytest.mark.e2e
ROOT = pathlib.Path(__file__).resolve().parents[2]


def _node_process():
    # The e2e conftest by path: importing "conftest" by name can find another directory's.
    spec = importlib.util.spec_from_file_location("_e2e_conftest", ROOT / "tests/e2e/conftest.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.NodeProcess


@pytest.fixture(scope="module")
def bootstrap(tmp_path_factory):
    """One node for the module: Spark's session start (5-10 s) is the cost to share, and the
    tests use topics of their own."""
    node = _node_process()(tmp_path_factory.mktemp("spark-node") / "node1").start()
    yield node.address
    node.stop()


@pytest.fixture(scope="module")
def spark():
    pytest.importorskip("pyspark")
    require_tool("java")
    from chaos.audit.job import create_session
    from clients.spark import register

    session = create_session("local[2]", shuffle_partitions=2)
    register(session)
    yield session
    session.stop()


def produce(bootstrap: str, topic: str, partitions: int, per_partition: int, start: int = 0):
    """Values "<topic>:<p>:<i>" with key b"k<i>" and one header, partition by partition."""
    admin = Admin(bootstrap)
    try:
        if topic not in admin.list_topics():
            admin.create_topics([NewTopic(topic, partitions, 1)])
    finally:
        admin.close()
    with Producer(bootstrap, acks="all") as p:
        for i in range(start, start + per_partition):
            for part in range(partitions):
                p.send(
                    topic,
                    f"{topic}:{part}:{i}".encode(),
                    f"k{i}".encode(),
                    partition=part,
                    headers=[("n", str(i).encode())],
                )


def read(spark, bootstrap: str, **options):
    r = spark.read.format("kraft").option("kraft.bootstrap.servers", bootstrap)
    for k, v in options.items():
        r = r.option(k, v)
    return r.load()


def test_batch_read_returns_every_record_with_its_offset_and_fields(spark, bootstrap):
    produce(bootstrap, "batch", partitions=3, per_partition=10)
    df = read(spark, bootstrap, subscribe="batch")
    assert [f.name for f in df.schema.fields] == [
        "key",
        "value",
        "topic",
        "partition",
        "offset",
        "timestamp",
        "timestampType",
        "headers",
    ]
    assert df.rdd.getNumPartitions() == 3  # one task per partition, read in executors
    rows = df.collect()
    got = sorted(
        (
            r.partition,
            r.offset,
            bytes(r.key),
            bytes(r.value),
            r.topic,
            r.timestampType,
            [(h.key, bytes(h.value)) for h in r.headers],
        )
        for r in rows
    )
    assert got == sorted(
        (p, i, f"k{i}".encode(), f"batch:{p}:{i}".encode(), "batch", 0, [("n", str(i).encode())])
        for p in range(3)
        for i in range(10)
    )
    assert all(r.timestamp is not None for r in rows)


def test_batch_read_of_offset_ranges_and_assign(spark, bootstrap):
    produce(bootstrap, "ranges", partitions=2, per_partition=10)
    df = read(
        spark,
        bootstrap,
        subscribe="ranges",
        startingOffsets=json.dumps({"ranges": {"0": 3, "1": -2}}),
        endingOffsets=json.dumps({"ranges": {"0": 7, "1": -1}}),
    )
    assert sorted((r.partition, r.offset) for r in df.select("partition", "offset").collect()) == [
        (0, o) for o in range(3, 7)
    ] + [(1, o) for o in range(10)]
    one = read(spark, bootstrap, assign=json.dumps({"ranges": [1]}), startingOffsets="latest")
    assert one.count() == 0
    one = read(spark, bootstrap, assign=json.dumps({"ranges": [1]}), minPartitions="4")
    assert one.rdd.getNumPartitions() == 4
    assert sorted(r.offset for r in one.select("offset").collect()) == list(range(10))


def test_read_committed_reads_committed_transactions_only(spark, bootstrap):
    with Admin(bootstrap) as admin:
        admin.create_topics([NewTopic("txns", 1, 1)])
    with Producer(bootstrap, transactional_id="spark-source-test") as p:
        p.init_transactions(30)
        for values, commit in (([b"c1", b"c2"], True), ([b"a1", b"a2"], False), ([b"c3"], True)):
            p.begin_transaction()
            for v in values:
                p.send("txns", v, partition=0)
            p.flush(30)  # in the log before the abort (an abort drops what is unsent)
            if commit:
                p.commit_transaction(30)
            else:
                p.abort_transaction(30)
    committed = read(spark, bootstrap, subscribe="txns", **{"isolation.level": "read_committed"})
    assert sorted(bytes(r.value) for r in committed.collect()) == [b"c1", b"c2", b"c3"]
    everything = read(spark, bootstrap, subscribe="txns")  # read_uncommitted, as Kafka
    assert sorted(bytes(r.value) for r in everything.collect()) == [
        b"a1",
        b"a2",
        b"c1",
        b"c2",
        b"c3",
    ]


def test_bad_options_fail_with_the_option_named(spark, bootstrap):
    with pytest.raises(Exception, match="startingOffsets names ranges-9"):
        read(
            spark, bootstrap, subscribe="ranges", startingOffsets=json.dumps({"ranges": {"9": 0}})
        ).collect()
    with pytest.raises(Exception, match="kraft.bootstrap.servers"):
        spark.read.format("kraft").option("subscribe", "ranges").load().collect()


def test_stream_restarted_from_its_checkpoint_neither_skips_nor_repeats(spark, bootstrap, tmp_path):
    produce(bootstrap, "stream", partitions=2, per_partition=15)
    out, checkpoint = tmp_path / "out", tmp_path / "checkpoint"

    def run_once():
        stream = (
            spark.readStream.format("kraft")
            .option("kraft.bootstrap.servers", bootstrap)
            .option("subscribe", "stream")
            .option("startingOffsets", "earliest")
            .option("maxOffsetsPerTrigger", "8")
            .load()
            .selectExpr("partition", "offset", "cast(value as string) as value")
        )
        query = (
            stream.writeStream.format("parquet")
            .option("path", str(out))
            .option("checkpointLocation", str(checkpoint))
            .start()
        )
        try:
            query.processAllAvailable()
            return [p["numInputRows"] for p in query.recentProgress if p["numInputRows"]]
        finally:
            query.stop()

    first = run_once()
    assert max(first) <= 8 and sum(first) == 30  # maxOffsetsPerTrigger held
    produce(bootstrap, "stream", partitions=2, per_partition=5, start=15)
    second = run_once()
    assert sum(second) == 10  # only what came after the restart
    rows = spark.read.parquet(str(out)).collect()
    assert sorted((r.partition, r.offset, r.value) for r in rows) == sorted(
        (p, i, f"stream:{p}:{i}") for p in range(2) for i in range(20)
    )


def test_write_then_read_back(spark, bootstrap):
    from pyspark.sql import Row

    rows = [
        Row(
            key=f"k{i}", value=f"v{i}".encode(), partition=i % 2, headers=[Row(key="h", value=b"1")]
        )
        for i in range(12)
    ]
    admin = Admin(bootstrap)
    try:
        admin.create_topics([NewTopic("written", 2, 1), NewTopic("by-column", 1, 1)])
    finally:
        admin.close()
    # one task, so the order written is the DataFrame's
    spark.createDataFrame(rows).coalesce(1).write.format("kraft").option(
        "kraft.bootstrap.servers", bootstrap
    ).option("topic", "written").mode("append").save()
    back = read(spark, bootstrap, subscribe="written").collect()
    assert sorted(
        (r.partition, bytes(r.key), bytes(r.value), [(h.key, bytes(h.value)) for h in r.headers])
        for r in back
    ) == sorted((i % 2, f"k{i}".encode(), f"v{i}".encode(), [("h", b"1")]) for i in range(12))
    # per partition, in the order written
    assert [bytes(r.value) for r in sorted(back, key=lambda r: (r.partition, r.offset))] == [
        f"v{i}".encode() for i in range(0, 12, 2)
    ] + [f"v{i}".encode() for i in range(1, 12, 2)]
    spark.createDataFrame([Row(topic="by-column", value="x")]).write.format("kraft").option(
        "kraft.bootstrap.servers", bootstrap
    ).mode("append").save()
    by_column = read(spark, bootstrap, subscribe="by-column").collect()
    assert [bytes(r.value) for r in by_column] == [b"x"]


def test_write_stream_copies_a_topic(spark, bootstrap, tmp_path):
    produce(bootstrap, "to-copy", partitions=2, per_partition=6)
    stream = (
        spark.readStream.format("kraft")
        .option("kraft.bootstrap.servers", bootstrap)
        .option("subscribe", "to-copy")
        .option("startingOffsets", "earliest")
        .load()
        .selectExpr("key", "upper(cast(value as string)) as value")
    )
    query = (
        stream.writeStream.format("kraft")
        .option("kraft.bootstrap.servers", bootstrap)
        .option("topic", "copied")
        .option("checkpointLocation", str(tmp_path / "cp"))
        .start()
    )
    try:
        query.processAllAvailable()
    finally:
        query.stop()
    copied = read(spark, bootstrap, subscribe="copied").collect()
    assert sorted(bytes(r.value) for r in copied) == sorted(
        f"TO-COPY:{p}:{i}".encode() for p in range(2) for i in range(6)
    )
