"""The kraft Spark source's pure core: Spark Kafka-source options parsed (errors name the option
and the fix), offsets resolved, maxOffsetsPerTrigger shared out, ranges split."""

import pytest

from clients.spark import offsets as o


def test_options_are_found_by_their_spark_names_after_spark_lowercases_them():
    opts = o.Options({"startingoffsets": "earliest", "kraft.bootstrap.servers": "h:1"})
    assert opts.get("startingOffsets") == "earliest" and "startingOffsets" in opts
    assert opts["kraft.bootstrap.servers"] == "h:1"


def test_exactly_one_way_of_naming_topics():
    assert o.topics_option({"subscribe": "a, b"}) == ("subscribe", ["a", "b"])
    assert o.topics_option({"assign": '{"a": [1, 0]}'}) == ("assign", [("a", 0), ("a", 1)])
    kind, pattern = o.topics_option({"subscribePattern": "or.*"})
    assert kind == "subscribePattern" and pattern.fullmatch("orders")
    with pytest.raises(o.SourceOptionError, match="exactly one of .* found subscribe, assign"):
        o.topics_option({"subscribe": "a", "assign": '{"a": [0]}'})
    with pytest.raises(o.SourceOptionError, match="found none"):
        o.topics_option({})
    with pytest.raises(o.SourceOptionError, match="assign=.*expected JSON like"):
        o.topics_option({"assign": '["a"]'})


def test_offsets_option_takes_words_or_spark_json():
    assert o.offsets_option({}, "startingOffsets", "earliest") == "earliest"
    assert (
        o.offsets_option({"startingOffsets": "LATEST"}, "startingOffsets", "earliest") == "latest"
    )
    spec = o.offsets_option(
        {"startingOffsets": '{"t": {"0": 23, "1": -2}}'}, "startingOffsets", "x"
    )
    assert spec == {("t", 0): 23, ("t", 1): o.EARLIEST}
    with pytest.raises(o.SourceOptionError, match="endingOffsets='earliest': use latest"):
        o.offsets_option({"endingOffsets": "earliest"}, "endingOffsets", "latest", ending=True)
    with pytest.raises(o.SourceOptionError, match="offset -2 of t-0"):
        o.offsets_option(
            {"endingOffsets": '{"t": {"0": -2}}'}, "endingOffsets", "latest", ending=True
        )
    with pytest.raises(o.SourceOptionError, match="not JSON"):
        o.offsets_option({"startingOffsets": "{t"}, "startingOffsets", "earliest")


def test_resolve_fills_partitions_the_json_leaves_out_and_refuses_unknown_ones():
    parts = [("t", 0), ("t", 1)]
    earliest, latest = {("t", 0): 5, ("t", 1): 0}, {("t", 0): 50, ("t", 1): 9}
    assert o.resolve({("t", 0): 7}, parts, earliest, latest, "startingOffsets") == {
        ("t", 0): 7,
        ("t", 1): 0,
    }
    assert o.resolve({("t", 1): o.LATEST}, parts, earliest, latest, "endingOffsets") == {
        ("t", 0): 50,
        ("t", 1): 9,
    }
    with pytest.raises(o.SourceOptionError, match="names t-7, which"):
        o.resolve({("t", 7): 1}, parts, earliest, latest, "startingOffsets")


def test_data_loss_fails_or_carries_on_from_the_log_start():
    earliest, latest = {("t", 0): 10}, {("t", 0): 20}
    with pytest.raises(
        o.SourceOptionError, match="offset 3 is no longer in the log.*failOnDataLoss"
    ):
        o.check_data_loss({("t", 0): 3}, earliest, latest, True)
    assert o.check_data_loss({("t", 0): 3}, earliest, latest, False) == {("t", 0): 10}
    assert o.check_data_loss({("t", 0): 15}, earliest, latest, True) == {("t", 0): 15}


def test_cap_shares_the_limit_in_proportion_and_exactly():
    start = {("a", 0): 0, ("a", 1): 100, ("a", 2): 5}
    end = {("a", 0): 30, ("a", 1): 110, ("a", 2): 5}
    capped = o.cap(start, end, 20)
    assert sum(capped[tp] - start[tp] for tp in start) == 20
    assert capped == {("a", 0): 15, ("a", 1): 105, ("a", 2): 5}
    assert o.cap(start, end, None) == end and o.cap(start, end, 1000) == end
    # a partition new since the last batch has no start: it keeps its end
    assert o.cap({}, {("b", 0): 3}, 1) == {("b", 0): 3}


def test_split_one_range_per_partition_or_about_min_partitions():
    start, end = {("t", 0): 0, ("t", 1): 4, ("t", 2): 9}, {("t", 0): 10, ("t", 1): 6, ("t", 2): 9}
    assert o.split(start, end) == [o.OffsetRange("t", 0, 0, 10), o.OffsetRange("t", 1, 4, 6)]
    pieces = o.split(start, end, min_partitions=6)
    assert [(r.partition, r.start, r.end) for r in pieces] == [
        (0, 0, 2),
        (0, 2, 4),
        (0, 4, 6),
        (0, 6, 8),
        (0, 8, 10),
        (1, 4, 6),
    ]


def test_offsets_round_trip_through_sparks_json_form():
    offsets = {("t", 0): 3, ("t", 10): 4, ("u", 1): 0}
    doc = o.to_json(offsets)
    assert doc == {"t": {"0": 3, "10": 4}, "u": {"1": 0}}
    assert o.from_json(doc) == offsets


def test_numbers_and_flags_are_checked():
    assert o.int_option({"maxOffsetsPerTrigger": "100"}, "maxOffsetsPerTrigger") == 100
    with pytest.raises(o.SourceOptionError, match="maxOffsetsPerTrigger='-1': expected a positive"):
        o.int_option({"maxOffsetsPerTrigger": "-1"}, "maxOffsetsPerTrigger")
    assert o.bool_option({"failOnDataLoss": "False"}, "failOnDataLoss", True) is False
    with pytest.raises(o.SourceOptionError, match="expected true or false"):
        o.bool_option({"failOnDataLoss": "no"}, "failOnDataLoss", True)


def test_isolation_level_is_kafkas_option_with_kafkas_default():
    assert o.isolation_option({}) == "read_uncommitted"
    assert o.isolation_option({"isolation.level": "read_committed"}) == "read_committed"
    assert o.isolation_option({"kafka.isolation.level": "READ_COMMITTED"}) == "read_committed"
    with pytest.raises(o.SourceOptionError, match="isolation.level='committed': expected"):
        o.isolation_option({"isolation.level": "committed"})
