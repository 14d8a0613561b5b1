"""Each segment or metadata-log check sees exactly the anomaly planted for it: every anomaly sits
in its own topic (or metadata entry), one audit runs over them all, untouched topics stay clean."""

import struct

import google_crc32c
import pytest
import zstandard
from audit_helpers import BROKERS, Cluster, append_raw, batch, by_partition

from chaos.audit.job import run_audit
from clients.record.batch_header import set_base_offset_and_epoch
from clients.record.codec import encode_batch
from clients.record.control import encode_marker_batch
from kraft.log.checkpoint import write_epoch_checkpoint
from kraft.log.file_names import LEADER_EPOCH_CHECKPOINT
from kraft.log.offset_index import ENTRY as INDEX_ENTRY
from kraft.metadata import records as r

BAD = 5  # the replica an anomaly is planted in, when only one


def _on(node, fn):
    return lambda n, log: fn(log) if n == node else None


def plant_crc(c):
    def flip(log):  # a byte inside the first batch's records: its CRC no longer matches
        with open(log.segments[0].log_path, "r+b") as f:
            f.seek(100)
            b = f.read(1)
            f.seek(100)
            f.write(bytes([b[0] ^ 0xFF]))

    c.mutate(c.topic("crc"), _on(BAD, flip))


def plant_index(c):
    def shift(log):  # the first index entry now points one byte into a batch
        path = log.segments[0].offset_index.path
        data = bytearray(path.read_bytes())
        relative, position = INDEX_ENTRY.unpack_from(data, 0)
        INDEX_ENTRY.pack_into(data, 0, relative, position + 1)
        path.write_bytes(bytes(data))

    c.mutate(c.topic("index"), _on(BAD, shift))


def plant_overlap(c):
    def again(log):  # a batch re-covering offsets 57-59 after the log already ends at 59
        end = log.log_end_offset
        append_raw(log, batch([0, 1, 2], base_offset=end - 3, epoch=1))

    c.mutate(c.topic("overlap"), _on(BAD, again))


def plant_epoch_back(c):
    def older(log):  # the next batch carries epoch 0 after epoch 1
        append_raw(log, batch([7], base_offset=log.log_end_offset, epoch=0))

    c.mutate(c.topic("epochback"), _on(BAD, older))


def plant_checkpoint(c):
    def wrong(log):  # epoch 1 starts at 30 in the batches, at 31 in the checkpoint
        write_epoch_checkpoint(log.dir / LEADER_EPOCH_CHECKPOINT, [(0, 0), (1, 31)])

    c.mutate(c.topic("checkpoint"), _on(BAD, wrong))


def _rewrite_second_batch(c, name):
    _, values, _, _ = c.appends[name][0][1]

    def rewrite(log):  # batch 5-9 re-encoded with other timestamps: same size, other bytes
        seg = log.segments[0]
        pos, header = next((p, h) for p, h in seg.headers() if h.base_offset == 5)
        new = bytearray(batch(values, producer_id=1000, base_sequence=5, ts=9_000))
        set_base_offset_and_epoch(new, 0, 5, header.partition_leader_epoch)
        assert len(new) == header.size
        with open(seg.log_path, "r+b") as f:
            f.seek(pos)
            f.write(new)

    c.mutate(name, _on(BAD, rewrite))


def _skip_last_sequences(c, name):
    epoch, values, pid, seq = c.appends[name][0][-1]
    c.appends[name][0][-1] = (epoch, values, pid, seq + 3)  # the last batch skips 3 sequences


def plant_divergence(c):
    _rewrite_second_batch(c, c.topic("diverge"))


def plant_unassigned(c):
    c.topic("unassigned", epochs=3)  # batches in epochs 0-2 ...
    c.assigned["unassigned"] = 1  # ... but the metadata log only ever gave 0 and 1


def plant_sequence(c):
    _skip_last_sequences(c, c.topic("seq"))


def _epoch_1_from_29(log):  # epoch 1's first batch is at 30: as if compaction removed 29
    write_epoch_checkpoint(log.dir / LEADER_EPOCH_CHECKPOINT, [(0, 0), (1, 29)])


def plant_compacted(c):
    # The divergence, the sequence hole and an epoch starting before its first batch, in topics
    # compaction may have thinned (replicas compact on their own schedules): by config, and
    # __consumer_offsets by name. The same epoch entry in a topic never compacted is wrong.
    for name in (c.topic("compacted"), c.topic("__consumer_offsets")):
        _rewrite_second_batch(c, name)
        _skip_last_sequences(c, name)
        c.mutate(name, _on(BAD, _epoch_1_from_29))
    c.configs["compacted"] = {"cleanup.policy": "compact,delete"}
    c.mutate(c.topic("earlyepoch"), _on(BAD, _epoch_1_from_29))


