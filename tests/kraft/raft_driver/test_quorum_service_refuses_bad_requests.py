"""The Quorum service over real gRPC refuses what it must not trust, with an error naming what is
wrong, and the node's quorum-state file is left exactly as it was: an empty or foreign cluster id,
a field out of range, a request addressed to another node, an epoch at the end of int32, and an
election request from a node that is not a voter."""

from __future__ import annotations

import random

import pytest
import trio

from broker.metadata.servicer import QuorumServicer
from clients.bridge import call, open_channel
from clients.errors import ErrorCode
from clients.grpc_server import TrioGrpcServer
from clients.wire import quorum_pb2 as pb
from clients.wire import quorum_pb2_grpc
from kraft.raft import MemoryRaftLog, RaftConfig, RaftCore
from kraft.raft.disk import FileElectionStore, quorum_state_path, write_initial
from kraft.raft.driver import RaftDriver, monotonic_ms
from kraft.raft.log import ElectionState

# A long election timeout: the node must not start an election of its own during the test.
CONFIG = RaftConfig(
    election_timeout_ms=10_000,
    fetch_timeout_ms=20_000,
    request_timeout_ms=300,
    fetch_max_wait_ms=100,
)
CLUSTER = "c-9f2c"


def vote(**fields):
    return "Vote", pb.VoteRequest(
        **{
            "src": 1,
            "dst": 2,
            "epoch": 4,
            "last_epoch": 3,
            "last_offset": 0,
            "cluster_id": CLUSTER,
            **fields,
        }
    )


def begin(**fields):
    return "BeginQuorumEpoch", pb.BeginQuorumEpochRequest(
        **{"src": 1, "dst": 2, "epoch": 4, "cluster_id": CLUSTER, **fields}
    )


def end(**fields):
    return "EndQuorumEpoch", pb.EndQuorumEpochRequest(
        **{"src": 1, "dst": 2, "epoch": 3, "cluster_id": CLUSTER, **fields}
    )


def fetch(**fields):
    return "Fetch", pb.FetchRequest(
        **{
            "src": 1,
            "dst": 2,
            "epoch": 3,
            "fetch_offset": 0,
            "last_fetched_epoch": 0,
            "request_id": 1,
            "cluster_id": CLUSTER,
            **fields,
        }
    )


REFUSED = {
    "empty-cluster-id": (begin(cluster_id=""), ErrorCode.INCONSISTENT_CLUSTER_ID, "cluster_id"),
    "other-cluster": (vote(cluster_id="other"), ErrorCode.INCONSISTENT_CLUSTER_ID, "'other'"),
    # quoted cut short: the refusal is logged, and a fuzzer sent 2 MB of cluster id
    "huge-cluster-id": (
        fetch(cluster_id="x" * 1_000_000),
        ErrorCode.INCONSISTENT_CLUSTER_ID,
        "... (1000000 characters) but node 2",
    ),
    "epoch-end-of-int32": (begin(epoch=2**31 - 1), ErrorCode.INVALID_REQUEST, "epoch 2147483647"),
    "negative-epoch": (begin(epoch=-5), ErrorCode.INVALID_REQUEST, "epoch is -5"),
    "negative-src": (vote(src=-1), ErrorCode.INVALID_REQUEST, "src is -1"),
    "other-dst": (begin(dst=3), ErrorCode.INVALID_REQUEST, "dst is 3 but this is node 2"),
    "last-epoch-from-the-future": (
        vote(last_epoch=9),
        ErrorCode.INVALID_REQUEST,
        "last_epoch is 9",
    ),
    "negative-fetch-offset": (
        fetch(fetch_offset=-1),
        ErrorCode.INVALID_REQUEST,
        "fetch_offset is -1",
    ),
    "negative-max-wait": (fetch(max_wait_ms=-1), ErrorCode.INVALID_REQUEST, "max_wait_ms"),
    "non-voter-vote": (vote(src=9), ErrorCode.INCONSISTENT_VOTER_SET, "node 9 is not a voter"),
    "non-voter-begin": (begin(src=9), ErrorCode.INCONSISTENT_VOTER_SET, "node 9 is not a voter"),
    "non-voter-end": (end(src=9), ErrorCode.INCONSISTENT_VOTER_SET, "node 9 is not a voter"),
}


@pytest.fixture
async def node(tmp_path):
    """Node 2 of voters {1, 2, 3} at epoch 3, its loop running, serving on a free port."""
    path = quorum_state_path(tmp_path)
    write_initial(path, [1, 2, 3])
    store = FileElectionStore(path)
    store.write(ElectionState(3, None, None))
    log = MemoryRaftLog()
    core = RaftCore(2, frozenset({1, 2, 3}), log, store, random.Random(2), CONFIG, monotonic_ms())
    driver = RaftDriver(core, log, store, {}, cluster_id=CLUSTER)
    server = TrioGrpcServer("127.0.0.1:0", grace_s=0)
    QuorumServicer(driver).register(server)
    async with trio.open_nursery() as nursery:
        port = await nursery.start(server.serve)
        await nursery.start(driver.run)
        channel = open_channel(f"127.0.0.1:{port}")
        try:
            yield quorum_pb2_grpc.QuorumStub(channel), path
        finally:
            channel.close()
            await server.stop()
            nursery.cancel_scope.cancel()


@pytest.mark.parametrize("case", sorted(REFUSED))
async def test_a_bad_request_is_refused_and_changes_nothing(node, case):
    stub, path = node
    (method, request), error, named = REFUSED[case]
    before = path.read_bytes()
    answer = await call(getattr(stub, method), request, timeout=5)
    assert answer.error_code == error, answer
    assert named in answer.error_message, answer.error_message
    assert path.read_bytes() == before


async def test_a_good_request_is_still_answered(node):
    stub, path = node
    answer = await call(stub.BeginQuorumEpoch, begin()[1], timeout=5)
    assert answer.error_code == ErrorCode.NONE and answer.leader_id == 1
    assert FileElectionStore(path).read() == ElectionState(4, None, 1)
