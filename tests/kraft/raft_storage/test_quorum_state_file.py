"""The `quorum-state` file: Kafka's JSON shape, a crash-safe round trip, and a clear stop (naming
the file and `kraft format`) when it is damaged, never a silently empty vote."""

import json

import pytest

from kraft.raft.disk import FileElectionStore, QuorumStateError, quorum_state_path, write_initial
from kraft.raft.log import ElectionState


@pytest.fixture
def path(tmp_path):
    return quorum_state_path(tmp_path)


def test_a_missing_file_reads_as_none(path):
    assert FileElectionStore(path).read() is None


def test_write_initial_writes_kafkas_shape(path):
    write_initial(path, [3, 1, 2])
    assert json.loads(path.read_text()) == {
        "clusterId": "",
        "leaderId": -1,
        "leaderEpoch": 0,
        "votedId": -1,
        "appliedOffset": 0,
        "currentVoters": [{"voterId": 1}, {"voterId": 2}, {"voterId": 3}],
        "data_version": 0,
    }
    assert FileElectionStore(path).read() == ElectionState(epoch=0)


def test_write_initial_will_not_replace_a_vote(path):
    write_initial(path, [1])
    FileElectionStore(path).write(ElectionState(epoch=4, voted_for=1))
    with pytest.raises(FileExistsError, match="already exists"):
        write_initial(path, [1])
    assert FileElectionStore(path).read() == ElectionState(epoch=4, voted_for=1)


def test_writes_round_trip_and_keep_the_voters(path):
    write_initial(path, [1, 2, 3])
    store = FileElectionStore(path)
    store.write(ElectionState(epoch=5, voted_for=2))
    store.write(ElectionState(epoch=6, voted_for=3, leader_id=3))
    again = FileElectionStore(path)
    assert again.read() == ElectionState(epoch=6, voted_for=3, leader_id=3)
    assert again.voters == (1, 2, 3)
    doc = json.loads(path.read_text())
    assert (doc["leaderEpoch"], doc["votedId"], doc["leaderId"]) == (6, 3, 3)


def test_a_write_leaves_no_temporary_file(path):
    write_initial(path, [1])
    FileElectionStore(path).write(ElectionState(epoch=1, voted_for=1))
    assert sorted(p.name for p in path.parent.iterdir()) == ["quorum-state"]


def test_a_torn_temporary_file_does_not_touch_the_state(path):
    write_initial(path, [1])
    FileElectionStore(path).write(ElectionState(epoch=2, leader_id=1))
    path.with_name("quorum-state.tmp").write_text('{"leaderEpoch": 9')  # crash before rename
    assert FileElectionStore(path).read() == ElectionState(epoch=2, leader_id=1)


@pytest.mark.parametrize(
    "content, why",
    [
        ('{"leaderId": -1, "leaderEpoch": 3', "not valid JSON"),
        ("", "not valid JSON"),
        ("[1, 2]", "expected a JSON object"),
        (
            '{"leaderId": -1, "leaderEpoch": 3, "votedId": -1, "data_version": 0}',
            "missing appliedOffset, currentVoters",
        ),
        (
            '{"leaderId": -1, "leaderEpoch": "3", "votedId": -1, "appliedOffset": 0, '
            '"currentVoters": [], "data_version": 0}',
            "leaderEpoch must be integers",
        ),
        (
            '{"leaderId": -1, "leaderEpoch": 3, "votedId": -1, "appliedOffset": 0, '
            '"currentVoters": [], "data_version": 7}',
            "data_version is 7",
        ),
        (
            '{"leaderId": -1, "leaderEpoch": -2, "votedId": -1, "appliedOffset": 0, '
            '"currentVoters": [], "data_version": 0}',
            "leaderEpoch is -2, below 0",
        ),
        (
            '{"leaderId": -1, "leaderEpoch": 3, "votedId": -1, "appliedOffset": 0, '
            '"currentVoters": [1], "data_version": 0}',
            "currentVoters must be a list",
        ),
        # Out of the wire types' range: the node would crash sending it (int32 epochs and ids).
        (
            '{"leaderId": -1, "leaderEpoch": 2147483648, "votedId": -1, "appliedOffset": 0, '
            '"currentVoters": [], "data_version": 0}',
            "leaderEpoch is 2147483648, above the largest",
        ),
        # What one forged BeginQuorumEpoch left behind before requests were checked: no election
        # can follow the last int32 epoch.
        (
            '{"leaderId": 2, "leaderEpoch": 2147483647, "votedId": -1, "appliedOffset": 0, '
            '"currentVoters": [], "data_version": 0}',
            "leaderEpoch is 2147483647, above the largest",
        ),
        (
            '{"leaderId": 2147483648, "leaderEpoch": 3, "votedId": -1, "appliedOffset": 0, '
            '"currentVoters": [], "data_version": 0}',
            "leaderId is 2147483648, outside -1..2147483647",
        ),
        (
            '{"leaderId": -1, "leaderEpoch": 3, "votedId": -7, "appliedOffset": 0, '
            '"currentVoters": [], "data_version": 0}',
            "votedId is -7, outside -1..2147483647",
        ),
        (
            '{"leaderId": -1, "leaderEpoch": 3, "votedId": -1, "appliedOffset": 9223372036854775808, '
            '"currentVoters": [], "data_version": 0}',
            "appliedOffset is 9223372036854775808",
        ),
        (
            '{"leaderId": -1, "leaderEpoch": 3, "votedId": -1, "appliedOffset": 0, '
            '"currentVoters": [{"voterId": -3}], "data_version": 0}',
            "voterId -3 is outside",
        ),
        (
            '{"leaderId": -1, "leaderEpoch": 3, "votedId": -1, "appliedOffset": 0, '
            '"currentVoters": [{"voterId": true}], "data_version": 0}',
            "currentVoters must be a list",
        ),
    ],
)
def test_a_damaged_file_stops_the_node_with_help(path, content, why):
    path.parent.mkdir(parents=True)
    path.write_text(content)
    store = FileElectionStore(path)
    with pytest.raises(QuorumStateError) as raised:
        store.read()
    message = str(raised.value)
    assert f"quorum-state at {path} is unreadable" in message
    assert why in message
    assert "kraft format" in message
    with pytest.raises(QuorumStateError):  # nor may a write paper over it
        store.write(ElectionState(epoch=4))
    assert path.read_text() == content


def test_kafkas_version_1_without_cluster_id_is_readable(path):
    path.parent.mkdir(parents=True)
    path.write_text(
        '{"leaderId":2,"leaderEpoch":7,"votedId":2,"appliedOffset":0,'
        '"currentVoters":[{"voterId":2}],"data_version":1}'
    )
    assert FileElectionStore(path).read() == ElectionState(epoch=7, voted_for=2, leader_id=2)