def plant_torn_tail(c):
    def half(log):  # what a kill -9 in the middle of a write leaves: not a violation
        append_raw(log, batch([1, 2, 3], base_offset=log.log_end_offset, epoch=1)[:40])

    c.mutate(c.topic("torn"), _on(6, half))


def plant_records(c):
    def bad_records(node, log):  # intact batches (CRC right) whose records do not walk
        end = log.log_end_offset
        bomb = bytearray(batch([1]))
        bomb[61:] = zstd_stream_bomb(256 << 20)  # 8 KB inflating to 256 MiB
        cut = bytearray(batch([2, 3, 4])[:-3])  # the last record cut short
        for i, (b, codec) in enumerate(((bomb, 4), (cut, 0))):
            struct.pack_into(">i", b, 8, len(b) - 12)
            struct.pack_into(">h", b, 21, codec)
            set_base_offset_and_epoch(b, 0, end + i, 1)
            struct.pack_into(">I", b, 17, google_crc32c.value(bytes(b[21:])))
        append_raw(log, bytes(bomb) + bytes(cut))

    c.mutate(c.topic("records"), bad_records)  # on every replica: they agree, all are bad


def plant_markers(c):
    def markers(node, log):  # a well-formed COMMIT marker (clean), then a control batch of two
        end = log.log_end_offset  # records, whose second is no marker (on every replica)
        good = bytearray(encode_marker_batch(9, 0, True, 3, 2_000))
        bad = bytearray(
            encode_batch(
                [(b"\x00\x00\x00\x01", b"\x00" * 6, (), 2_000)] * 2,
                producer_id=9,
                producer_epoch=0,
                is_transactional=True,
                is_control=True,
            )
        )
        set_base_offset_and_epoch(good, 0, end, 1)
        set_base_offset_and_epoch(bad, 0, end + 1, 1)
        append_raw(log, bytes(good) + bytes(bad))

    c.mutate(c.topic("markers"), markers)


def zstd_stream_bomb(size: int) -> bytes:
    cobj = zstandard.ZstdCompressor().compressobj()
    return b"".join(cobj.compress(bytes(1 << 20)) for _ in range(size >> 20)) + cobj.flush()


def plant_metadata(c):
    # Same offset, same epoch, different entries: node 3 disagrees with nodes 1 and 2.
    c.controller_extra = {
        1: [r.NoOpRecord()],
        2: [r.NoOpRecord()],
        3: [r.ConfigRecord("topic", "clean", "retention.ms", "1")],
    }
    # Node 2's quorum-state names itself leader of epoch 1, which node 1 leads.
    c.quorum[2] = (1, 2)


@pytest.fixture(scope="module")
def audit(spark, tmp_path_factory):
    c = Cluster(tmp_path_factory.mktemp("planted"))
    c.topic("clean", partitions=2)
    for plant in (
        plant_crc,
        plant_index,
        plant_overlap,
        plant_epoch_back,
        plant_checkpoint,
        plant_divergence,
        plant_unassigned,
        plant_sequence,
        plant_torn_tail,
        plant_metadata,
        plant_compacted,
        plant_records,
        plant_markers,
    ):
        plant(c)
    result = run_audit(spark, [str(c.write())])
    result.metadata_end = len(c.metadata_entries())  # where the controllers' extra entry sits
    return result


def test_every_segment_and_metadata_check_ran(audit):
    assert set(audit.checks_run) == {
        "batch-integrity",
        "offset-order",
        "leader-epoch-order",
        "epoch-checkpoint",
        "replica-divergence",
        "epoch-not-assigned",
        "producer-sequence",
        "metadata-divergence",
        "multiple-leaders",
    }


def test_untouched_partitions_report_nothing(audit):
    found = by_partition(audit)
    assert "clean-0" not in found and "clean-1" not in found


def test_torn_tail_is_a_notice_not_a_violation(audit):
    assert "torn-0" not in by_partition(audit)
    [notice] = audit.notices
    assert notice.startswith("replica 6 torn-0: torn tail in segment") and "40 bytes left" in notice


def test_crc_mismatch_is_batch_integrity(audit):
    [(check, replicas, _)] = by_partition(audit)["crc-0"]
    assert (check, replicas) == ("batch-integrity", (BAD,))
    [v] = [v for v in audit.violations if v.partition == "crc-0"]
    assert "CRC mismatch at position 0" in v.message and v.values["segment"] == 0


def test_index_entry_inside_a_batch_is_batch_integrity(audit):
    [(check, replicas, offsets)] = by_partition(audit)["index-0"]
    assert (check, replicas) == ("batch-integrity", (BAD,)) and offsets
    [v] = [v for v in audit.violations if v.partition == "index-0"]
    assert "points inside a batch" in v.message


