"""Kafka's own clients, unchanged, against a real `kraft dev` node's Kafka listener: kcat,
confluent-kafka (librdkafka), kafka-python and aiokafka produce and consume with keys,
headers, timestamps and every compression; what they wrote reads the same, byte for byte,
over kraft's gRPC Fetch and over the Kafka listener."""

from __future__ import annotations

import asyncio
import datetime
import subprocess
import uuid

import pytest
from kafka_wire import KafkaWire
from raw_node import RawNode
from system_tools import require_tool

from clients.wire import broker_pb2 as bpb

pytestmark = pytest.mark.e2e


def topic_name(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


def test_kcat_lists_the_broker_at_its_kafka_address_and_round_trips(node):
    require_tool("kcat")
    assert node.kafka_address, "kraft dev opened no Kafka listener"
    topic = topic_name("kcat")
    out = subprocess.run(
        ["kcat", "-b", node.kafka_address, "-L", "-t", topic],
        check=True,
        capture_output=True,
        text=True,
        timeout=30,
    ).stdout
    assert f"broker 1 at {node.kafka_address}" in out
    assert f'topic "{topic}" with 1 partitions' in out  # created on first Metadata
    subprocess.run(
        ["kcat", "-b", node.kafka_address, "-P", "-t", topic, "-K:", "-z", "gzip"],
        input="k1:hello\nk2:world\n",
        check=True,
        text=True,
        timeout=30,
    )
    got = subprocess.run(
        ["kcat", "-b", node.kafka_address, "-C", "-t", topic, "-e", "-f", "%k=%s@%o\n"],
        check=True,
        capture_output=True,
        text=True,
        timeout=30,
    ).stdout
    assert got.splitlines() == ["k1=hello@0", "k2=world@1"]


def _sent(n: int, compression: str):
    return [
        (
            f"k{i}".encode(),
            f"{compression}-{i}".encode() * 20,
            [("h", b"%d" % i)],
            1_700_000_000_000 + i,
        )
        for i in range(n)
    ]


@pytest.mark.parametrize("compression", ["none", "gzip", "lz4", "zstd"])
def test_confluent_kafka_round_trips_keys_headers_timestamps(node, compression):
    from confluent_kafka import Consumer, Producer, TopicPartition

    topic = topic_name(f"ck-{compression}")
    sent = _sent(20, compression)
    producer = Producer(
        {
            "bootstrap.servers": node.kafka_address,
            "compression.type": compression,
            "acks": "all",
            "linger.ms": 5,
        }
    )
    for key, value, headers, ts in sent:
        producer.produce(topic, key=key, value=value, headers=headers, timestamp=ts)
    assert producer.flush(30) == 0
    consumer = Consumer(
        {"bootstrap.servers": node.kafka_address, "group.id": "unused", "enable.auto.commit": False}
    )
    consumer.assign([TopicPartition(topic, 0, 0)])
    got = []
    while len(got) < len(sent):
        m = consumer.poll(10)
        assert m is not None, f"only {len(got)} records came back"
        assert m.error() is None, m.error()
        got.append((m.key(), m.value(), m.headers(), m.timestamp()[1]))
    consumer.close()
    assert got == sent


def test_kafka_python_round_trips_and_lists_offsets(node):
    from kafka import KafkaConsumer, KafkaProducer, TopicPartition

    topic = topic_name("kp")
    producer = KafkaProducer(
        bootstrap_servers=node.kafka_address,
        compression_type="gzip",
        acks="all",
        enable_idempotence=False,
    )
    for key, value, headers, ts in _sent(10, "gzip"):
        producer.send(topic, key=key, value=value, headers=headers, timestamp_ms=ts).get(30)
    producer.close()
    consumer = KafkaConsumer(
        bootstrap_servers=node.kafka_address, consumer_timeout_ms=5000, enable_auto_commit=False
    )
    tp = TopicPartition(topic, 0)
    consumer.assign([tp])
    assert consumer.end_offsets([tp]) == {tp: 10}
    assert consumer.beginning_offsets([tp]) == {tp: 0}
    assert consumer.offsets_for_times({tp: 1_700_000_000_005})[tp].offset == 5
    consumer.seek_to_beginning()
    got = [(m.key, m.value, m.headers, m.timestamp) for m in consumer]
    consumer.close()
    assert got == _sent(10, "gzip")


def test_aiokafka_round_trips(node):
    from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, TopicPartition

    async def run():
        topic = topic_name("aio")
        producer = AIOKafkaProducer(bootstrap_servers=node.kafka_address, compression_type="lz4")
        await producer.start()
        try:
            for key, value, headers, ts in _sent(10, "lz4"):
                await producer.send_and_wait(
                    topic, key=key, value=value, headers=headers, timestamp_ms=ts
                )
        finally:
            await producer.stop()
        consumer = AIOKafkaConsumer(bootstrap_servers=node.kafka_address)
        await consumer.start()
        try:
            tp = TopicPartition(topic, 0)
            consumer.assign([tp])
            await consumer.seek_to_beginning(tp)
            got = []
            while len(got) < 10:
                batch = await consumer.getmany(tp, timeout_ms=5000)
                assert batch, f"only {len(got)} records came back"
                got += [(m.key, m.value, list(m.headers), m.timestamp) for m in batch[tp]]
        finally:
            await consumer.stop()
        return got

    assert asyncio.run(run()) == _sent(10, "lz4")


def test_records_read_over_both_wires_are_byte_identical(node):
    from confluent_kafka import Producer
    from kio.schema.fetch.v11.request import FetchPartition, FetchRequest, FetchTopic

    topic = topic_name("both")
    producer = Producer(
        {"bootstrap.servers": node.kafka_address, "compression.type": "zstd", "linger.ms": 20}
    )
    for i in range(200):
        producer.produce(topic, key=b"%d" % i, value=b"v" * (i % 50))
    assert producer.flush(30) == 0
    grpc = RawNode(node.address).broker.Fetch(
        bpb.FetchRequest(
            replica_id=-1,
            max_wait_ms=0,
            min_bytes=1,
            max_bytes=1 << 20,
            topics=[
                bpb.FetchTopic(
                    topic=topic,
                    partitions=[
                        bpb.FetchPartition(
                            partition=0,
                            current_leader_epoch=-1,
                            fetch_offset=0,
                            last_fetched_epoch=-1,
                            log_start_offset=-1,
                            partition_max_bytes=1 << 20,
                        )
                    ],
                )
            ],
        ),
        timeout=10,
    )
    over_grpc = grpc.topics[0].partitions[0]
    wire = KafkaWire(node.kafka_address)
    try:
        answer = wire.call(
            1,
            11,
            FetchRequest(
                replica_id=-1,
                max_wait=datetime.timedelta(0),
                min_bytes=1,
                max_bytes=1 << 20,
                isolation_level=0,
                session_id=0,
                session_epoch=-1,
                rack_id="",
                forgotten_topics_data=(),
                topics=(
                    FetchTopic(
                        topic=topic,
                        partitions=(
                            FetchPartition(
                                partition=0,
                                current_leader_epoch=-1,
                                fetch_offset=0,
                                log_start_offset=-1,
                                partition_max_bytes=1 << 20,
                            ),
                        ),
                    ),
                ),
            ),
        )
    finally:
        wire.close()
    part = answer.responses[0].partitions[0]
    assert part.error_code == 0 and part.high_watermark == over_grpc.high_watermark == 200
    assert answer.session_id == 0
    assert len(over_grpc.records) > 0 and part.records == over_grpc.records


def test_a_large_produce_is_decoded_off_the_loop_and_reads_back(node):
    from confluent_kafka import Consumer, Producer, TopicPartition

    topic = topic_name("big")
    values = [bytes([i]) * 300_000 for i in range(4)]  # requests well over 64 KiB
    producer = Producer(
        {"bootstrap.servers": node.kafka_address, "linger.ms": 50, "message.max.bytes": 2_000_000}
    )
    for v in values:
        producer.produce(topic, value=v)
    assert producer.flush(30) == 0
    consumer = Consumer(
        {
            "bootstrap.servers": node.kafka_address,
            "group.id": "unused",
            "fetch.max.bytes": 2_000_000,
        }
    )
    consumer.assign([TopicPartition(topic, 0, 0)])
    got = []
    while len(got) < len(values):
        m = consumer.poll(10)
        assert m is not None and m.error() is None, m and m.error()
        got.append(m.value())
    consumer.close()
    assert got == values
