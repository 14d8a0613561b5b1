"""`kraft bench produce|consume|e2e --client kafka`: the same benchmarks run by Kafka's own
client, confluent-kafka (librdkafka), against a broker's Kafka wire listener, so kraft's two
wires can be compared as ratios within one run. confluent_kafka is imported only here, only when
asked for; the topic is still created through kraft's admin client (--bootstrap-server), so both
clients bench the same topic settings."""

from __future__ import annotations

import argparse
import json
import multiprocessing
import pathlib
import struct
import time
import uuid
from typing import Any

from clients.cli import bench
from clients.cli.common import CliError, key_value
from clients.cli.output import Progress, info, print_json
from clients.cli.stats import summarize

CLIENTS = ("kraft", "kafka")
# Each e2e value starts with its sequence number and its send time (CLOCK_MONOTONIC in ns,
# which every process on the machine shares), so the consumer process needs no clock skew
# correction and can tell a record received twice from one never received.
_STAMP = struct.Struct(">qq")
_now_ns = time.monotonic_ns


def add_options(p: argparse.ArgumentParser) -> None:
    """--client, and where Kafka's client connects; for each of the three bench leaves."""
    p.add_argument(
        "--client",
        choices=CLIENTS,
        default="kraft",
        help="kraft: kraft's own client over gRPC (default); kafka: confluent-kafka "
        "(librdkafka) over the Kafka wire listener",
    )
    p.add_argument(
        "--kafka-bootstrap",
        metavar="HOST:PORT[,...]",
        help="with --client kafka: the brokers' Kafka listener (default: the kafka_address "
        "of each broker in --data's cluster.json)",
    )
    p.add_argument(
        "--producer-props",
        type=key_value,
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="with --client kafka: a librdkafka producer setting over the bench's own "
        "(repeatable), e.g. max.in.flight=5, the Java producer's default",
    )
    p.add_argument(
        "--data",
        default="./kraft-data",
        metavar="DIR",
        help="with --client kafka and no --kafka-bootstrap: a kraft dev data dir whose "
        "cluster.json names the Kafka listeners (default ./kraft-data)",
    )


def confluent() -> Any:
    try:
        import confluent_kafka
    except ImportError:
        raise CliError(
            "--client kafka needs confluent-kafka (Kafka's librdkafka client): "
            "pip install confluent-kafka"
        ) from None
    return confluent_kafka


def kafka_bootstrap(args: argparse.Namespace) -> str:
    """--kafka-bootstrap, else the brokers' kafka_address in --data's cluster.json."""
    if args.kafka_bootstrap:
        return args.kafka_bootstrap
    path = pathlib.Path(args.data) / "cluster.json"
    try:
        doc = json.loads(path.read_text())
    except FileNotFoundError:
        raise CliError(
            f"--client kafka: {path} does not exist; give the Kafka listener with "
            "--kafka-bootstrap HOST:PORT, or --data the dir of a running kraft dev"
        ) from None
    except (OSError, ValueError) as exc:
        raise CliError(f"--client kafka: {path} is unreadable ({exc})") from None
    addresses = [n["kafka_address"] for n in doc.get("nodes", []) if n.get("kafka_address")]
    if not addresses:
        raise CliError(
            f"--client kafka: no broker in {path} has a kafka_address (a Kafka listener); "
            "give one with --kafka-bootstrap HOST:PORT"
        )
    return ",".join(addresses)


def _watermarks(consumer: Any, ck: Any, topic: str, partitions: list[int]) -> dict[int, tuple]:
    """(log start, high watermark) of each partition, asked of the leader (not cached)."""
    return {
        p: consumer.get_watermark_offsets(ck.TopicPartition(topic, p), timeout=10, cached=False)
        for p in partitions
    }


def _partitions(consumer: Any, topic: str) -> list[int]:
    meta = consumer.list_topics(topic, timeout=10).topics[topic]
    if meta.error is not None:
        raise CliError(f"topic {topic}: {meta.error.str()}")
    return sorted(meta.partitions)


def _probe(ck: Any, address: str, group: str) -> Any:
    """A consumer that only asks for metadata and offsets (it joins no group)."""
    return ck.Consumer(
        {"bootstrap.servers": address, "group.id": group, "enable.auto.commit": False}
    )