def test_overlapping_batch_is_offset_order(audit):
    assert by_partition(audit)["overlap-0"] == [("offset-order", (BAD,), (57, 59))]


def test_epoch_going_back_is_leader_epoch_order(audit):
    assert by_partition(audit)["epochback-0"] == [("leader-epoch-order", (BAD,), (60,))]


def test_wrong_epoch_checkpoint_is_epoch_checkpoint(audit):
    [(check, replicas, offsets)] = by_partition(audit)["checkpoint-0"]
    assert (check, replicas, offsets) == ("epoch-checkpoint", (BAD,), (30, 31))
    [v] = [v for v in audit.violations if v.partition == "checkpoint-0"]
    assert "epoch 1 starts at 31 in the checkpoint, 30 in the batches" in v.message


def test_replica_with_other_bytes_is_replica_divergence(audit):
    [(check, replicas, offsets)] = by_partition(audit)["diverge-0"]
    assert (check, replicas, offsets) == ("replica-divergence", BROKERS, (5, 9))
    [v] = [v for v in audit.violations if v.partition == "diverge-0"]
    assert len({c["digest"] for c in v.values["copies"]}) == 2


def test_compacted_topics_replicas_and_sequences_are_not_compared(audit):
    found = by_partition(audit)
    assert "compacted-0" not in found and "__consumer_offsets-0" not in found
    # The same planted differences in topics that are not compacted are still reported.
    assert [f[0] for f in found["diverge-0"]] == ["replica-divergence"]
    assert [f[0] for f in found["seq-0"]] == ["producer-sequence"]
    assert found["earlyepoch-0"] == [("epoch-checkpoint", (BAD,), (29, 30))]


def test_epoch_the_metadata_never_gave_is_epoch_not_assigned(audit):
    [(check, replicas, offsets)] = by_partition(audit)["unassigned-0"]
    assert (check, replicas, offsets) == ("epoch-not-assigned", BROKERS, (40, 59))
    [v] = [v for v in audit.violations if v.partition == "unassigned-0"]
    assert (v.values["epoch"], v.values["assigned_hi"]) == (2, 1)


def test_sequence_gap_is_producer_sequence(audit):
    [(check, replicas, offsets)] = by_partition(audit)["seq-0"]
    assert (check, replicas, offsets) == ("producer-sequence", BROKERS, (55, 59))
    [v] = [v for v in audit.violations if v.partition == "seq-0"]
    assert "skips sequences" in v.message and v.values["sequences"] == [58, 62]


def test_controller_with_another_entry_is_metadata_divergence(audit):
    found = by_partition(audit)["__cluster_metadata-0"]
    divergent = [f for f in found if f[0] == "metadata-divergence"]
    assert divergent == [("metadata-divergence", (1, 2, 3), (audit.metadata_end,))]
    [v] = [v for v in audit.violations if v.check == "metadata-divergence"]
    assert "Config@epoch 1" in v.message and "NoOp@epoch 1" in v.message


def test_two_leaders_in_one_epoch_is_multiple_leaders(audit):
    leaders = [f for f in by_partition(audit)["__cluster_metadata-0"] if f[0] == "multiple-leaders"]
    assert leaders == [("multiple-leaders", (1, 2), ())]
    [v] = [v for v in audit.violations if v.check == "multiple-leaders"]
    assert v.values["epoch"] == 1 and "quorum-state of node 2" in v.message


def test_intact_batches_whose_records_do_not_walk_are_batch_integrity(audit):
    found = by_partition(audit)["records-0"]
    assert sorted(found) == sorted(
        [("batch-integrity", (n,), (60,)) for n in BROKERS]
        + [("batch-integrity", (n,), (61, 63)) for n in BROKERS]
    )
    messages = {v.message for v in audit.violations if v.partition == "records-0"}
    assert any("inflates past the bound" in m for m in messages)
    assert any("record 2: it runs past the end" in m for m in messages)


def test_a_control_batch_that_is_no_single_marker_is_batch_integrity(audit):
    found = by_partition(audit)["markers-0"]
    assert sorted(found) == sorted([("batch-integrity", (n,), (61, 62)) for n in BROKERS])
    messages = {v.message for v in audit.violations if v.partition == "markers-0"}
    assert any("holds 2 records, not one" in m for m in messages), messages


def test_nothing_else_is_reported(audit):
    planted = {
        "crc-0",
        "index-0",
        "overlap-0",
        "epochback-0",
        "checkpoint-0",
        "diverge-0",
        "unassigned-0",
        "seq-0",
        "earlyepoch-0",
        "__cluster_metadata-0",
        "records-0",
        "markers-0",
    }
    assert set(by_partition(audit)) == planted
    assert len(by_partition(audit)["__cluster_metadata-0"]) == 2
