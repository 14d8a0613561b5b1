"""The transaction keys: Kafka's names and defaults, parsed, range-checked with the key named,
and handed to the transaction coordinators' config."""

import pytest

from broker.server.config import ServerConfigError, build_config
from broker.transaction.messages import PROPERTIES, TransactionConfig


def test_kafka_defaults():
    assert build_config({}).transaction_config == TransactionConfig()
    assert TransactionConfig() == TransactionConfig(
        max_timeout_ms=900_000,
        transactional_id_expiration_ms=604_800_000,
        abort_timed_out_cleanup_interval_ms=10_000,
        state_log_num_partitions=50,
        state_log_replication_factor=3,
        state_log_min_isr=2,
    )


def test_every_key_reaches_its_field():
    values = {key: str(2_000 + i) for i, key in enumerate(PROPERTIES)}
    values["transaction.state.log.min.isr"] = "3"
    values["transaction.state.log.replication.factor"] = "3"
    config = build_config(values).transaction_config
    for key, field in PROPERTIES.items():
        assert getattr(config, field) == int(values[key]), key


@pytest.mark.parametrize(
    "key, value, message",
    [
        ("transaction.max.timeout.ms", "0", "0 is out of range; use 1 to 2147483647"),
        (
            "transactional.id.expiration.ms",
            "week",
            "'week' is not a whole number; use 1 to 2147483647",
        ),
        ("transaction.state.log.num.partitions", "0", "0 is out of range; use at least 1"),
        (
            "transaction.state.log.replication.factor",
            "40000",
            "40000 is out of range; use 1 to 32767",
        ),
        (
            "transaction.abort.timed.out.transaction.cleanup.interval.ms",
            "-1",
            "-1 is out of range; use 1 to 2147483647",
        ),
    ],
)
def test_bad_values_name_their_key(key, value, message):
    with pytest.raises(ServerConfigError) as info:
        build_config({key: value})
    assert str(info.value) == f"{key}: {message}"


def test_a_min_isr_above_the_replication_factor_is_refused():
    with pytest.raises(
        ServerConfigError,
        match="transaction.state.log.min.isr: 3 is above "
        r"transaction.state.log.replication.factor \(2\)",
    ):
        build_config(
            {"transaction.state.log.min.isr": "3", "transaction.state.log.replication.factor": "2"}
        )