class _Failures:
    """librdkafka's delivery reports, errors only (delivery.report.only.error): a run with no
    error costs no per-record callback."""

    def __init__(self) -> None:
        self.count = 0
        self.first: Any = None

    def __call__(self, err: Any, _msg: Any) -> None:
        if err is not None:
            self.count += 1
            self.first = self.first or err


def _producer(ck: Any, conf: dict, args: argparse.Namespace) -> Any:
    """confluent-kafka's Producer with --producer-props over `conf`; a setting librdkafka
    refuses is a CliError naming it."""
    try:
        return ck.Producer({**conf, **dict(getattr(args, "producer_props", []))})
    except (ck.KafkaException, ValueError, TypeError) as exc:
        raise CliError(f"--producer-props: librdkafka refused the settings: {exc}") from None


def produce(args: argparse.Namespace) -> int:
    if args.send_batch:
        raise CliError("--send-batch is kraft's client's bulk API: not with --client kafka")
    ck = confluent()
    address = kafka_bootstrap(args)
    bench.ensure_topic(
        args.bootstrap_server,
        args.topic,
        args.partitions,
        args.replication_factor,
        bench.topic_configs(args),
    )
    payload = bench.make_payload(args.record_size)
    failures = _Failures()
    producer = _producer(
        ck,
        {
            "bootstrap.servers": address,
            "acks": bench.acks_name(args.acks),
            "linger.ms": args.linger_ms,
            "batch.size": args.batch_size,
            "compression.type": args.compression,
            "client.id": "kraft-bench-produce",
            "delivery.report.only.error": True,
            "on_delivery": failures,
        },
        args,
    )
    probe = _probe(ck, address, f"kraft-bench-{uuid.uuid4().hex[:8]}")
    progress = Progress(enabled=not args.quiet)
    try:
        partitions = _partitions(probe, args.topic)
        before = _watermarks(probe, ck, args.topic, partitions)
        topic, total, send, poll = args.topic, args.num_records, producer.produce, producer.poll
        start = window_at = bench._clock()
        window_sent = sent = 0
        while sent < total and not failures.count:
            # In steps of a thousand records, so the clock and the throttle cost nothing per
            # record; a full queue (BufferError) waits for librdkafka to send some.
            for _ in range(min(1000, total - sent)):
                while True:
                    try:
                        send(topic, payload)
                        break
                    except BufferError:
                        poll(0.005)
            sent += min(1000, total - sent)
            poll(0)
            now = bench._clock()
            if args.throughput and now < start + sent / args.throughput:
                bench._sleep(start + sent / args.throughput - now)
            if now - window_at >= 1.0:
                rate = (sent - window_sent) / (now - window_at)
                progress.update(f"{sent} records sent, {rate:,.0f} rec/s")
                window_at, window_sent = now, sent
        left = producer.flush(60)
        seconds = max(bench._clock() - start, 1e-9)
        after = _watermarks(probe, ck, args.topic, partitions)
    finally:
        probe.close()
    progress.done()
    if failures.count or left:
        raise CliError(
            f"bench stopped after {sent} records: {failures.count} failed, {left} unsent, "
            f"first: {failures.first}"
        )
    # Counted by the log end the run moved: what the broker took, not what the client sent.
    moved = sum(after[p][1] - before[p][1] for p in partitions)
    result = {
        "topic": args.topic,
        "client": "kafka",
        "records": moved,
        "sent": sent,
        "seconds": round(seconds, 3),
        "records_per_sec": round(moved / seconds, 1),
        "mb_per_sec": round(moved * args.record_size / bench.MB / seconds, 3),
        "counted": "high watermark after the run minus before it, every partition",
        "acks": bench.acks_name(args.acks),
        "record_size": args.record_size,
        "compression": args.compression,
        "partitions": len(partitions),
        "batch_size": args.batch_size,
        "linger_ms": args.linger_ms,
        "errors": 0,
    }
    bench.print_result(args, result, [], latency_columns=())
    if moved != sent:
        info(f"warning: {sent} records sent but the log end moved by {moved} (others writing?)")
        return 1
    return 0


