"""A quorum of one voter needs no votes: the node leads from the moment it is built, with no
election timeout to wait out, fresh, after a restart as leader (which never resumes its epoch), and
after a restart that remembered a vote or another leader."""

import random

import pytest
from simulation import SIM_CONFIG

from kraft.raft import ElectionState, Entry, MemoryElectionStore, MemoryRaftLog, RaftCore

NOW = 5_000


def _drain(core: RaftCore, log: MemoryRaftLog, store: MemoryElectionStore) -> list:
    """Persist, flush and apply every pending Ready without moving the clock."""
    committed = []
    while core.has_ready():
        ready = core.ready()
        if ready.election_state is not None:
            store.write(ready.election_state)
        if ready.must_flush:
            log.flush()
        committed.extend(ready.committed)
        core.advance(ready)
    return committed


def test_a_fresh_sole_voter_leads_without_a_tick():
    log, store = MemoryRaftLog(), MemoryElectionStore()
    core = RaftCore(1, frozenset({1}), log, store, random.Random(3), SIM_CONFIG, NOW)
    committed = _drain(core, log, store)
    assert core.is_leader and core.epoch == 1
    assert store.read() == ElectionState(1, voted_for=1, leader_id=1)
    assert core.leader_and_epoch == (1, 1)
    assert core.leader_epoch_start_offset == 0
    assert [e.control for e in committed] == [True]  # its LeaderChange entry, committed at once
    assert core.high_watermark == 1


@pytest.mark.parametrize(
    "stored",
    [
        ElectionState(4, voted_for=1, leader_id=1),  # it led: restarts Resigned, then elects
        ElectionState(4, voted_for=1, leader_id=None),  # it had voted for itself
        ElectionState(4, voted_for=None, leader_id=None),
        ElectionState(4, voted_for=None, leader_id=7),  # a leader the voter set no longer names
    ],
    ids=["was-leader", "voted", "unattached", "followed-another"],
)
def test_a_restarted_sole_voter_leads_in_a_new_epoch_without_a_tick(stored):
    log, store = MemoryRaftLog(), MemoryElectionStore(stored)
    log.append([Entry(0, 4, b"old", control=True), Entry(1, 4, b"a")])
    log.flush()
    core = RaftCore(1, frozenset({1}), log, store, random.Random(3), SIM_CONFIG, NOW)
    committed = _drain(core, log, store)
    assert core.is_leader and core.epoch == 5
    assert core.leader_epoch_start_offset == 2
    assert [e.payload for e in committed if not e.control] == [b"a"]
    core.tick(NOW)  # a tick at the same instant changes nothing
    assert core.is_leader and core.epoch == 5


def test_an_observer_of_a_one_voter_quorum_does_not_elect_itself():
    log, store = MemoryRaftLog(), MemoryElectionStore()
    core = RaftCore(2, frozenset({1}), log, store, random.Random(3), SIM_CONFIG, NOW)
    _drain(core, log, store)
    assert not core.is_leader and core.epoch == 0
    assert core.leader_epoch_start_offset is None
