"""DescribeConfigs v3+ names each topic config's Kafka ConfigType (kafka-python's admin checks
retention.bytes is LONG); a config kraft does not define stays UNKNOWN."""

from __future__ import annotations

from broker.kafka.handlers.describe_configs import config_type
from kraft.log.log_config import TOPIC_CONFIGS


def test_kafka_config_types_of_topic_configs():
    # Kafka's ConfigType numbers: BOOLEAN 1, STRING 2, INT 3, LONG 5, DOUBLE 6, LIST 7.
    assert config_type("retention.bytes") == 5
    assert config_type("segment.bytes") == 3
    assert config_type("min.cleanable.dirty.ratio") == 6
    assert config_type("unclean.leader.election.enable") == 1
    assert config_type("compression.type") == 2
    assert config_type("cleanup.policy") == 7


def test_every_topic_config_has_a_known_type():
    assert {name: config_type(name) for name in TOPIC_CONFIGS if config_type(name) == 0} == {}


def test_an_unknown_name_is_unknown():
    assert config_type("no.such.config") == 0
