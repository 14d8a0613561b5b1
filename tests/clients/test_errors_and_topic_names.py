"""Kafka's error numbers and retriable flags, and Kafka's topic-name rules."""

import pytest

from clients.errors import ErrorCode, KraftError, check, error_name
from clients.topics import topic_name_problem


def test_error_numbers_are_kafkas():
    assert (
        ErrorCode.OFFSET_OUT_OF_RANGE,
        ErrorCode.CORRUPT_MESSAGE,
        ErrorCode.NOT_LEADER_OR_FOLLOWER,
        ErrorCode.MESSAGE_TOO_LARGE,
        ErrorCode.INVALID_TOPIC_EXCEPTION,
        ErrorCode.NOT_ENOUGH_REPLICAS,
        ErrorCode.TOPIC_ALREADY_EXISTS,
        ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER,
        ErrorCode.FENCED_LEADER_EPOCH,
    ) == (1, 2, 6, 10, 17, 19, 36, 45, 74)
    assert (
        ErrorCode.INVALID_UPDATE_VERSION,
        ErrorCode.UNKNOWN_TOPIC_ID,
        ErrorCode.DUPLICATE_BROKER_REGISTRATION,
        ErrorCode.BROKER_ID_NOT_REGISTERED,
        ErrorCode.INELIGIBLE_REPLICA,
    ) == (95, 100, 101, 102, 107)


def test_retriable_flags_follow_kafka():
    assert ErrorCode.NOT_LEADER_OR_FOLLOWER.retriable
    assert ErrorCode.NETWORK_EXCEPTION.retriable
    assert not ErrorCode.MESSAGE_TOO_LARGE.retriable
    assert not ErrorCode.TOPIC_ALREADY_EXISTS.retriable
    assert KraftError(ErrorCode.REQUEST_TIMED_OUT).retriable
    assert not KraftError(9999).retriable


def test_check_raises_with_name_and_message():
    check(0)
    with pytest.raises(KraftError, match="UNKNOWN_TOPIC_OR_PARTITION: topic 'x' does not exist"):
        check(3, "topic 'x' does not exist")
    assert error_name(12345) == "UNKNOWN_ERROR_CODE(12345)"


@pytest.mark.parametrize("name", ["orders", "a.b_c-D9", "x" * 249])
def test_legal_topic_names(name):
    assert topic_name_problem(name) is None


@pytest.mark.parametrize(
    "name, words",
    [
        ("", "empty"),
        (".", "not allowed"),
        ("..", "not allowed"),
        ("x" * 250, "limit is 249"),
        ("bad name", "characters"),
        ("ünï", "characters"),
    ],
)
def test_illegal_topic_names_say_why(name, words):
    assert words in topic_name_problem(name)
