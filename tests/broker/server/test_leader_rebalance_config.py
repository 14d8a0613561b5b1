"""The preferred-leader balancing keys: Kafka's names and defaults, parsed, range-checked with the
key named, and handed to the quorum controller's config."""

import pytest

from broker.server.config import ServerConfigError, build_config
from broker.server.node import controller_config


def test_kafka_defaults_reach_the_controller():
    c = controller_config(build_config({}))
    assert (
        c.auto_leader_rebalance_enable,
        c.leader_imbalance_check_interval_seconds,
        c.leader_imbalance_per_broker_percentage,
    ) == (True, 300, 10)


def test_overrides_reach_the_controller():
    c = controller_config(
        build_config(
            {
                "auto.leader.rebalance.enable": "false",
                "leader.imbalance.check.interval.seconds": "5",
                "leader.imbalance.per.broker.percentage": "0",
            }
        )
    )
    assert (
        c.auto_leader_rebalance_enable,
        c.leader_imbalance_check_interval_seconds,
        c.leader_imbalance_per_broker_percentage,
    ) == (False, 5, 0)


@pytest.mark.parametrize(
    "key, value, message",
    [
        ("leader.imbalance.check.interval.seconds", "0", "0 is out of range; use at least 1"),
        ("leader.imbalance.per.broker.percentage", "101", "101 is out of range; use 0 to 100"),
        (
            "leader.imbalance.per.broker.percentage",
            "ten",
            "'ten' is not a whole number; use 0 to 100",
        ),
        ("auto.leader.rebalance.enable", "yes", "'yes' is not true or false"),
    ],
)
def test_bad_values_name_their_key(key, value, message):
    with pytest.raises(ServerConfigError) as info:
        build_config({key: value})
    assert str(info.value) == f"{key}: {message}"
