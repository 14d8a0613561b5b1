"""An in-process fake broker (real grpc.server, Broker + Controller services, batches kept in
memory, offsets stamped in place) for the client tests and bench/client_fake_broker.py; and
the tests of clients/cluster.py that run against it."""

from __future__ import annotations

import bisect
import itertools
import sys
import threading
from collections import deque
from concurrent.futures import ThreadPoolExecutor

import grpc
import pytest

from clients.bridge import CHANNEL_OPTIONS
from clients.cluster import Cluster, parse_bootstrap
from clients.errors import ErrorCode, KraftError
from clients.record.batch_header import iter_valid_batches, set_base_offset_and_epoch
from clients.record.codec import decode_batch
from clients.wire import broker_pb2 as bp
from clients.wire import broker_pb2_grpc, controller_pb2_grpc
from clients.wire import controller_pb2 as cp

NOT_FOUND = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION


class PartitionLog:
    def __init__(self) -> None:
        self.data = bytearray()
        # (base_offset, position, next_offset, max_timestamp, end position)
        self.batches: list[tuple[int, int, int, int, int]] = []
        self.nexts: list[int] = []  # next_offset of each batch, for bisect
        self.end = 0
        self.sequences: dict[tuple, int] = {}  # (producer id, epoch, base sequence) -> offset


