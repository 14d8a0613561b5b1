"""`kraft audit` end to end: a clean cluster with its history passes (exit 0) and writes both
reports; violations exit 1 naming them; unreadable input exits 2 with one line, no traceback."""

import json

import pytest
from audit_helpers import MS, Cluster, write_faults, write_history
from system_tools import requires_tool

from chaos.audit.checks import CHECKS, TXN_CHECKS
from chaos.history import Op
from entry.main import build_parser, main


def test_kraft_has_the_audit_command():
    args = build_parser().parse_args(["audit", "--data", "a", "b", "--history", "h.jsonl"])
    assert args.data == ["a", "b"] and args.history == "h.jsonl" and args.master == "local[*]"


def test_help_shows_example_invocations(capsys):
    with pytest.raises(SystemExit) as exit_:
        main(["audit", "--help"])
    text = capsys.readouterr().out
    assert exit_.value.code == 0
    examples = text[text.index("examples:") :]
    assert "kraft audit --data run/nodes --history run/history.jsonl" in examples
    assert "exit status: 0 no violation, 1 violations" in examples


def test_clean_cluster_passes_and_writes_reports(spark, tmp_path, capsys):
    c = Cluster(tmp_path / "cluster")
    c.topic("orders", partitions=2, batches=20)
    root = c.write()
    history = write_history(tmp_path / "history.jsonl", c.history())
    faults = write_faults(tmp_path / "faults.jsonl")
    out = tmp_path / "audit"
    code = main(
        [
            "audit",
            "--data",
            str(root),
            "--history",
            str(history),
            "--faults",
            str(faults),
            "--out",
            str(out),
            "--format",
            "json",
        ]
    )
    doc = json.loads(capsys.readouterr().out)
    assert (code, doc["ok"], doc["violations"], doc["notices"]) == (0, True, [], [])
    # Every check ran but the transactional ones, whose input (--txn-history) was not given.
    assert {name for name, c in doc["checks"].items() if c["ran"]} == set(CHECKS) - set(TXN_CHECKS)
    assert all(c["violations"] == 0 for c in doc["checks"].values())
    assert doc["stats"]["batches"] == 2 * 20 * 3 + 3 * len(c.metadata_entries())
    assert json.loads((out / "report.json").read_text()) == doc
    page = (out / "report.html").read_text()
    assert "kraft audit passed" in page
    assert page.count('<rect class="fault"') == 4  # 2 windows, shaded in both charts
    assert "<polyline" in page


def test_violations_exit_1_and_are_named(spark, tmp_path, capsys):
    ops = []
    for offset, value in enumerate([7, 8, 7]):  # value 7 lands at offsets 0 and 2
        ops += [
            Op(0, "invoke", "send", offset * MS, value, "t-0"),
            Op(0, "ok", "send", offset * MS + 1, value, "t-0", offset),
        ]
    ops += [
        Op(1, "invoke", "poll", 9 * MS),
        Op(1, "ok", "poll", 10 * MS, {"t-0": [[0, 7], [1, 8], [2, 7]]}),
    ]
    history = write_history(tmp_path / "h.jsonl", ops)
    code = main(["audit", "--history", str(history), "--out", str(tmp_path / "out")])
    text = capsys.readouterr().out
    assert code == 1
    assert "audit FAILED: 1 violations in 1 of 9 checks" in text
    assert "FAIL  duplicate: 1 violation" in text
    assert "t-0 offsets 0-2: value 7 appears at offsets 0, 2" in text
    report = json.loads((tmp_path / "out" / "report.json").read_text())
    assert [v["check"] for v in report["violations"]] == ["duplicate"]
    assert report["checks"]["duplicate"]["violations"] == 1
    assert not report["checks"]["batch-integrity"]["ran"]  # no --data: segment checks skipped


SPARK = [requires_tool("java"), pytest.mark.slow]


@pytest.mark.parametrize(
    "setup, expected",
    [
        (lambda d: ["--data", str(d / "nowhere")], "no such directory"),
        (lambda d: ["--data", str(d)], "no node data dir"),
        (lambda d: ["--history", str(d / "missing.jsonl")], "no such file"),
        # Spark's executors read a history's lines: these start a SparkSession (a JVM).
        pytest.param(
            lambda d: ["--history", _write(d / "h.jsonl", '{"process": 0}\n{}\n')],
            "line 1: missing type, f, time",
            marks=SPARK,
        ),
        pytest.param(
            lambda d: ["--history", _write(d / "h.jsonl", 'nope\n{"a": 1}\n')],
            "line 1: not JSON",
            marks=SPARK,
        ),
        pytest.param(
            lambda d: [
                "--history",
                _write(d / "h.jsonl", '{"process":0,"type":"ok","f":"fly","time":1}\n'),
            ],
            "f 'fly' is not one of",
            marks=SPARK,
        ),
        pytest.param(
            lambda d: [
                "--history",
                _write(
                    d / "h.jsonl",
                    '{"process":0,"type":"ok","f":"commit","time":1,"value":{},"group":7}\n',
                ),
            ],
            "line 1: group 7 is not a string",
            marks=SPARK,
        ),
        (lambda d: [], "nothing to audit"),
    ],
)
def test_unreadable_input_exits_2_with_one_line(tmp_path, capsys, setup, expected):
    code = main(["audit", *setup(tmp_path), "--out", str(tmp_path / "out")])
    err = capsys.readouterr().err
    assert code == 2
    # Spark's executors read the history, so progress lines ("kraft audit [ 0.0s]: ...") may
    # come first; the error is one line of its own, the last.
    errors = [line for line in err.splitlines() if line.startswith("kraft audit: ")]
    assert len(errors) == 1 and expected in errors[0] and err.rstrip().endswith(errors[0])
    assert "Traceback" not in err


def _write(path, text):
    path.write_text(text)
    return str(path)
