"""No client deletes, reconfigures or resizes an internal topic, with or without ACLs:
`__consumer_offsets` holds every committed offset and `retention.ms=1000` would erase them."""

import pytest
from controller_helpers import Harness

from clients.errors import ErrorCode
from kraft.controller.messages import (
    AlterConfigOp,
    AlterConfigOpType,
    AlterConfigsResource,
    CreatePartitionsRequest,
    CreatePartitionsTopic,
    DeleteTopicsRequest,
    IncrementalAlterConfigsRequest,
)

OFFSETS = "__consumer_offsets"


@pytest.fixture
def harness():
    h = Harness()
    h.add_brokers([1])
    assert h.create_topic(OFFSETS, 3, internal=True).error_code == 0
    assert h.create_topic("orders").error_code == 0
    return h


def test_deleting_the_offsets_topic_is_refused_and_writes_nothing(harness):
    before = len(harness.log)
    response = harness.call("handle_delete_topics", DeleteTopicsRequest((OFFSETS, "orders")))
    assert [t.error_code for t in response.topics] == [ErrorCode.POLICY_VIOLATION, 0]
    assert "internal" in response.topics[0].error_message
    assert harness.image.topic(OFFSETS) is not None
    assert len(harness.log) == before + 1  # orders only


@pytest.mark.parametrize("key, value", [("retention.ms", "1000"), ("cleanup.policy", "delete")])
def test_reconfiguring_the_offsets_topic_is_refused(harness, key, value):
    response = harness.call(
        "handle_incremental_alter_configs",
        IncrementalAlterConfigsRequest(
            (
                AlterConfigsResource(
                    "topic", OFFSETS, (AlterConfigOp(key, AlterConfigOpType.SET, value),)
                ),
            )
        ),
    )
    assert response.results[0].error_code == ErrorCode.POLICY_VIOLATION
    assert key not in harness.image.topic_configs(OFFSETS)


def test_resizing_the_offsets_topic_is_refused(harness):
    response = harness.call(
        "handle_create_partitions", CreatePartitionsRequest((CreatePartitionsTopic(OFFSETS, 10),))
    )
    assert response.topics[0].error_code == ErrorCode.POLICY_VIOLATION
    assert len(harness.image.topic(OFFSETS).partitions) == 3
