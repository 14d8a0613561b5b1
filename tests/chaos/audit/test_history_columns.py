"""The history scan's columnar path (pyarrow's JSON reader, chaos/audit/history_columns.py) gives
the event rows the per-line path gives (json.loads and Op.from_json), and leaves to the per-line
path every range it cannot read exactly, so that bad lines are reported as before. No Spark:
the scan is called as mapInArrow would call it."""

import dataclasses
import random

import pytest
from test_history_differential import random_history

from chaos.audit import history_scan as hs
from chaos.audit.history_columns import Events, Unfit, events
from chaos.history import Op

GOOD = '{"process":1,"type":"invoke","f":"poll","time":1,"value":null}\n'


def _scan(path, per_line: bool, monkeypatch) -> list:
    """The scan's chunk rows of the whole file, as (kind, key, [event fields]) per event, in
    (kind, key, idx, pos) order, pos left out (it orders a poll's values within a partition);
    then ("fields", kind, the fields it has) per kind."""
    import pyarrow as pa

    with monkeypatch.context() as m:
        if per_line:

            def refuse(*_):
                raise Unfit("the per-line path, for comparison")

            m.setattr(hs, "events", refuse)
        size = path.stat().st_size
        ranges = hs.plan_ranges(str(path), size, 2)
        rows = pa.RecordBatch.from_pydict(
            {
                "path": [r[0] for r in ranges],
                "start": [r[1] for r in ranges],
                "end": [r[2] for r in ranges],
            }
        )
        batches = list(hs.scan([rows]))
    names = [n for n, _ in hs.EVENT_FIELDS]
    out, shapes = [], set()
    for batch in batches:
        d = batch.to_pydict()
        for i in range(batch.num_rows):
            idx = d["idx"][i]
            assert idx == sorted(idx), "a chunk's lists are in file order"
            # a field the kind lacks is a null list, the others one element per event
            present = tuple(n for n in names if d[n][i] is not None)
            assert all(len(d[n][i]) == len(idx) for n in present)
            shapes.add(("fields", d["kind"][i], present))
            for j in range(len(idx)):
                event = {n: None if d[n][i] is None else d[n][i][j] for n in names}
                out.append(
                    (
                        d["kind"][i],
                        d["key"][i],
                        event["idx"],
                        event["pos"] or 0,
                        [event[n] for n in names if n != "pos"],
                    )
                )
    return [
        (kind, key, fields)
        for kind, key, _, _, fields in sorted(out, key=lambda e: (e[0], e[1] or "", e[2], e[3]))
    ] + sorted(shapes)


def _columnar(path) -> bool:
    try:
        events(path.read_bytes(), 0, Events())
    except Unfit:
        return False
    return True


@pytest.mark.parametrize("seed", range(6))
def test_the_same_events_as_line_by_line(tmp_path, monkeypatch, seed):
    ops, _ = random_history(random.Random(seed), junk=False)
    # a multi-partition poll and commit, a null polled value, a commit with no group
    ops += [
        Op("w0", "invoke", "send", 10**12, 5, "t-0"),
        Op("w0", "ok", "send", 10**12 + 1, 5, "t-0", 3),
        Op("r0", "ok", "poll", 10**12 + 2, {"t-0": [[3, 5], [4, None]], "u-0": [[0, 1]]}),
        Op("c", "ok", "commit", 10**12 + 3, {"t-0": 4, "u-0": 1}, group=None),
    ]
    if seed % 3 == 0:  # the chaos workload's processes are ints
        number = {}
        ops = [
            dataclasses.replace(op, process=number.setdefault(op.process, len(number)))
            for op in ops
        ]
    path = tmp_path / "history.jsonl"
    hs.write_ops(path, ops)
    assert _columnar(path)
    if seed % 2:  # ranges of a few hundred bytes: lines cut by range ends
        monkeypatch.setattr(hs, "RANGE_BYTES", 900)
    fast = _scan(path, False, monkeypatch)
    assert fast == _scan(path, True, monkeypatch)
    assert {kind for kind, _, _ in fast} == {
        "op",
        "send",
        "read",
        "rebalance",
        "reset",
        "commit",
        "fields",
    }


