"""An inbound Raft RPC the loop does not answer in time gets the RPC's own response with
REQUEST_TIMED_OUT (plus the node's epoch and leader), not a gRPC UNKNOWN status; it comes before
the requester's core gives up, and the unanswered request is dropped, never acted on later."""

from __future__ import annotations

import random
import time

import trio

from broker.metadata.servicer import QuorumServicer
from clients.bridge import call, open_channel
from clients.errors import ErrorCode
from clients.grpc_server import TrioGrpcServer
from clients.wire import quorum_pb2_grpc
from kraft.raft import (
    ElectionState,
    MemoryElectionStore,
    MemoryRaftLog,
    RaftConfig,
    RaftCore,
    codec,
)
from kraft.raft.driver import RaftDriver, monotonic_ms
from kraft.raft.messages import FetchRequest, FetchResponse, VoteRequest, VoteResponse

# A long election timeout: the node must not start an election of its own during the test.
CONFIG = RaftConfig(
    election_timeout_ms=10_000,
    fetch_timeout_ms=20_000,
    request_timeout_ms=300,
    fetch_max_wait_ms=100,
)
CLUSTER = "c-stalled"


def _driver(store: MemoryElectionStore) -> RaftDriver:
    log = MemoryRaftLog()
    core = RaftCore(2, frozenset({1, 2, 3}), log, store, random.Random(2), CONFIG, monotonic_ms())
    return RaftDriver(core, log, store, {}, cluster_id=CLUSTER)


def _request(message):
    request = codec.to_proto(message)
    request.cluster_id = CLUSTER
    return request


async def test_a_request_to_a_loop_that_does_not_run_gets_an_error_answer_over_grpc():
    store = MemoryElectionStore(ElectionState(3, None, None))
    driver = _driver(store)  # its loop is not running: nothing will answer
    server = TrioGrpcServer("127.0.0.1:0", grace_s=0)
    QuorumServicer(driver).register(server)
    async with trio.open_nursery() as serving:
        port = await serving.start(server.serve)
        channel = open_channel(f"127.0.0.1:{port}")
        try:
            await _ask_the_stalled_node(channel, driver, store)
        finally:
            channel.close()
            await server.stop()


async def _ask_the_stalled_node(channel, driver, store) -> None:
    stub = quorum_pb2_grpc.QuorumStub(channel)
    began = time.monotonic()
    answer = codec.from_proto(
        await call(
            stub.Fetch,
            _request(FetchRequest(1, 2, 3, 0, 0, request_id=9, max_wait_ms=100)),
            timeout=2,
        )
    )
    took_ms = (time.monotonic() - began) * 1000
    assert answer == FetchResponse(2, 1, 3, None, 9, ErrorCode.REQUEST_TIMED_OUT)
    # Long poll plus half the rest of the request timeout: before the requester resends.
    assert 150 <= took_ms < CONFIG.request_timeout_ms + 100

    vote = codec.from_proto(
        await call(
            stub.Vote, _request(VoteRequest(1, 2, epoch=4, last_epoch=3, last_offset=0)), timeout=2
        )
    )
    assert vote == VoteResponse(
        2, 1, 3, None, vote_granted=False, error=ErrorCode.REQUEST_TIMED_OUT
    )

    # Once the loop runs, the vote request it never answered is not granted behind our back.
    async with trio.open_nursery() as nursery:
        await nursery.start(driver.run)
        await trio.sleep(0.1)
        nursery.cancel_scope.cancel()
    assert store.read() == ElectionState(3, None, None)