class FakeBroker(broker_pb2_grpc.BrokerServicer, controller_pb2_grpc.ControllerServicer):
    """Node 0 of a one-node cluster. Faults: push error codes on `produce_errors` (each answers
    one whole Produce call), `init_errors` or `fetch_errors`; `produce_gate` cleared holds every
    Produce until it is set; `lost_answers` error codes answer a Produce that
    was appended (a lost acknowledgement); `auto_create` mimics auto.create.topics.enable.
    Idempotence, roughly: InitProducerId deals ids, a batch whose (id, epoch, base sequence) was
    appended before is answered with its original offset and not appended again."""

    def __init__(self, *, auto_create: bool = False, default_partitions: int = 1) -> None:
        self.auto_create = auto_create
        self.default_partitions = default_partitions
        self.topics: dict[str, list[PartitionLog]] = {}
        self.configs: dict[str, dict[str, str]] = {}
        self.produce_errors: deque[int] = deque()
        self.produce_gate = threading.Event()  # clear it to hold Produce answers back
        self.produce_gate.set()
        self.lost_answers: deque[int] = deque()
        self.init_requests: list = []
        self.init_errors: deque[int] = deque()
        self.next_producer_id = 1000
        self.fetch_errors: deque[int] = deque()
        self.metadata_calls = 0
        self.produce_calls = 0
        self.leader_epoch = 0  # what Metadata says of every partition
        # An address where no broker listens: while set, Metadata names node 1 there the leader
        # of every partition (a killed leader not fenced yet); clearing it elects node 0 again.
        self.dead_leader: str | None = None
        self.fetch_epochs: list[int] = []  # current_leader_epoch of each fetched partition
        self.cond = threading.Condition()
        self.server = grpc.server(ThreadPoolExecutor(max_workers=32), options=CHANNEL_OPTIONS)
        broker_pb2_grpc.add_BrokerServicer_to_server(self, self.server)
        controller_pb2_grpc.add_ControllerServicer_to_server(self, self.server)
        self.port = self.server.add_insecure_port("127.0.0.1:0")
        self.address = f"127.0.0.1:{self.port}"

    def start(self) -> FakeBroker:
        self.server.start()
        return self

    def stop(self) -> None:
        self.server.stop(0).wait()

    def create(self, name: str, partitions: int = 1) -> None:
        with self.cond:
            self.topics[name] = [PartitionLog() for _ in range(partitions)]

    def records(self, topic: str, partition: int) -> list:
        log = self.topics[topic][partition]
        out = []
        for _base, pos, _next, _ts, _end in log.batches:
            out += decode_batch(bytes(log.data), pos)[1]
        return out

    # --- Broker -----------------------------------------------------------------------------

    def Metadata(self, req, ctx):
        self.metadata_calls += 1
        with self.cond:
            names = list(self.topics) if req.all_topics or not req.topics else list(req.topics)
            out = []
            for name in names:
                if name not in self.topics and req.allow_auto_topic_creation and self.auto_create:
                    self.topics[name] = [PartitionLog() for _ in range(self.default_partitions)]
                parts = self.topics.get(name)
                if parts is None:
                    out.append(
                        bp.TopicMetadata(
                            error_code=NOT_FOUND, name=name, error_message="unknown topic"
                        )
                    )
                    continue
                leader = 0 if self.dead_leader is None else 1
                out.append(
                    bp.TopicMetadata(
                        name=name,
                        partitions=[
                            bp.PartitionMetadata(
                                partition=i,
                                leader=leader,
                                leader_epoch=self.leader_epoch,
                                replicas=[0],
                                isr=[0],
                            )
                            for i in range(len(parts))
                        ],
                    )
                )
            brokers = [bp.BrokerNode(node_id=0, host="127.0.0.1", port=self.port)]
            if self.dead_leader is not None:
                host, port = self.dead_leader.rsplit(":", 1)
                brokers.append(bp.BrokerNode(node_id=1, host=host, port=int(port)))
        return bp.MetadataResponse(
            brokers=brokers, controller_id=0, cluster_id="fake-cluster", topics=out
        )

    def Produce(self, req, ctx):
        self.produce_calls += 1
        self.produce_gate.wait(60)
        error = self.produce_errors.popleft() if self.produce_errors else 0
        topics = []
        with self.cond:
            for t in req.topics:
                parts = []
                for p in t.partitions:
                    logs = self.topics.get(t.name)
                    if error or logs is None or p.partition >= len(logs):
                        parts.append(
                            bp.PartitionProduceResponse(
                                partition=p.partition,
                                error_code=error or NOT_FOUND,
                                base_offset=-1,
                                error_message="injected" if error else "unknown topic",
                            )
                        )
                        continue
                    log = logs[p.partition]
                    base = log.end
                    buf = bytearray(p.records)
                    first = next(iter_valid_batches(buf))[1]
                    seen = log.sequences.get(
                        (first.producer_id, first.producer_epoch, first.base_sequence)
                    )
                    if first.producer_id >= 0 and seen is not None:
                        parts.append(
                            bp.PartitionProduceResponse(partition=p.partition, base_offset=seen)
                        )
                        continue
                    for pos, header in iter_valid_batches(buf):
                        if header.producer_id >= 0:
                            log.sequences[
                                (header.producer_id, header.producer_epoch, header.base_sequence)
                            ] = log.end
                        set_base_offset_and_epoch(buf, pos, log.end, self.leader_epoch)
                        at = len(log.data) + pos
                        log.batches.append(
                            (
                                log.end,
                                at,
                                log.end + header.last_offset_delta + 1,
                                header.max_timestamp,
                                at + header.size,
                            )
                        )
                        log.nexts.append(log.end + header.last_offset_delta + 1)
                        log.end += header.last_offset_delta + 1
                    log.data += buf
                    if self.lost_answers:
                        parts.append(
                            bp.PartitionProduceResponse(
                                partition=p.partition,
                                error_code=self.lost_answers.popleft(),
                                base_offset=-1,
                                error_message="injected after the append",
                            )
                        )
                        continue
                    parts.append(
                        bp.PartitionProduceResponse(
                            partition=p.partition, base_offset=base, log_append_time_ms=-1
                        )
                    )
                topics.append(bp.TopicProduceResponse(name=t.name, partitions=parts))
            self.cond.notify_all()
        return bp.ProduceResponse(topics=topics)

    def InitProducerId(self, req, ctx):
        with self.cond:
            self.init_requests.append(req)
            if self.init_errors:
                return bp.InitProducerIdResponse(
                    error_code=self.init_errors.popleft(), error_message="injected"
                )
            if req.HasField("producer_id"):
                return bp.InitProducerIdResponse(
                    producer_id=req.producer_id, producer_epoch=req.producer_epoch + 1
                )
            self.next_producer_id += 1
            return bp.InitProducerIdResponse(producer_id=self.next_producer_id, producer_epoch=0)

    def _read(self, ask: _Ask) -> bp.FetchPartitionResponse:
        logs = self.topics.get(ask.topic_name)
        if logs is None or ask.partition >= len(logs):
            return bp.FetchPartitionResponse(partition=ask.partition, error_code=NOT_FOUND)
        log = logs[ask.partition]
        if ask.fetch_offset > log.end or ask.fetch_offset < 0:
            return bp.FetchPartitionResponse(
                partition=ask.partition,
                high_watermark=log.end,
                error_code=ErrorCode.OFFSET_OUT_OF_RANGE,
            )
        start = cut = None
        limit = max(ask.partition_max_bytes, 1)
        first = bisect.bisect_right(log.nexts, ask.fetch_offset)
        for _base, pos, _nxt, _ts, end in itertools.islice(log.batches, first, None):
            if start is None:
                start = cut = pos
            if end - start > limit and cut > start:
                break  # whole batches only, but always at least the first one
            cut = end
        records = bytes(log.data[start:cut]) if start is not None else b""
        return bp.FetchPartitionResponse(
            partition=ask.partition,
            high_watermark=log.end,
            last_stable_offset=log.end,
            log_start_offset=0,
            records=records,
        )

    def Fetch(self, req, ctx):
        self.fetch_epochs += [p.current_leader_epoch for t in req.topics for p in t.partitions]
        if self.fetch_errors:
            code = self.fetch_errors.popleft()
            return bp.FetchResponse(
                topics=[
                    bp.FetchTopicResponse(
                        topic=t.topic,
                        partitions=[
                            bp.FetchPartitionResponse(partition=p.partition, error_code=code)
                            for p in t.partitions
                        ],
                    )
                    for t in req.topics
                ]
            )
        wait = req.max_wait_ms / 1000
        with self.cond:
            while True:
                topics, size, failed = [], 0, False
                for t in req.topics:
                    parts = [self._read(_Ask(t.topic, p)) for p in t.partitions]
                    size += sum(len(x.records) for x in parts)
                    failed = failed or any(x.error_code for x in parts)
                    topics.append(bp.FetchTopicResponse(topic=t.topic, partitions=parts))
                if size >= max(req.min_bytes, 1) or wait <= 0 or failed:
                    return bp.FetchResponse(topics=topics)
                if not self.cond.wait(wait):
                    wait = 0

    def ListOffsets(self, req, ctx):
        topics = []
        with self.cond:
            for t in req.topics:
                parts = []
                for p in t.partitions:
                    logs = self.topics.get(t.name)
                    if logs is None or p.partition >= len(logs):
                        parts.append(
                            bp.ListOffsetsPartitionResponse(
                                partition=p.partition, error_code=NOT_FOUND
                            )
                        )
                        continue
                    log = logs[p.partition]
                    offset, ts = -1, -1
                    if p.timestamp == -2:
                        offset = 0
                    elif p.timestamp == -1:
                        offset = log.end
                    else:
                        for _base, pos, _nxt, max_ts, _end in log.batches:
                            if max_ts >= p.timestamp:
                                for r in decode_batch(bytes(log.data), pos)[1]:
                                    if r.timestamp >= p.timestamp:
                                        offset, ts = r.offset, r.timestamp
                                        break
                                break
                    parts.append(
                        bp.ListOffsetsPartitionResponse(
                            partition=p.partition, offset=offset, timestamp=ts
                        )
                    )
                topics.append(bp.ListOffsetsTopicResponse(name=t.name, partitions=parts))
        return bp.ListOffsetsResponse(topics=topics)

    # --- Controller -------------------------------------------------------------------------

    def CreateTopics(self, req, ctx):
        out = []
        with self.cond:
            for t in req.topics:
                if t.name in self.topics:
                    out.append(
                        cp.CreateTopicsResult(
                            name=t.name,
                            error_code=ErrorCode.TOPIC_ALREADY_EXISTS,
                            error_message=f"topic '{t.name}' already exists",
                        )
                    )
                    continue
                n = t.num_partitions if t.num_partitions > 0 else self.default_partitions
                if not req.validate_only:
                    self.topics[t.name] = [PartitionLog() for _ in range(n)]
                    self.configs[t.name] = dict(t.configs)
                out.append(
                    cp.CreateTopicsResult(name=t.name, num_partitions=n, replication_factor=1)
                )
        return cp.CreateTopicsResponse(topics=out)

    def DeleteTopics(self, req, ctx):
        out = []
        with self.cond:
            for name in req.names:
                if self.topics.pop(name, None) is None:
                    out.append(
                        cp.DeleteTopicsResult(
                            name=name, error_code=NOT_FOUND, error_message="unknown topic"
                        )
                    )
                else:
                    out.append(cp.DeleteTopicsResult(name=name))
        return cp.DeleteTopicsResponse(topics=out)

    def CreatePartitions(self, req, ctx):
        out = []
        with self.cond:
            for t in req.topics:
                logs = self.topics.get(t.name)
                if logs is None:
                    out.append(cp.CreatePartitionsResult(name=t.name, error_code=NOT_FOUND))
                elif t.count <= len(logs):
                    out.append(
                        cp.CreatePartitionsResult(
                            name=t.name,
                            error_code=ErrorCode.INVALID_PARTITIONS,
                            error_message=f"topic already has {len(logs)} partitions",
                        )
                    )
                else:
                    logs += [PartitionLog() for _ in range(t.count - len(logs))]
                    out.append(cp.CreatePartitionsResult(name=t.name))
        return cp.CreatePartitionsResponse(results=out)

    def DescribeConfigs(self, req, ctx):
        out = []
        for r in req.resources:
            if r.resource_name not in self.topics:
                out.append(
                    cp.DescribeConfigsResult(
                        error_code=NOT_FOUND,
                        resource_name=r.resource_name,
                        resource_type=r.resource_type,
                    )
                )
                continue
            cfg = {"retention.ms": "604800000", **self.configs.get(r.resource_name, {})}
            out.append(
                cp.DescribeConfigsResult(
                    resource_type=r.resource_type,
                    resource_name=r.resource_name,
                    configs=[
                        cp.ConfigEntry(
                            name=k,
                            value=v,
                            is_default=k not in self.configs.get(r.resource_name, {}),
                            source="DYNAMIC_TOPIC_CONFIG",
                        )
                        for k, v in cfg.items()
                    ],
                )
            )
        return cp.DescribeConfigsResponse(results=out)

    def AlterConfigs(self, req, ctx):
        out = []
        for r in req.resources:
            cfg = self.configs.get(r.resource_name)
            if cfg is None:
                out.append(
                    cp.AlterConfigsResult(error_code=NOT_FOUND, resource_name=r.resource_name)
                )
                continue
            for c in r.configs:
                if c.op == cp.DELETE:
                    cfg.pop(c.name, None)
                else:
                    cfg[c.name] = c.value
            out.append(cp.AlterConfigsResult(resource_name=r.resource_name))
        return cp.AlterConfigsResponse(results=out)


