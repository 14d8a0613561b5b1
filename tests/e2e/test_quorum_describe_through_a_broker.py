"""`kraft quorum describe --bootstrap-server B` asks the broker B, which asks the controllers
(as Kafka's brokers forward DescribeQuorum): the quorum leader's view, with nothing but a broker's
address; the Raft RPCs themselves stay off the broker's listener."""

from __future__ import annotations

import json
import re

import grpc
import pytest
from waiting import eventually

from clients.bridge import open_channel
from clients.wire import quorum_pb2, quorum_pb2_grpc

pytestmark = pytest.mark.e2e


def test_quorum_describe_through_a_broker_only_node(cluster_factory, kraft):
    cluster = cluster_factory(controllers=1, brokers=1)
    controller, broker = cluster.controllers[0], cluster.brokers[0]

    def described():
        done = kraft(
            "quorum",
            "describe",
            "--bootstrap-server",
            broker.address,
            "--timeout",
            "2",
            "--format",
            "json",
            timeout=30,
        )
        assert done.returncode == 0, done.stderr
        return json.loads(done.stdout)

    out = eventually(
        lambda: (o := described())["observers"] and o,
        20,
        "the leader's view with the broker as an observer",
    )
    assert (out["leader_id"], out["answered_by"], out["role"]) == (
        controller.node_id,
        controller.node_id,
        "Leader",
    )
    assert [v["id"] for v in out["voters"]] == [controller.node_id]
    assert [o["id"] for o in out["observers"]] == [broker.node_id]

    table = kraft("quorum", "describe", "--bootstrap-server", broker.address, timeout=30)
    assert table.returncode == 0, table.stderr
    assert re.search(rf"LeaderId\s+{controller.node_id}\b", table.stdout), table.stdout

    stub = quorum_pb2_grpc.QuorumStub(open_channel(broker.address))
    with pytest.raises(grpc.RpcError) as vote:
        stub.Vote(quorum_pb2.VoteRequest(), timeout=5)
    assert vote.value.code() == grpc.StatusCode.UNIMPLEMENTED
