"""DescribeConfigs shows every effective topic config and where it comes from;
IncrementalAlterConfigs sets, deletes, appends and subtracts, validating the result as a whole."""

import pytest
from controller_helpers import Harness

from clients.errors import ErrorCode
from kraft.controller.controller_config import ControllerConfig
from kraft.controller.messages import (
    AlterConfigOp,
    AlterConfigOpType,
    AlterConfigsResource,
    ConfigResource,
    DescribeConfigsRequest,
    IncrementalAlterConfigsRequest,
)
from kraft.metadata.records import ConfigRecord

SET, DELETE, APPEND, SUBTRACT = (
    AlterConfigOpType.SET,
    AlterConfigOpType.DELETE,
    AlterConfigOpType.APPEND,
    AlterConfigOpType.SUBTRACT,
)


def setup():
    h = Harness(ControllerConfig(topic_defaults={"segment.bytes": "4096"}))
    h.add_brokers([1])
    h.create_topic("orders", configs={"retention.ms": "1000"})
    return h


def describe(h, name="orders", keys=None, resource_type="topic"):
    result = h.controller.handle_describe_configs(
        DescribeConfigsRequest((ConfigResource(resource_type, name, keys),))
    )
    assert result.records == []
    return result.response.results[0]


def alter(h, *ops, name="orders", validate_only=False):
    return h.call(
        "handle_incremental_alter_configs",
        IncrementalAlterConfigsRequest(
            (AlterConfigsResource("topic", name, tuple(AlterConfigOp(*op) for op in ops)),),
            validate_only,
        ),
    ).results[0]


def test_describe_names_the_source_of_each_value():
    entries = {e.name: e for e in describe(setup()).configs}
    assert (entries["retention.ms"].value, entries["retention.ms"].source) == (
        "1000",
        "DYNAMIC_TOPIC_CONFIG",
    )
    assert (entries["segment.bytes"].value, entries["segment.bytes"].source) == (
        "4096",
        "STATIC_BROKER_CONFIG",
    )
    assert (
        entries["cleanup.policy"].source == "DEFAULT_CONFIG"
        and entries["cleanup.policy"].is_default
    )
    assert not entries["retention.ms"].is_default


def test_describe_selected_keys():
    out = describe(setup(), keys=("retention.ms",))
    assert [(e.name, e.value) for e in out.configs] == [("retention.ms", "1000")]


@pytest.mark.parametrize(
    "kwargs, code, message",
    [
        (dict(name="nope"), ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, "kraft topic create nope"),
        (dict(keys=("colour",)), ErrorCode.INVALID_CONFIG, "unknown topic config colour"),
        (dict(resource_type="broker"), ErrorCode.INVALID_REQUEST, "use 'topic'"),
    ],
)
def test_describe_errors(kwargs, code, message):
    out = describe(setup(), **kwargs)
    assert out.error_code == code and message in out.error_message


def test_set_and_delete_write_config_records():
    h = setup()
    n = len(h.log)
    assert alter(h, ("segment.ms", SET, "5000"), ("retention.ms", DELETE)).error_code == 0
    assert h.log[n:] == [
        ConfigRecord("topic", "orders", "retention.ms", None),
        ConfigRecord("topic", "orders", "segment.ms", "5000"),
    ]
    assert dict(h.image.topic_configs("orders")) == {"segment.ms": "5000"}


def test_append_and_subtract_edit_list_configs():
    h = setup()
    alter(h, ("cleanup.policy", APPEND, "compact"))
    assert h.image.topic_configs("orders")["cleanup.policy"] == "delete,compact"
    alter(h, ("cleanup.policy", SUBTRACT, "delete"))
    assert h.image.topic_configs("orders")["cleanup.policy"] == "compact"


def test_validate_only_writes_nothing():
    h = setup()
    n = len(h.log)
    assert alter(h, ("segment.ms", SET, "5000"), validate_only=True).error_code == 0
    assert len(h.log) == n


def test_setting_the_same_value_writes_nothing():
    h = setup()
    n = len(h.log)
    assert alter(h, ("retention.ms", SET, "1000")).error_code == 0
    assert len(h.log) == n


@pytest.mark.parametrize(
    "ops, code, message",
    [
        (
            [("retention.ms", SET, "soon")],
            ErrorCode.INVALID_CONFIG,
            "retention.ms: 'soon' is not a number",
        ),
        ([("retention.msec", SET, "1")], ErrorCode.INVALID_CONFIG, "did you mean 'retention.ms'?"),
        ([("colour", DELETE)], ErrorCode.INVALID_CONFIG, "unknown topic config"),
        ([("retention.ms", SET, None)], ErrorCode.INVALID_CONFIG, "SET needs a value"),
        ([("retention.ms", APPEND, "1")], ErrorCode.INVALID_CONFIG, "works on list configs only"),
        ([("cleanup.policy", SUBTRACT, "delete")], ErrorCode.INVALID_CONFIG, "cleanup.policy"),
        (
            [("retention.ms", SET, "1"), ("retention.ms", DELETE)],
            ErrorCode.INVALID_REQUEST,
            "altered twice",
        ),
    ],
)
def test_alter_errors_change_nothing(ops, code, message):
    h = setup()
    n = len(h.log)
    out = alter(h, *ops)
    assert out.error_code == code and message in out.error_message, out
    assert len(h.log) == n


def test_altering_a_missing_topic_says_how_to_create_it():
    out = alter(setup(), ("retention.ms", SET, "1"), name="nope")
    assert out.error_code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    assert "kraft topic create nope" in out.error_message
