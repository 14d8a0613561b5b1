"""Through two replica managers on segment files: retention on the leader deletes what a stopped
follower would fetch next; the follower's fetch is answered OFFSET_OUT_OF_RANGE with the leader's
log start, it starts its log over there, catches up and is proposed back into the ISR."""

from broker.replication.messages import FetchAnswer
from broker.replication.replica_manager import ReplicaManager
from clients.errors import ErrorCode
from clients.record.codec import decode_records, encode_batch
from kraft.log.log_config import LogConfig
from kraft.log.log_manager import LogManager
from kraft.metadata.image import PartitionRegistration

TOPIC = "t"
# Small segments, so retention can delete some; an hour of retention against timestamps of 0.
CONFIG = LogConfig(segment_bytes=200, retention_ms=3_600_000)
REG = PartitionRegistration(replicas=(1, 2), isr=(1,), leader=1, leader_epoch=1, partition_epoch=1)


def manager(tmp_path, node_id: int) -> ReplicaManager:
    rm = ReplicaManager(
        LogManager([tmp_path / f"n{node_id}"], CONFIG, now_ms=0),
        node_id,
        broker_epoch=lambda: 10 * node_id,
        clock_ms=lambda: 0,
    )
    rm.apply_registration(TOPIC, 0, "id", CONFIG, REG, now_ms=0)
    return rm


def fetch_once(follower: ReplicaManager, leader: ReplicaManager, now_ms: int):
    [(hosted, fetch)] = follower.followed_from(1)
    result = leader.read_for_follower(
        TOPIC,
        0,
        2,
        fetch.fetch_offset,
        fetch.last_fetched_epoch,
        fetch.current_leader_epoch,
        1 << 20,
        now_ms,
        broker_epoch=fetch.broker_epoch,
    )
    follower.apply_fetch_response(
        hosted,
        fetch,
        FetchAnswer(
            ErrorCode(result.error_code),
            result.high_watermark,
            result.log_start_offset,
            result.diverging_epoch,
            result.records,
        ),
        now_ms,
    )
    return result


def values(rm: ReplicaManager) -> list[bytes]:
    log = rm.get(TOPIC, 0).log
    return [r.value for r in decode_records(log.read(log.log_start_offset, 1 << 20).records)]


def test_a_follower_behind_retention_starts_at_the_leaders_log_start_and_rejoins(tmp_path):
    leader, follower = manager(tmp_path, 1), manager(tmp_path, 2)
    for i in range(3):
        assert (
            leader.append(TOPIC, 0, encode_batch([(None, b"old%d" % i, (), 0)]), 1, 0).error_code
            == 0
        )
    fetch_once(follower, leader, 1)  # a read stops at a segment's end: two fetches
    fetch_once(follower, leader, 1)
    assert follower.get(TOPIC, 0).log.log_end_offset == 3  # then it stops
    for i in range(12):
        leader.append(TOPIC, 0, encode_batch([(None, b"new%d" % i, (), 0)]), 1, 0)
    leader.log_manager.cleanup(now_ms=7_200_000)
    start = leader.get(TOPIC, 0).log.log_start_offset
    assert start > 3, "retention deleted nothing: the scenario needs it to"

    answer = fetch_once(follower, leader, 2)
    assert answer.error_code == ErrorCode.OFFSET_OUT_OF_RANGE
    log = follower.get(TOPIC, 0).log
    assert (log.log_start_offset, log.log_end_offset, log.high_watermark) == (start, start, start)

    for now in range(3, 12):
        assert fetch_once(follower, leader, now).error_code == ErrorCode.NONE
    assert values(follower) == values(leader)
    assert [p.new_isr for _, p in leader.take_isr_proposals()] == [(1, 2)]
