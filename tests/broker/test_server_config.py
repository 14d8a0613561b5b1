"""server.properties parsing: Kafka's key names and defaults, --override, and errors naming keys."""
import pytest

from broker.config import ServerConfigError, build_config, load_config, parse_properties


def test_defaults_are_a_local_single_node():
    c = build_config({})
    assert (c.node_id, c.process_roles, c.host, c.port) == (1, ("broker", "controller"), "127.0.0.1", 9092)
    assert c.num_partitions == 1 and c.auto_create_topics_enable


def test_properties_file_with_comments_and_overrides(tmp_path):
    path = tmp_path / "server.properties"
    path.write_text("# a comment\n! another\nnode.id=3\nlisteners = PLAINTEXT://0.0.0.0:19092\n"
                    "log.dirs=/a,/b\nlog.retention.hours=2\nlog.segment.bytes: 1048576\n")
    c = load_config(str(path), ["num.partitions=6", "node.id=4"])
    assert (c.node_id, c.host, c.port, c.log_dirs, c.num_partitions) == (4, "0.0.0.0", 19092, ("/a", "/b"), 6)
    assert c.topic_defaults == {"retention.ms": "7200000", "segment.bytes": "1048576"}


@pytest.mark.parametrize("props, key", [({"node.id": "one"}, "node.id"),
                                        ({"auto.create.topics.enable": "yes"}, "auto.create.topics.enable"),
                                        ({"process.roles": "leader"}, "process.roles"),
                                        ({"listeners": "PLAINTEXT://nohost"}, "listeners")])
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
