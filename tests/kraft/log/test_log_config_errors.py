import pytest

from kraft.log.log_config import TOPIC_CONFIGS, ConfigError, LogConfig


@pytest.mark.parametrize(
    "key, value, fragment",
    [
        (
            "retention.ms",
            "abc",
            "retention.ms: 'abc' is not a number (a long in ms, -1 for unlimited)",
        ),
        ("retention.ms", "-2", "retention.ms: '-2' is not valid"),
        ("segment.bytes", "10", "segment.bytes: '10' is not valid (an int in bytes, at least 14)"),
        ("segment.bytes", "99999999999", "segment.bytes"),
        ("cleanup.policy", "forever", "cleanup.policy"),
        ("message.timestamp.type", "Now", "'CreateTime' or 'LogAppendTime'"),
        ("unclean.leader.election.enable", "yes", "true or false"),
        ("min.insync.replicas", "0", "min.insync.replicas"),
        ("min.cleanable.dirty.ratio", "2", "between 0 and 1"),
    ],
)
def test_bad_values_name_the_key_and_what_is_valid(key, value, fragment):
    with pytest.raises(ConfigError) as err:
        LogConfig.from_props({key: value})
    assert fragment in str(err.value)


def test_unknown_key_is_named_with_a_suggestion():
    with pytest.raises(
        ConfigError, match="retention.mss: unknown topic config; did you mean 'retention.ms'"
    ):
        LogConfig.from_props({"retention.mss": "1"})
    with pytest.raises(
        ConfigError, match="bogus: unknown topic config; valid keys: cleanup.policy"
    ):
        LogConfig.from_props({"bogus": "1"})


def test_good_values_overlay_defaults_and_round_trip():
    base = LogConfig(retention_ms=5)
    config = LogConfig.from_props(
        {
            "segment.bytes": "2048",
            "cleanup.policy": "compact, delete",
            "unclean.leader.election.enable": "TRUE",
        },
        base,
    )
    assert (config.segment_bytes, config.retention_ms) == (2048, 5)
    assert config.cleanup_policy == "compact,delete" and config.compact and config.delete
    assert config.unclean_leader_election_enable is True
    assert LogConfig.from_props(config.to_props()) == config
    assert set(config.to_props()) == set(TOPIC_CONFIGS)
    assert all(d.doc and d.valid for d in TOPIC_CONFIGS.values())
    assert LogConfig.from_props({}) == LogConfig()
