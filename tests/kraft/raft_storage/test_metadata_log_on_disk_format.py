"""The metadata log's files are laid out as Kafka's: `__cluster_metadata-0/` with Kafka-named segments,
one v2 batch per entry (epoch in partitionLeaderEpoch, control bit), snapshot, quorum-state."""

from clients.record.codec import decode_batch, iter_batches
from kraft.raft.disk import FileRaftLog, metadata_log_dir, quorum_state_path, write_initial
from kraft.raft.log import Entry, OffsetAndEpoch
from kraft.raft.snapshot_files import decode_snapshot


def test_names_in_the_log_dir(tmp_path):
    assert metadata_log_dir(tmp_path) == tmp_path / "__cluster_metadata-0"
    assert quorum_state_path(tmp_path) == tmp_path / "__cluster_metadata-0" / "quorum-state"
    log = FileRaftLog(metadata_log_dir(tmp_path), now_ms=0)
    write_initial(quorum_state_path(tmp_path), [1])
    log.append([Entry(0, 1, b"a"), Entry(1, 2, b"b"), Entry(2, 2, b"c")])
    log.create_snapshot(OffsetAndEpoch(2, 2), b"image")
    log.close()
    assert sorted(p.name for p in log.dir.iterdir()) == [
        "00000000000000000000.index",
        "00000000000000000000.log",
        "00000000000000000000.timeindex",
        "00000000000000000002-0000000002.checkpoint",
        "leader-epoch-checkpoint",
        "quorum-state",
    ]
    snapshot = log.dir / "00000000000000000002-0000000002.checkpoint"
    assert decode_snapshot(snapshot.read_bytes(), snapshot) == b"image"


def test_each_entry_is_one_v2_batch_with_its_offset_epoch_and_control_bit(tmp_path):
    log = FileRaftLog(metadata_log_dir(tmp_path), now_ms=0, clock=lambda: 1234)
    log.append([Entry(0, 3, b"record"), Entry(1, 3, b"leader change", control=True)])
    log.append([Entry(2, 5, b"")])
    log.flush()
    raw = (log.dir / "00000000000000000000.log").read_bytes()
    batches = [decode_batch(raw, pos) for pos, _ in iter_batches(raw)]
    assert [
        (h.base_offset, h.partition_leader_epoch, h.is_control, h.records_count) for h, _ in batches
    ] == [(0, 3, False, 1), (1, 3, True, 1), (2, 5, False, 1)]
    assert [records[0].value for _, records in batches] == [b"record", b"leader change", b""]
    assert {records[0].timestamp for _, records in batches} == {1234}
    assert sum(h.size for h, _ in batches) == len(raw)  # nothing else in the segment
