"""Tables align (numbers right, text left, no trailing spaces), JSON is one line, progress lines
behave on a terminal and in a log, and percentiles are nearest-rank over observed values."""

from __future__ import annotations

import io
import json

import pytest

from clients.cli.output import Progress, cell, dumps, format_summary, format_table
from clients.cli.stats import histogram, percentile, summarize


def test_table_widths_come_from_content_and_numbers_align_right():
    text = format_table(
        ["NAME", "PARTITIONS", "REPLICAS"],
        [["orders", 12, [1, 2, 3]], ["a-much-longer-name", 3, [2]]],
    )
    assert text.splitlines() == [
        "NAME                PARTITIONS  REPLICAS",
        "orders                      12  1,2,3",
        "a-much-longer-name           3  2",
    ]


def test_table_without_rows_is_just_the_header():
    assert format_table(["NAME", "PARTITIONS"], []) == "NAME  PARTITIONS"


def test_table_column_with_text_and_numbers_is_left_aligned_and_none_is_a_dash():
    text = format_table(["A", "B"], [["x", 1], ["y", "n/a"], ["z", None]])
    assert text.splitlines() == ["A  B", "x  1", "y  n/a", "z  -"]


def test_cells_render_scalars_for_people():
    assert [cell(None), cell(True), cell(1.5), cell([]), cell((4, 5))] == [
        "-",
        "true",
        "1.50",
        "-",
        "4,5",
    ]


def test_summary_pads_keys():
    assert format_summary([("NAME", "t"), ("PARTITIONS", 3)]) == "NAME        t\nPARTITIONS  3"


def test_json_is_one_line_in_insertion_order():
    text = dumps({"b": 1, "a": [1, 2], "c": "é"})
    assert "\n" not in text and text.index('"b"') < text.index('"a"') and "é" in text
    assert json.loads(text) == {"b": 1, "a": [1, 2], "c": "é"}


class _Tty(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_progress_rewrites_in_place_on_a_terminal():
    stream = _Tty()
    progress = Progress(stream=stream)
    progress.update("one")
    progress.update("two")
    progress.done()
    assert stream.getvalue() == "\r\x1b[Kone\r\x1b[Ktwo\n"


def test_progress_appends_lines_in_a_log_and_stays_quiet_when_disabled():
    stream = io.StringIO()
    Progress(stream=stream).update("one")
    Progress(stream=stream, enabled=False).update("hidden")
    assert stream.getvalue() == "one\n"


def test_percentiles_are_nearest_rank():
    values = list(range(1, 101))
    assert percentile(values, 50) == 50
    assert percentile(values, 99) == 99
    assert percentile(values, 99.9) == 100
    assert percentile(values, 100) == 100
    assert percentile(values, 0) == 1
    assert percentile([7.0], 99) == 7.0
    assert percentile([], 50) is None


def test_percentile_picks_the_tail_of_a_small_sample():
    # 10 values: p99 must be the slowest one, not the 9th (an off-by-one would hide the tail).
    assert percentile([1, 1, 1, 1, 1, 1, 1, 1, 1, 500], 99) == 500
    assert percentile([1, 2, 3, 4], 50) == 2


def test_percentile_rejects_out_of_range():
    with pytest.raises(ValueError):
        percentile([1], 101)


def test_summary_has_the_json_keys_and_sorts_its_input():
    s = summarize([5.0, 1.0, 3.0]).as_dict()
    assert s == {
        "latency_samples": 3,
        "avg_ms": 3.0,
        "p50_ms": 3.0,
        "p99_ms": 5.0,
        "p999_ms": 5.0,
        "max_ms": 5.0,
    }
    assert summarize([]).as_dict()["p99_ms"] is None


def test_histogram_buckets_double():
    assert histogram([0.2, 1.0, 1.5, 3.0, 900.0]) == [(1.0, 2), (2.0, 1), (4.0, 1), (1024.0, 1)]
