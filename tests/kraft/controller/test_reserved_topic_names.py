"""Reserved topic names: no one creates `__cluster_metadata` (its partition directory is the
metadata log's); the internal topics only with `internal`, which only brokers set."""

import pytest
from controller_helpers import Harness

from clients.errors import ErrorCode
from clients.topics import METADATA_LOG_DIR
from kraft.controller.controller_config import ControllerConfig
from kraft.controller.messages import CreatableTopic, CreateTopicsRequest
from kraft.log.file_names import partition_dir_name
from kraft.raft.disk import METADATA_LOG_DIR as RAFT_METADATA_LOG_DIR


def create(name: str, internal: bool):
    h = Harness(ControllerConfig())
    h.add_brokers([1])
    result = h.controller.handle_create_topics(
        CreateTopicsRequest((CreatableTopic(name, 1, 1),), internal=internal), 0
    )
    return result, result.response.topics[0]


def test_the_clients_know_where_the_metadata_log_lives():
    assert METADATA_LOG_DIR == RAFT_METADATA_LOG_DIR == partition_dir_name("__cluster_metadata", 0)


@pytest.mark.parametrize("internal", [False, True])
def test_no_one_creates_the_metadata_topic(internal):
    result, out = create("__cluster_metadata", internal)
    assert out.error_code == ErrorCode.INVALID_TOPIC_EXCEPTION
    assert "reserved" in out.error_message and "__cluster_metadata-0" in out.error_message
    assert result.records == []


@pytest.mark.parametrize("name", ["__consumer_offsets", "__transaction_state"])
def test_internal_topics_only_for_brokers(name):
    result, out = create(name, internal=False)
    assert out.error_code == ErrorCode.INVALID_TOPIC_EXCEPTION
    assert "internal" in out.error_message and "brokers create it" in out.error_message
    assert result.records == []
    result, out = create(name, internal=True)
    assert out.error_code == 0 and result.records
