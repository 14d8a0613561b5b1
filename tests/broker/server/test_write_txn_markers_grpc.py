"""WriteTxnMarkers over real gRPC and TLS: a node (ClusterAction) has the leader write each
marker and is answered per partition once it is committed; a marker in __consumer_offsets is
handed to the group coordinators; a client certificate is refused; a read_committed Fetch on the
wire then carries the last stable offset and the aborted transaction."""

from __future__ import annotations

import pathlib
import sys

import trio

from broker.handlers.write_txn_markers import TxnMarkerWriter
from broker.replication.replica_manager import ACKS_ALL, ReplicaManager
from broker.security.listener import authenticator, server_credentials
from broker.security.request_authorizer import RequestAuthorizer
from broker.services.broker_servicer import BrokerServicer
from clients import bridge
from clients.errors import ErrorCode
from clients.grpc_server import TrioGrpcServer
from clients.record.codec import decode_records, encode_batch
from clients.security import ClientSecurity
from clients.wire import broker_pb2 as pb
from clients.wire import broker_pb2_grpc
from kraft.log.log_config import LogConfig
from kraft.log.log_manager import LogManager
from kraft.metadata.image import EMPTY_IMAGE, PartitionRegistration
from kraft.security.authorizer import AuthorizerConfig

sys.path.insert(0, str(pathlib.Path(__file__).parents[1] / "security"))
from tls_fixtures import make_pki, secure_config  # noqa: E402

PID = 77
REG = PartitionRegistration(replicas=(1,), isr=(1,), leader=1, leader_epoch=1, partition_epoch=1)


def txn_batch(seq: int, value: bytes) -> bytes:
    return encode_batch(
        [(None, value, (), 1000)],
        producer_id=PID,
        producer_epoch=0,
        base_sequence=seq,
        is_transactional=True,
    )


def markers(committed: bool, *partitions: tuple[str, int]) -> pb.WriteTxnMarkersRequest:
    topics: dict[str, list[int]] = {}
    for topic, partition in partitions:
        topics.setdefault(topic, []).append(partition)
    return pb.WriteTxnMarkersRequest(
        markers=[
            pb.TxnMarker(
                producer_id=PID,
                producer_epoch=0,
                committed=committed,
                coordinator_epoch=1,
                topics=[pb.TopicPartitions(topic=t, partitions=ps) for t, ps in topics.items()],
            )
        ]
    )


async def test_nodes_write_markers_clients_cannot_and_read_committed_sees_the_abort(tmp_path):
    pki = make_pki(tmp_path / "pki")
    replicas = ReplicaManager(LogManager([tmp_path / "logs"], LogConfig(), now_ms=0), node_id=1)
    for topic, partition in (("t", 0), ("__consumer_offsets", 3)):
        replicas.apply_registration(topic, partition, f"id-{topic}", LogConfig(), REG)
    authz = RequestAuthorizer(
        lambda: EMPTY_IMAGE, AuthorizerConfig(super_users=frozenset({"User:kraft-node-2"}))
    )
    heard = []
    writer = TxnMarkerWriter(replicas, authz, lambda *args: heard.append(args), clock_ms=lambda: 0)
    broker = BrokerServicer(
        replicas, metadata=None, channel=None, cluster_id="c", authorizer=authz, txn_markers=writer
    )
    config = secure_config(pki)
    server = TrioGrpcServer(
        "127.0.0.1:0",
        listener_name="SSL",
        credentials=server_credentials(config.security, "SSL"),
        authenticate=authenticator(config.security, "SSL"),
    )
    server.add_servicer(broker, pb, "Broker", {"Fetch": broker.fetch_serialized})

    def stub(name: str):
        channel = bridge.open_channel(
            f"127.0.0.1:{port}",
            ClientSecurity(
                security_protocol="SSL", ssl_cafile=str(pki["ca"]), ssl_certfile=str(pki[name])
            ),
        )
        return channel, broker_pb2_grpc.BrokerStub(channel)

    async with trio.open_nursery() as nursery:
        port = await nursery.start(server.serve)
        assert replicas.append("t", 0, txn_batch(0, b"gone"), ACKS_ALL, 0).error_code == 0
        log = replicas.get("t", 0).log

        channel, alice = stub("alice")
        refused = await bridge.call(alice.WriteTxnMarkers, markers(False, ("t", 0)), 5)
        channel.close()
        [result] = refused.markers[0].partitions
        assert result.error_code == ErrorCode.CLUSTER_AUTHORIZATION_FAILED
        assert log.log_end_offset == 1 and heard == []

        channel, node = stub("kraft-node-2")
        answer = await bridge.call(
            node.WriteTxnMarkers, markers(False, ("t", 0), ("__consumer_offsets", 3), ("t", 9)), 5
        )
        got = {(p.topic, p.partition): p.error_code for p in answer.markers[0].partitions}
        assert got == {
            ("t", 0): 0,
            ("__consumer_offsets", 3): 0,
            ("t", 9): ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
        }
        assert log.log_end_offset == 2
        assert heard == [(3, PID, 0, False, 0)]  # partition, producer, epoch, committed, offset

        request = pb.FetchRequest(
            replica_id=-1,
            max_wait_ms=0,
            isolation_level=1,
            topics=[
                pb.FetchTopic(
                    topic="t",
                    partitions=[
                        pb.FetchPartition(
                            partition=0,
                            fetch_offset=0,
                            current_leader_epoch=-1,
                            last_fetched_epoch=-1,
                        )
                    ],
                )
            ],
        )
        fetched = (await bridge.call(node.Fetch, request, 5)).topics[0].partitions[0]
        channel.close()
        assert (fetched.error_code, fetched.high_watermark, fetched.last_stable_offset) == (0, 2, 2)
        assert [(a.producer_id, a.first_offset) for a in fetched.aborted_transactions] == [(PID, 0)]
        assert [r.value for r in decode_records(fetched.records, skip_control=True)] == [b"gone"]
        nursery.cancel_scope.cancel()
