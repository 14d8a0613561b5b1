"""The transactional checks over hand-made histories: a clean one gives nothing, and each planted
anomaly is found by its check and no other."""

import json

import pytest

from chaos.audit.txn_checks import check_transactions, read_txn_history

IN, OUT = "chaos-txn-in", "chaos-txn-out"


class History:
    def __init__(self):
        self.lines, self.t = [], 0

    def op(self, process, type_, f, value=None, time=None):
        self.t += 1_000_000
        self.lines.append(
            {
                "process": process,
                "type": type_,
                "f": f,
                "time": self.t if time is None else time,
                "value": value,
            }
        )

    def txn(self, txn_id, inputs, outcome, commit=True):
        """inputs: [(input partition, offset, value)]; writes go to the same output partition."""
        reads, writes = {}, {}
        for p, o, v in inputs:
            reads.setdefault(f"{IN}-{p}", []).append(o)
            writes.setdefault(f"{OUT}-{p}", []).append(f"{txn_id}/{p}:{o}:{v}")
        value = {"id": txn_id, "reads": reads, "writes": writes}
        self.op("processor-0.1", "invoke", "txn", value)
        commit_at = self.t + 500_000 if commit else None
        self.op("processor-0.1", outcome, "txn", {**value, "commit_at": commit_at})
        return writes, commit_at

    def read(self, f, process, records, time=None):
        """records: {partition: [(offset, value)]}"""
        self.op(
            process,
            "ok",
            f,
            {p: [[o, v] for o, v in pairs] for p, pairs in records.items()},
            time=time,
        )

    def write(self, path):
        path.write_text("".join(json.dumps(line) + "\n" for line in self.lines))
        return str(path)


def clean_history():
    """Inputs 0..3 of partition 0: txn a (0, 1) committed, txn b (2) aborted, txn c (2, 3)
    committed after it; the group's committed offset is 4."""
    h = History()
    h.read("drain-in", "drain", {f"{IN}-0": [(i, str(10 + i)) for i in range(4)]}, time=0)
    h.txn("a", [(0, 0, 10), (0, 1, 11)], "ok")
    h.txn("b", [(0, 2, 12)], "fail")
    h.txn("c", [(0, 2, 12), (0, 3, 13)], "ok")
    h.read("poll", "observer-0.1", {f"{OUT}-0": [(0, "a/0:0:10"), (1, "a/0:1:11")]})
    committed_out = [(0, "a/0:0:10"), (1, "a/0:1:11"), (4, "c/0:2:12"), (5, "c/0:3:13")]
    return h, committed_out


def violations(spark, tmp_path, h):
    ops = read_txn_history(spark, h.write(tmp_path / "txn_history.jsonl"))
    return [(r["check"], r["message"]) for r in check_transactions(ops, IN).collect()]


def finish(h, out_records, committed=4):
    h.read("drain-out", "drain", {f"{OUT}-0": out_records})
    h.op("drain", "ok", "committed", {f"{IN}-0": committed})


def test_a_clean_history_has_no_violation(spark, tmp_path):
    h, out = clean_history()
    finish(h, out)
    assert violations(spark, tmp_path, h) == []


def _dup(h, out):
    h.txn("d", [(0, 3, 13)], "ok")  # input 3 transformed again, and committed
    return out + [(7, "d/0:3:13")]


@pytest.mark.parametrize(
    "plant, checks",
    [
        # the aborted transaction b's write is in the committed output (and c redid its input)
        (lambda h, out: out + [(2, "b/0:2:12")], {"txn-aborted-read", "txn-duplicate"}),
        # the committed c is there only in part (so its input 3 is lost too)
        (lambda h, out: out[:3], {"txn-partial", "txn-lost"}),
        (_dup, {"txn-duplicate"}),
    ],
)
def test_a_planted_output_anomaly_is_found(spark, tmp_path, plant, checks):
    h, out = clean_history()
    finish(h, plant(h, out))
    found = violations(spark, tmp_path, h)
    assert {c for c, _ in found} == checks, found


def test_an_input_below_the_committed_offset_without_output_is_lost(spark, tmp_path):
    h, out = clean_history()
    finish(h, out, committed=4)
    h.read("drain-in", "drain", {f"{IN}-0": [(4, "14")]})  # offset 4 exists...
    h.op("drain", "ok", "committed", {f"{IN}-0": 5})  # ...and the group moved past it
    found = violations(spark, tmp_path, h)
    assert [c for c, _ in found] == ["txn-lost"], found
    assert "input offset 4" in found[0][1]


def test_a_read_before_the_commit_was_asked_is_an_intermediate_read(spark, tmp_path):
    h, out = clean_history()
    writes, commit_at = h.txn("e", [(0, 4, 14)], "ok")
    h.read("poll", "observer-0.1", {f"{OUT}-0": [(6, "e/0:4:14")]}, time=commit_at - 1)
    h.read("drain-in", "drain", {f"{IN}-0": [(4, "14")]})
    finish(h, out + [(6, "e/0:4:14")], committed=5)
    found = violations(spark, tmp_path, h)
    assert [c for c, _ in found] == ["txn-intermediate-read"], found


def test_a_write_of_a_client_that_failed_before_commit_must_not_be_read(spark, tmp_path):
    h, out = clean_history()
    h.txn("f", [(0, 4, 14)], "info", commit=False)
    finish(h, out + [(6, "f/0:4:14")])
    found = violations(spark, tmp_path, h)
    assert [c for c, _ in found] == ["txn-aborted-read"], found
