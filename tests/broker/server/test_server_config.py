"""server.properties parsing: Kafka's key names and defaults, --override, and errors naming keys."""

import pytest

from broker.group.messages import GroupConfig
from broker.server.config import ServerConfigError, build_config, load_config, parse_properties


def test_defaults_are_a_local_single_node():
    c = build_config({})
    assert (c.node_id, c.process_roles, c.host, c.port) == (
        1,
        ("broker", "controller"),
        "127.0.0.1",
        9092,
    )
    assert c.num_partitions == 1 and c.auto_create_topics_enable


def test_properties_file_with_comments_and_overrides(tmp_path):
    path = tmp_path / "server.properties"
    path.write_text(
        "# a comment\n! another\nnode.id=3\nlisteners = PLAINTEXT://0.0.0.0:19092\n"
        "log.dirs=/a,/b\nlog.retention.hours=2\nlog.segment.bytes: 1048576\n"
    )
    c = load_config(str(path), ["num.partitions=6", "node.id=4"])
    assert (c.node_id, c.host, c.port, c.log_dirs, c.num_partitions) == (
        4,
        "0.0.0.0",
        19092,
        ("/a", "/b"),
        6,
    )
    assert c.topic_defaults == {"retention.ms": "7200000", "segment.bytes": "1048576"}


@pytest.mark.parametrize(
    "props, key",
    [
        ({"node.id": "one"}, "node.id"),
        ({"auto.create.topics.enable": "yes"}, "auto.create.topics.enable"),
        ({"process.roles": "leader"}, "process.roles"),
        ({"listeners": "PLAINTEXT://nohost"}, "listeners"),
    ],
)
def test_bad_values_name_their_key(props, key):
    with pytest.raises(ServerConfigError, match=key):
        build_config(props)


def test_unknown_keys_are_reported_not_fatal():
    assert build_config({"no.such.key": "1"}).unknown_keys == ("no.such.key",)


def test_malformed_lines_and_overrides_are_errors(tmp_path):
    with pytest.raises(ServerConfigError, match="line 2"):
        parse_properties("a=1\njust words\n")
    with pytest.raises(ServerConfigError, match="not key=value"):
        load_config(None, ["novalue"])
    with pytest.raises(ServerConfigError, match="does not exist"):
        load_config(str(tmp_path / "missing.properties"), [])


def test_quorum_voters_parse_to_ids_and_addresses():
    c = build_config(
        {
            "controller.quorum.voters": "1@127.0.0.1:9093, 2@h2:9094,3@h3:9095",
            "listeners": "PLAINTEXT://127.0.0.1:9092,CONTROLLER://127.0.0.1:9093",
        }
    )
    assert c.quorum_voters == {1: "127.0.0.1:9093", 2: "h2:9094", 3: "h3:9095"}
    assert c.runs_quorum
    single = build_config({})
    assert single.quorum_voters == {} and single.runs_quorum
    assert single.voters == {1: "127.0.0.1:0"}  # a quorum of one, never dialled


def test_a_broker_only_node_needs_the_voters_and_must_not_be_one():
    with pytest.raises(ServerConfigError, match="controller.quorum.voters: a broker-only node"):
        build_config({"process.roles": "broker"})
    with pytest.raises(
        ServerConfigError, match="names node.id 1, but process.roles has no controller"
    ):
        build_config({"process.roles": "broker", "controller.quorum.voters": "1@h:9093"})
    broker = build_config(
        {"process.roles": "broker", "node.id": "4", "controller.quorum.voters": "1@h:9093"}
    )
    assert not broker.runs_quorum and broker.voters == {1: "h:9093"}


@pytest.mark.parametrize(
    "voters", ["1@h:9093,nohost", "x@h:9093", "1@h:port", "1@:9093", "1@h:9093,1@h:9094"]
)
def test_bad_quorum_voters_name_their_key(voters):
    with pytest.raises(ServerConfigError, match="controller.quorum.voters"):
        build_config({"controller.quorum.voters": voters, "process.roles": "broker"})


def test_listeners_give_the_broker_and_the_controller_address():
    c = build_config({"listeners": "CONTROLLER://127.0.0.1:9093,PLAINTEXT://0.0.0.0:9092"})
    assert (c.host, c.port) == ("0.0.0.0", 9092)  # host/port stay the broker's
    assert c.controller_listener == ("127.0.0.1", 9093)
    assert c.controller_listener_names == ("CONTROLLER",)
    named = build_config(
        {"listeners": "BROKER://h:1,RAFT://h:2", "controller.listener.names": "RAFT"}
    )
    assert (named.listener, named.controller_listener) == (("h", 1), ("h", 2))
    only = build_config({"listeners": "CONTROLLER://127.0.0.1:9093", "process.roles": "controller"})
    assert only.controller_listener == ("127.0.0.1", 9093) and only.listener == ("127.0.0.1", 9093)
    assert build_config({}).controller_listener is None


