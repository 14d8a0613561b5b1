"""A cluster whose listeners all speak TLS with client certificates (mTLS between nodes): it forms,
and a certificate from another CA gets no answer, while each attack a holder of a trusted
certificate could try on main is refused with CLUSTER_AUTHORIZATION_FAILED: registering or
heartbeating as another broker, fetching as another broker's follower, and Raft Vote,
BeginQuorumEpoch, EndQuorumEpoch and Fetch from a principal that is no voter or not that node."""

from __future__ import annotations

import pathlib
import sys

import grpc
import pytest

from clients import bridge
from clients.errors import ErrorCode
from clients.security import ClientSecurity
from clients.wire import (
    broker_pb2,
    broker_pb2_grpc,
    controller_pb2,
    controller_pb2_grpc,
    quorum_pb2,
    quorum_pb2_grpc,
)

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1] / "broker" / "security"))
from tls_fixtures import make_pki  # noqa: E402

CLUSTER_ID = "e2e-cluster"


@pytest.fixture
def secure_cluster(tmp_path, cluster_factory):
    pki = make_pki(tmp_path / "pki")
    per_node = {i: {"ssl.keystore.location": str(pki[f"kraft-node-{i}"])} for i in (1, 2, 3)}
    cluster = cluster_factory(
        1,
        2,
        node_overrides=per_node,
        **{
            "listener_security_protocol_map": "PLAINTEXT:SSL,CONTROLLER:SSL",
            "ssl_truststore_location": str(pki["ca"]),
            "ssl_client_auth": "required",
        },
    )
    return cluster, pki


def _as(pki, name: str) -> ClientSecurity:
    return ClientSecurity(
        security_protocol="SSL", ssl_cafile=str(pki["ca"]), ssl_certfile=str(pki[name])
    )


def _call(address: str, security: ClientSecurity, stub_class, method: str, request):
    with bridge.open_channel(address, security) as channel:
        return getattr(stub_class(channel), method)(request, timeout=10)


def test_nodes_trust_only_each_other(secure_cluster):
    cluster, pki = secure_cluster
    controller, broker2, broker3 = cluster.nodes[1], cluster.nodes[2], cluster.nodes[3]

    # A certificate from another CA: the handshake fails, nothing is served.
    with pytest.raises(grpc.RpcError) as info:
        _call(
            controller.address,
            _as(pki, "rogue-node-2"),
            quorum_pb2_grpc.QuorumStub,
            "DescribeQuorum",
            quorum_pb2.DescribeQuorumRequest(),
        )
    assert info.value.code() == grpc.StatusCode.UNAVAILABLE

    # A trusted user that is no node may not speak on the controller listener at all.
    with pytest.raises(grpc.RpcError) as info:
        _call(
            controller.address,
            _as(pki, "alice"),
            controller_pb2_grpc.ControllerStub,
            "RegisterBroker",
            controller_pb2.RegisterBrokerRequest(
                broker_id=2, incarnation_id="x", host="127.0.0.1", port=1
            ),
        )
    assert info.value.code() == grpc.StatusCode.PERMISSION_DENIED
    assert info.value.details().startswith("CLUSTER_AUTHORIZATION_FAILED")

    # Broker 3's own certificate may not register, heartbeat or change an ISR as broker 2.
    node3 = _as(pki, "kraft-node-3")
    for method, request in [
        (
            "RegisterBroker",
            controller_pb2.RegisterBrokerRequest(
                broker_id=2, incarnation_id="fake", host="127.0.0.1", port=1
            ),
        ),
        ("BrokerHeartbeat", controller_pb2.BrokerHeartbeatRequest(broker_id=2, broker_epoch=1)),
        ("AlterPartition", controller_pb2.AlterPartitionRequest(broker_id=2, broker_epoch=1)),
    ]:
        answer = _call(
            controller.address, node3, controller_pb2_grpc.ControllerStub, method, request
        )
        assert answer.error_code == ErrorCode.CLUSTER_AUTHORIZATION_FAILED, method
        assert "only User:kraft-node-2 may" in answer.error_message
    # ...and the same through a broker's forwarding Controller service.
    answer = _call(
        broker2.address,
        _as(pki, "alice"),
        controller_pb2_grpc.ControllerStub,
        "BrokerHeartbeat",
        controller_pb2.BrokerHeartbeatRequest(broker_id=2),
    )
    assert answer.error_code == ErrorCode.CLUSTER_AUTHORIZATION_FAILED

    # A follower fetch from broker 2 as broker 3, by a client, and by broker 2 itself.
    for who in ("alice", "kraft-node-2"):
        answer = _call(
            broker2.address,
            _as(pki, who),
            broker_pb2_grpc.BrokerStub,
            "Fetch",
            broker_pb2.FetchRequest(replica_id=3, max_wait_ms=0),
        )
        assert answer.error_code == ErrorCode.CLUSTER_AUTHORIZATION_FAILED, who

    # Raft: broker 3 is an observer. It may Fetch as itself, nothing else.
    quorum = quorum_pb2_grpc.QuorumStub
    for method, request in [
        (
            "Vote",
            quorum_pb2.VoteRequest(
                src=3, dst=1, epoch=99, last_epoch=98, last_offset=10**6, cluster_id=CLUSTER_ID
            ),
        ),
        # Well-formed requests in the name of voter 1 (the only voter): the Raft checks
        # believe the id; only the certificate tells they come from node 3.
        (
            "Vote",
            quorum_pb2.VoteRequest(
                src=1, dst=1, epoch=99, last_epoch=98, last_offset=10**6, cluster_id=CLUSTER_ID
            ),
        ),
        (
            "BeginQuorumEpoch",
            quorum_pb2.BeginQuorumEpochRequest(src=1, dst=1, epoch=99, cluster_id=CLUSTER_ID),
        ),
        (
            "EndQuorumEpoch",
            quorum_pb2.EndQuorumEpochRequest(src=1, dst=1, epoch=99, cluster_id=CLUSTER_ID),
        ),
        ("Fetch", quorum_pb2.FetchRequest(src=2, dst=1, epoch=1, cluster_id=CLUSTER_ID)),
    ]:
        answer = _call(controller.address, node3, quorum, method, request)
        assert answer.error_code == ErrorCode.CLUSTER_AUTHORIZATION_FAILED, (method, request.src)
    answer = _call(
        controller.address,
        node3,
        quorum,
        "Fetch",
        quorum_pb2.FetchRequest(src=3, dst=1, epoch=0, max_wait_ms=0, cluster_id=CLUSTER_ID),
    )
    assert answer.error_code != ErrorCode.CLUSTER_AUTHORIZATION_FAILED

    # The quorum's epoch did not move: the forged Vote and BeginQuorumEpoch (epoch 99) did nothing.
    state = _call(
        controller.address,
        _as(pki, "alice"),
        quorum,
        "DescribeQuorum",
        quorum_pb2.DescribeQuorumRequest(),
    )
    assert state.leader_epoch < 99
    assert broker3.alive() and broker2.alive()