def consume(args: argparse.Namespace) -> int:
    from clients.cli import bench_consume

    ck = confluent()
    consumer = ck.Consumer(
        {
            "bootstrap.servers": kafka_bootstrap(args),
            "group.id": f"kraft-bench-{uuid.uuid4().hex[:8]}",  # never joined: assign()
            "enable.auto.commit": False,
            "fetch.max.bytes": args.fetch_max_bytes,
            "max.partition.fetch.bytes": args.max_partition_fetch_bytes,
            "client.id": "kraft-bench-consume",
        }
    )
    progress = Progress(enabled=not args.quiet)
    ages_ms: list[float] = []
    count = nbytes = 0
    try:
        partitions = _partitions(consumer, args.topic)
        marks = _watermarks(consumer, ck, args.topic, partitions)
        if args.from_beginning:
            start_at = {p: marks[p][0] for p in partitions}
        else:
            start_at = {p: marks[p][1] for p in partitions}
        consumer.assign([ck.TopicPartition(args.topic, p, start_at[p]) for p in partitions])
        target = args.num_records or sum(marks[p][1] - start_at[p] for p in partitions)
        if not target:
            raise CliError(bench_consume._nothing_to_read(args))
        start = last = window_at = bench._clock()
        window_count = 0
        every = bench_consume.LATENCY_SAMPLE_EVERY
        while count < target:
            records = consumer.consume(min(args.max_poll_records, target - count), 1.0)
            now = bench._clock()
            if not records:
                if (now - last) * 1000 >= args.timeout_ms:
                    break
                continue
            last = now
            bad = [r.error() for r in records if r.error() is not None]
            if bad:
                raise CliError(f"the consumer failed: {bad[0].str()}")
            polled_ms = bench_consume._wall_ms()
            ages_ms.extend([polled_ms - r.timestamp()[1] for r in records[::every]])
            nbytes += sum([len(r) + len(r.key() or b"") for r in records])
            count += len(records)
            if now - window_at >= 1.0:
                rate = (count - window_count) / (now - window_at)
                progress.update(f"{count} records read, {rate:,.0f} rec/s")
                window_at, window_count = now, count
        seconds = max(last - start, 1e-9)
    finally:
        consumer.close()
    progress.done()
    ages = {
        f"age_{k.removesuffix('_ms')}_ms" if k.endswith("_ms") else "age_samples": v
        for k, v in summarize(ages_ms).as_dict().items()
    }
    result = {
        "topic": args.topic,
        "client": "kafka",
        "records": count,
        "seconds": round(seconds, 3),
        "records_per_sec": round(count / seconds, 1),
        "mb_per_sec": round(nbytes / bench.MB / seconds, 3),
        "bytes": nbytes,
        **ages,
        "age": bench_consume.AGE_MEANING,
        "partitions": len(partitions),
        "record_size": round(nbytes / count) if count else None,
        "max_poll_records": args.max_poll_records,
        "fetch_max_bytes": args.fetch_max_bytes,
    }
    bench.print_result(
        args, result, ages_ms, bench_consume.AGE_COLUMNS, bench_consume.CONSUME_SETTINGS
    )
    if count < target:
        info(
            f"warning: stopped after {count} of {target} records: nothing for {args.timeout_ms} ms"
        )
        return 1
    return 0


def _receive(conf: dict, topic: str, start_at: dict, total: int, warmup: int, conn: Any) -> None:
    """The e2e consumer, in a process of its own: reads until every record came once (or 10 s
    pass with nothing new), then sends back (received, duplicates, latencies of the counted)."""
    import confluent_kafka as ck

    consumer = ck.Consumer(conf)
    try:
        consumer.assign([ck.TopicPartition(topic, p, o) for p, o in start_at.items()])
        consumer.consume(1, 0.5)  # connected and fetching before the producer starts
        conn.send("ready")
        seen = bytearray(total)
        latencies: list[float] = []
        received = duplicates = 0
        idle_since = _now_ns()
        unpack = _STAMP.unpack_from
        while received < total and _now_ns() - idle_since < 10_000_000_000:
            # poll() returns with the first record; consume(n, timeout) would wait for n.
            first = consumer.poll(0.2)
            records = [first, *consumer.consume(499, 0)] if first is not None else []
            now = _now_ns()
            for r in records:
                if r.error() is not None:
                    raise RuntimeError(r.error().str())
                seq, sent = unpack(r.value())
                if seen[seq]:
                    duplicates += 1
                    continue
                seen[seq] = 1
                received += 1
                if seq >= warmup:
                    latencies.append((now - sent) / 1e6)
            if records:
                idle_since = now
        conn.send((received, duplicates, latencies, None))
    except BaseException as exc:  # noqa: BLE001 - reported by the parent
        conn.send((0, 0, [], f"{type(exc).__name__}: {exc}"))
    finally:
        consumer.close()