@pytest.mark.parametrize(
    "line",
    [
        '{"process":1,"type":"ok","f":"send","time":1,"value":3}',  # no partition
        '{"process":1,"type":"done","f":"poll","time":1}',
        '{"process":1,"type":"ok","f":"poll","time":1,"value":[[1,2]]}',  # list form, no partition
        '{"process":1,"type":"ok","f":"poll","time":1,"value":[[1,2]],"partition":"t-0"}',
        "[1, 2]",
        '{"process":null,"type":"ok","f":"poll","time":1}',  # from_json: "None"
        '{"process":true,"type":"ok","f":"poll","time":1}',
        '{"process":"a","type":"ok","f":"poll","time":1}',  # int and str in a group
        '{"process":1,"type":"ok","f":"poll","time":1.5}',
        '{"process":1,"type":"ok","f":"poll"}',
        '{"process":1,"type":"ok","f":"commit","time":1,"value":{"t-0":null}}',
        '{"process":1,"type":"ok","f":"poll","time":1,"value":{"t-0":null}}',
        # a null where other lines have a value: the reader would take it for an absent partition
        '{"process":1,"type":"ok","f":"commit","time":1,"value":{"t-0":1}}\n'
        '{"process":1,"type":"ok","f":"commit","time":2,"value":{"t-0":null}}',
        '{"process":1,"type":"ok","f":"poll","time":1,"value":{"t-0":[[1,2]]}}\n'
        '{"process":1,"type":"ok","f":"poll","time":2,"value":{"t-0":null,"u-0":[[1,2]]}}',
        '{"process":1,"type":"ok","f":"poll","time":1,"value":{"t-0":[[1]]}}',
        '{"process":1,"type":"ok","f":"poll","time":1,"value":{"t-0":[null]}}',
        '{"process":1,"type":"ok","f":"poll","time":1,"value":{"t-0":[[null,2]]}}',  # reader bug
        '{"process":1,"type":"ok","f":"poll","time":1,"value":{"t-0":[[1,2],[null,2]]}}',
        '{"process":1,"type":"ok","f":"poll","time":1,"value":{"t":[[1,2]]}}',
        '{"process":1,"type":"ok","f":"poll","time":1,"value":{"t-0":[[1,"x"]]}}',
        '{"process":1,"type":"ok","f":"poll","time":1,"value":{"t-0":[[1,2]],"t-0":[[3,4]]}}',
        '{"process":1,"type":"ok","f":"poll","time":1,"rebalanced":["t"]}',
        '{"process":1,"type":"ok","f":"poll","time":1,"rebalanced":[null]}',
        '{"process":1,"type":"ok","f":"send","time":1,"value":3,"partition":"t-0","offset":"5"}',
        '{"process":1,"type":"ok","f":"send","time":1,"value":3,"partition":"t-\u0663"}',
        '{"process":1,"type":"ok","f":"send","time":1,"value":"3","partition":"t-0"}',
        '{"process":1,"type":"ok","f":"send","time":1,"value":3,"partition":"t-0"} {"a":1}',
        '{"process":1,"type":"ok","f": "poll","time":1}',
        ' {"process":1,"type":"ok","f":"poll","time":1}',
        "",
        '{"process":"\xff","type":"ok","f":"poll","time":1}',
        '{"x":{"f":"send"},"process":1,"type":"ok","f":"poll","time":1}',  # a nested "f" first
        '{"process":1,"type":"ok","f":"sexy","time":1}',
    ],
)
def test_lines_left_to_the_per_line_path(tmp_path, monkeypatch, line):
    path = tmp_path / "history.jsonl"
    data = (GOOD + line + "\n" + GOOD).encode("utf-8", "surrogateescape")
    if "\xff" in line:
        data = data.replace("\xff".encode(), b"\xff")
    path.write_bytes(data)
    assert not _columnar(path)
    assert _scan(path, False, monkeypatch) == _scan(path, True, monkeypatch)


@pytest.mark.parametrize(
    "tail, read",
    [
        ('{"process":1,"type":"ok","f":"po', False),
        ('{"process":1,"type":"ok","f":"poll","time":2}', True),
    ],
)
def test_a_last_line_without_newline(tmp_path, monkeypatch, tail, read):
    """A torn last line is skipped, a whole one read, as line by line."""
    path = tmp_path / "history.jsonl"
    path.write_text(GOOD * 3 + tail)
    fast = _scan(path, False, monkeypatch)
    assert fast == _scan(path, True, monkeypatch)
    assert len([e for e in fast if e[0] == "op"]) == 3 + read
    assert not any(kind == "error" for kind, _, _ in fast)