class _Ask:
    """A FetchPartition with its topic name attached (protobuf messages take no new fields)."""

    __slots__ = ("topic_name", "partition", "fetch_offset", "partition_max_bytes")

    def __init__(self, topic: str, p) -> None:
        self.topic_name = topic
        self.partition = p.partition
        self.fetch_offset = p.fetch_offset
        self.partition_max_bytes = p.partition_max_bytes


@pytest.fixture
def broker():
    b = FakeBroker().start()
    yield b
    b.stop()


# --- tests of clients/cluster.py ---------------------------------------------------------------


def test_parse_bootstrap_accepts_lists_and_default_port():
    assert parse_bootstrap("a:1, b:2,c") == ["a:1", "b:2", "c:9092"]
    assert parse_bootstrap(["x:5"]) == ["x:5"]
    with pytest.raises(ValueError):
        parse_bootstrap(" , ")
    with pytest.raises(ValueError):
        parse_bootstrap("host:port")


async def test_refresh_fills_the_metadata_cache(broker):
    broker.create("t", 3)
    cluster = Cluster(broker.address)
    try:
        await cluster.refresh(["t", "missing"])
        md = cluster.metadata
        assert md.partitions_for("t") == [0, 1, 2]
        assert md.leader_for(("t", 2)) == 0
        assert md.topics["missing"].error_code == NOT_FOUND
        assert md.partitions_for("missing") is None
        assert md.brokers[0].address == broker.address
        md.invalidate_leader(("t", 1))
        assert md.leader_for(("t", 1)) is None
        await cluster.refresh(None)
        assert "missing" not in md.topics and md.leader_for(("t", 1)) == 0
    finally:
        cluster.close()


async def test_dead_bootstrap_node_is_skipped(broker):
    cluster = Cluster(f"127.0.0.1:1,{broker.address}", request_timeout_ms=2000)
    try:
        resp = await cluster.refresh(None)
        assert resp.cluster_id == "fake-cluster"
    finally:
        cluster.close()


async def test_no_node_answering_raises_network_exception():
    cluster = Cluster("127.0.0.1:1", request_timeout_ms=500)
    try:
        with pytest.raises(KraftError) as info:
            await cluster.refresh(None)
        assert info.value.code == ErrorCode.NETWORK_EXCEPTION
    finally:
        cluster.close()


if __name__ == "__main__":  # serve on a port for bench/client_fake_broker.py
    import time

    fake = FakeBroker(auto_create=True)
    fake.start()
    print(fake.port, flush=True)
    try:
        while True:
            time.sleep(3600)
    except KeyboardInterrupt:
        sys.exit(0)
