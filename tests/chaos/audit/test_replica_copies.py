"""Replicas' byte-identical copies of a segment are read once by the segment scan (scan_batches,
each copy's index still checked on its own) and decoded once for the history checks
(log_chunks); a copy that differs is read on its own. No Spark: they are called as the
audit's tasks call them, a segment's copies one after another."""

from dataclasses import asdict

import pyarrow as pa
from audit_helpers import Cluster, append_raw, batch

from chaos.audit import segments
from chaos.audit.inputs import load_cluster


def _files(tmp_path):
    cluster = Cluster(tmp_path)
    cluster.topic("t", partitions=2)
    # broker 6's copy of t's active segment gets one more batch: not byte-identical
    cluster.mutate(
        "t",
        lambda node, log: (
            node == 6 and append_raw(log, batch([900, 901], base_offset=log.log_end_offset))
        ),
    )
    files = load_cluster([str(cluster.write(metadata=False))]).segments
    # as the audit hands them to a task: a segment's copies one after another
    return sorted(files, key=lambda f: (f.topic, f.partition, f.segment, f.replica))


def _count_calls(monkeypatch, name: str) -> list:
    """The (partition, segment, replica) of each file segments.<name> is called on from now."""
    calls, real = [], getattr(segments, name)

    def counting(seg):
        calls.append((seg["partition"], seg["segment"], seg["replica"]))
        return real(seg)

    monkeypatch.setattr(segments, name, counting)
    return calls


def _rows(batches) -> list:
    return [row for b in batches for row in b.to_pylist()]


def test_identical_copies_decoded_once(tmp_path, monkeypatch):
    files = _files(tmp_path)
    alone = [_rows(segments.log_chunks([pa.RecordBatch.from_pylist([asdict(f)])])) for f in files]
    decoded = _count_calls(monkeypatch, "scan_records")
    together = _rows(segments.log_chunks([pa.RecordBatch.from_pylist([asdict(f) for f in files])]))
    assert together == [row for rows in alone for row in rows]
    segs = {(f.partition, f.segment) for f in files}
    last = {(f.partition, f.segment) for f in files if f.is_last}
    # each segment once, from its first replica (4), and broker 6's differing active segments
    assert sorted(decoded) == sorted([(p, s, 4) for p, s in segs] + [(p, s, 6) for p, s in last])
    assert any(900 in row["value"] for row in together if row["replica"] == 6)


def test_identical_copies_scanned_once_each_index_checked(tmp_path, monkeypatch):
    files = _files(tmp_path)
    first = next(f for f in files if f.replica == 5 and f.segment == 0)
    with open(first.index_path, "ab") as f:
        f.write(b"\0\0\0")  # broker 5's index of segment 0: a torn entry
    alone = [list(segments.scan_batches(asdict(f))) for f in files]
    read = _count_calls(monkeypatch, "_log_rows")
    memo = {}
    together = [list(segments.scan_batches(asdict(f), memo)) for f in files]
    assert together == alone
    segs = {(f.partition, f.segment) for f in files}
    last = {(f.partition, f.segment) for f in files if f.is_last}
    assert sorted(read) == sorted([(p, s, 4) for p, s in segs] + [(p, s, 6) for p, s in last])
    index = [row[0] for rows in together for row in rows if row[-1] == "index"]
    assert index == [5]
