"""An error answer built by `error_response` (a node whose loop did not answer in time) keeps a
follower following: it fetches again after the retry backoff, and does not start an election."""

import random

from simulation import SIM_CONFIG

from clients.errors import ErrorCode
from kraft.raft import ElectionState, MemoryElectionStore, MemoryRaftLog, RaftCore
from kraft.raft.messages import FetchRequest, error_response


def _sent(core: RaftCore) -> list:
    ready = core.ready()
    core.advance(ready)
    return list(ready.messages)


def test_a_follower_retries_a_fetch_answered_with_request_timed_out():
    core = RaftCore(
        2,
        frozenset({1, 2, 3}),
        MemoryRaftLog(),
        MemoryElectionStore(ElectionState(4, None, 1)),
        random.Random(0),
        SIM_CONFIG,
        0,
    )
    core.tick(0)
    [fetch] = _sent(core)
    assert isinstance(fetch, FetchRequest) and fetch.dst == 1
    core.step(error_response(fetch, 1, 4, 1, ErrorCode.REQUEST_TIMED_OUT), 10)
    assert core.role == "Follower" and core.leader_and_epoch == (1, 4)
    assert not core.has_ready()  # no fetch before the backoff
    core.tick(10 + SIM_CONFIG.retry_backoff_ms)
    [again] = _sent(core)
    assert isinstance(again, FetchRequest) and again.request_id != fetch.request_id