@pytest.mark.parametrize(
    "props, key",
    [
        (
            {
                "process.roles": "controller",
                "controller.quorum.voters": "2@h:9093",
                "listeners": "CONTROLLER://h:9093",
            },
            "controller.quorum.voters",
        ),  # node 1 is no voter
        (
            {
                "process.roles": "controller",
                "controller.quorum.voters": "1@h:9093",
                "listeners": "PLAINTEXT://h:9092",
            },
            "listeners",
        ),  # no controller listener
        ({"controller.quorum.voters": "1@h:9093", "listeners": "CONTROLLER://h:9093"}, "listeners"),
        ({"listeners": "PLAINTEXT://h:1,PLAINTEXT://h:2"}, "listeners"),
    ],
)
def test_an_unusable_quorum_setup_names_its_key(props, key):
    with pytest.raises(ServerConfigError, match=key):
        build_config(props)


def test_group_keys_reach_the_coordinator_config_with_kafkas_defaults():
    assert build_config({}).group_config == GroupConfig()  # Kafka's defaults, both sides
    c = build_config(
        {
            "group.initial.rebalance.delay.ms": "0",
            "offsets.topic.num.partitions": "3",
            "group.min.session.timeout.ms": "1000",
        }
    )
    g = c.group_config
    assert (
        g.initial_rebalance_delay_ms,
        g.offsets_topic_num_partitions,
        g.min_session_timeout_ms,
    ) == (0, 3, 1000)
    assert c.unknown_keys == ()


@pytest.mark.parametrize(
    "props, key",
    [
        ({"offsets.topic.num.partitions": "0"}, "offsets.topic.num.partitions"),
        ({"offsets.topic.replication.factor": "-1"}, "offsets.topic.replication.factor"),
        (
            {"group.min.session.timeout.ms": "9000", "group.max.session.timeout.ms": "8000"},
            "group.min.session.timeout.ms",
        ),
    ],
)
def test_bad_group_keys_name_their_key(props, key):
    with pytest.raises(ServerConfigError, match=key):
        build_config(props)


@pytest.mark.parametrize(
    "key, value, message",
    [
        (
            "log.retention.ms",
            "-5",
            "log.retention.ms: '-5' is not valid (a long in ms, -1 for unlimited)",
        ),
        (
            "log.segment.bytes",
            "10",
            "log.segment.bytes: '10' is not valid (an int in bytes, at least 14)",
        ),
        (
            "message.max.bytes",
            "abc",
            "message.max.bytes: 'abc' is not a number (an int in bytes, at least 0)",
        ),
        ("log.cleanup.policy", "shred", "log.cleanup.policy: 'shred' is not valid"),
        ("compression.type", "brotli", "compression.type: 'brotli' is not valid"),
        (
            "log.retention.hours",
            "soon",
            "log.retention.hours: 'soon' is not a whole number; use at least -1",
        ),
        ("num.partitions", "0", "num.partitions: 0 is out of range; use 1 to 2147483647"),
        (
            "default.replication.factor",
            "-1",
            "default.replication.factor: -1 is out of range; use 1 to 32767",
        ),
        (
            "replica.lag.time.max.ms",
            "0",
            "replica.lag.time.max.ms: 0 is out of range; use at least 1",
        ),
        (
            "broker.heartbeat.interval.ms",
            "x",
            "broker.heartbeat.interval.ms: 'x' is not a whole number; use at least 1",
        ),
        (
            "listeners",
            "PLAINTEXT://127.0.0.1:70000",
            "listeners: 70000 is out of range; use 0 to 65535",
        ),
    ],
)
def test_every_key_is_checked_with_its_range_and_the_error_names_key_value_and_range(
    key, value, message
):
    """A bad --override is one line naming the key, the value and what is allowed (broker-wide
    topic defaults are checked here, not later inside the node)."""
    with pytest.raises(ServerConfigError) as info:
        build_config({key: value})
    assert str(info.value).startswith(message)
    assert "\n" not in str(info.value)


def test_negative_retention_hours_mean_unlimited_and_ms_wins_over_hours():
    assert build_config({"log.retention.hours": "-1"}).topic_defaults == {"retention.ms": "-1"}
    assert build_config(
        {"log.retention.hours": "1", "log.retention.minutes": "2"}
    ).topic_defaults == {"retention.ms": "120000"}


def test_producer_id_expiration_keys_have_kafkas_defaults():
    c = build_config({})
    assert (c.producer_id_expiration_ms, c.producer_id_expiration_check_interval_ms) == (
        86_400_000,
        600_000,
    )
    assert build_config({"producer.id.expiration.ms": "60000"}).producer_id_expiration_ms == 60_000