def e2e(args: argparse.Namespace) -> int:
    ck = confluent()
    if args.record_size < _STAMP.size:
        raise CliError(
            f"--record-size {args.record_size}: at least {_STAMP.size} bytes with --client "
            "kafka (a sequence number and the send time travel in the value)"
        )
    address = kafka_bootstrap(args)
    bench.ensure_topic(
        args.bootstrap_server,
        args.topic,
        args.partitions,
        args.replication_factor,
        bench.topic_configs(args),
    )
    padding = bench.make_payload(args.record_size - _STAMP.size)
    total, warmup = args.rate * args.seconds, args.rate * args.warmup_seconds
    probe = _probe(ck, address, f"kraft-bench-{uuid.uuid4().hex[:8]}")
    try:
        partitions = _partitions(probe, args.topic)
        start_at = {p: hw for p, (_, hw) in _watermarks(probe, ck, args.topic, partitions).items()}
    finally:
        probe.close()
    conf = {
        "bootstrap.servers": address,
        "group.id": f"kraft-bench-{uuid.uuid4().hex[:8]}",
        "enable.auto.commit": False,
        "fetch.wait.max.ms": args.fetch_max_wait_ms,
        "client.id": "kraft-bench-e2e",
    }
    mp = multiprocessing.get_context("spawn")
    here, there = mp.Pipe()
    child = mp.Process(
        target=_receive, args=(conf, args.topic, start_at, total, warmup, there), daemon=True
    )
    child.start()
    if not here.poll(60):
        child.kill()
        raise CliError("the consumer process did not start within 60 s")
    ready = here.recv()
    if ready != "ready":
        child.join(5)
        raise CliError(f"the consumer failed: {ready[3]}")
    failures = _Failures()
    producer = _producer(
        ck,
        {
            "bootstrap.servers": address,
            "acks": bench.acks_name(args.acks),
            "linger.ms": args.linger_ms,
            "client.id": "kraft-bench-e2e",
            "delivery.report.only.error": True,
            "on_delivery": failures,
        },
        args,
    )
    progress = Progress(enabled=not args.quiet)
    interval_ns = 1_000_000_000 // args.rate
    start = _now_ns()
    for i in range(total):
        due = start + i * interval_ns
        while (now := _now_ns()) < due:
            time.sleep(min((due - now) / 1e9, 0.001))
        producer.produce(args.topic, _STAMP.pack(i, now) + padding)
        producer.poll(0)
        if i % 1000 == 0:
            progress.update(f"{i} sent")
        if failures.count:
            break
    producer.flush(30)
    progress.done()
    if not here.poll(30):
        child.kill()
        raise CliError("the consumer process sent no result within 30 s of the last send")
    received, duplicates, latencies, error = here.recv()
    child.join(10)
    if failures.count:
        raise CliError(f"a send failed: {failures.first}")
    if error:
        raise CliError(f"the consumer failed: {error}")
    result = {
        "topic": args.topic,
        "client": "kafka",
        "sent": total,
        "received": received,
        "duplicates": duplicates,
        "rate": args.rate,
        "seconds": args.seconds,
        "record_size": args.record_size,
        "acks": args.acks,
        "linger_ms": args.linger_ms,
        "partitions": len(partitions),
        **summarize(latencies).as_dict(),
        "latency": "send -> the consumer process has it, CLOCK_MONOTONIC shared by both",
    }
    if args.format == "json":
        print_json(result)
    else:
        from clients.cli import bench_e2e

        bench.print_result(
            args,
            {
                **result,
                "records": received,
                "records_per_sec": args.rate,
                "mb_per_sec": round(args.rate * args.record_size / bench.MB, 3),
            },
            latencies,
            settings=bench_e2e.SETTINGS,
        )
    if received < total or duplicates:
        raise CliError(f"{received} of {total} records came back once, {duplicates} twice or more")
    return 0
