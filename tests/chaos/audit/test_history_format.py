"""The history and faults files round-trip through the writer and reader the workload and the
audit share; partitions normalise; a torn last line is skipped; a bad line is named."""

import pytest

from chaos.history import FaultWindow, HistoryError, JsonLinesWriter, Op, read_faults, read_history


def test_ops_and_faults_round_trip(tmp_path):
    ops = [
        Op(0, "invoke", "send", 1, 42, "orders-0"),
        Op(0, "ok", "send", 2, 42, "orders-0", 17),
        Op("c1", "ok", "poll", 3, {"orders-0": [[17, 42]]}, rebalanced=("orders-1",)),
        Op("c1", "ok", "commit", 4, {"orders-0": 18}, group="g"),
    ]
    with JsonLinesWriter(tmp_path / "h.jsonl") as w:
        for op in ops:
            w.write(op)
    assert read_history(tmp_path / "h.jsonl") == ops
    windows = [FaultWindow("kill", (2,), 10, 20), FaultWindow("partition", (1, 3), 30, None)]
    with JsonLinesWriter(tmp_path / "f.jsonl") as w:
        for fw in windows:
            w.write(fw)
    assert read_faults(tmp_path / "f.jsonl") == windows


def test_partitions_normalise_and_polls_read_back(tmp_path):
    (tmp_path / "h.jsonl").write_text(
        '{"process":1,"type":"ok","f":"send","time":5,"value":3,"partition":["my-topic",2],"offset":9}\n'
        '{"process":1,"type":"ok","f":"poll","time":6,"value":[[9,3]],"partition":"my-topic-2"}\n'
    )
    send, poll = read_history(tmp_path / "h.jsonl")
    assert send.partition == "my-topic-2" and poll.reads() == {"my-topic-2": [(9, 3)]}


def test_torn_last_line_is_skipped(tmp_path):
    (tmp_path / "h.jsonl").write_text('{"process":1,"type":"invoke","f":"poll","time":1}\n{"proc')
    assert len(read_history(tmp_path / "h.jsonl")) == 1


@pytest.mark.parametrize(
    "line, expected",
    [
        (
            '{"process":1,"type":"ok","f":"send","time":1,"value":3}',
            "line 2: a send needs a partition",
        ),
        ('{"process":1,"type":"done","f":"poll","time":1}', "line 2: type 'done' is not one of"),
        (
            '{"process":1,"type":"ok","f":"poll","time":1,"value":[[1,2]]}',
            "needs a top-level partition",
        ),
        ("[1, 2]", "line 2: expected a JSON object"),
        (
            '{"process":1,"type":"ok","f":"commit","time":1,"value":{},"group":7}',
            "line 2: group 7 is not a string",
        ),
    ],
)
def test_a_bad_line_is_named(tmp_path, line, expected):
    (tmp_path / "h.jsonl").write_text(
        '{"process":1,"type":"invoke","f":"poll","time":1}\n' + line + "\n"
    )
    with pytest.raises(HistoryError, match=expected):
        read_history(tmp_path / "h.jsonl")
