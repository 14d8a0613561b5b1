"""`kraft top`: reads the endpoints cluster.json names (or --metrics), shows the cluster as its
active controller sees it and each node's rates over the interval; --once --format json."""

from __future__ import annotations

import json

import pytest

from clients import metrics_view as mv
from clients.cli import top

CONTROLLER = """
kafka_server_app_info{node_id="1",roles="controller"} 1
kafka_server_raftmetrics_current_state{state="leader"} 1
kafka_server_raftmetrics_current_epoch 3
kafka_controller_kafkacontroller_activecontrollercount 1
kafka_controller_kafkacontroller_fencedbrokercount 1
kafka_controller_kafkacontroller_offlinepartitionscount 0
process_resident_memory_bytes 1.048576e+08
"""


def broker(node_id: int, bytes_in: float, requests: float) -> str:
    return f"""
kafka_server_app_info{{node_id="{node_id}",roles="broker"}} 1
kafka_server_raftmetrics_current_state{{state="observer"}} 1
kafka_server_replicamanager_partitioncount 4
kafka_server_replicamanager_leadercount 2
kafka_server_replicamanager_underreplicatedpartitions 1
# TYPE kafka_server_brokertopicmetrics_bytesin counter
kafka_server_brokertopicmetrics_bytesin_total{{topic="a"}} {bytes_in}
kafka_server_brokertopicmetrics_bytesin_total{{topic="b"}} {bytes_in}
# TYPE kafka_network_requestmetrics_requests counter
kafka_network_requestmetrics_requests_total{{request="Produce",listener="PLAINTEXT"}} {requests}
"""


@pytest.fixture
def endpoints(monkeypatch):
    """Two scrapes per endpoint, 2 s apart on the fake clock; port 3 never answers."""
    pages = {
        "h:1": [CONTROLLER, CONTROLLER],
        "h:2": [broker(2, 1000, 10), broker(2, 3000, 30)],
        "h:3": [],
    }
    clock = iter([100.0, 102.0])
    monkeypatch.setattr(top, "_clock", lambda: next(clock))
    monkeypatch.setattr(top, "_sleep", lambda s: None)

    def scrape(address, timeout=2.0):
        if not pages[address]:
            raise OSError(f"{address}: [Errno 111] Connection refused")
        return mv.parse(pages[address].pop(0))

    monkeypatch.setattr(mv, "scrape", scrape)


def test_once_as_json_gives_rates_over_the_interval_and_the_controllers_view(
    cli, capsys, endpoints
):
    assert cli(["top", "--metrics", "h:1,h:2,h:3", "--once", "--format", "json"]) == 1
    view = json.loads(capsys.readouterr().out)
    c = view["cluster"]
    assert (c["nodes"], c["nodes_up"], c["active_controller"], c["fenced_brokers"]) == (3, 2, 1, 1)
    assert c["under_replicated"] == 1
    assert c["bytes_in_per_s"] == 2000  # (2 topics x 2000 bytes) / 2 s
    by_id = {n["node_id"]: n for n in view["nodes"]}
    assert by_id[2]["produce_per_s"] == 10 and by_id[2]["leaders"] == 2
    assert by_id[1]["raft_state"] == "leader" and by_id[1]["active_controller"]
    [down] = [n for n in view["nodes"] if not n["up"]]
    assert "Connection refused" in down["error"]


def test_once_as_a_table_marks_the_active_controller_and_names_a_silent_node(
    cli, capsys, endpoints
):
    cli(["top", "--metrics", "h:1,h:2,h:3", "--once"])
    out = capsys.readouterr().out
    assert "nodes up 2/3" in out and "active controller 1" in out
    assert "leader*" in out and "DOWN" in out
    assert "not answering: h:3: [Errno 111] Connection refused" in out


def test_cluster_json_names_the_endpoints(tmp_path):
    (tmp_path / "cluster.json").write_text(
        json.dumps(
            {
                "nodes": [
                    {"id": 1, "roles": ["controller"], "metrics_address": "127.0.0.1:9404"},
                    {"id": 2, "roles": ["broker"], "metrics_address": None},
                ]
            }
        )
    )
    assert mv.targets_from_cluster_json(tmp_path) == [
        mv.NodeTarget(1, ("controller",), "127.0.0.1:9404")
    ]


@pytest.mark.parametrize(
    "argv, message",
    [
        (["top", "--data", "/nonexistent/dir", "--once"], "cluster.json does not exist"),
        (["top", "--metrics", "nohostport", "--once"], "give host:port"),
        (["top", "--metrics", "h:1", "--interval", "0", "--once"], "--interval 0"),
    ],
)
def test_bad_targets_read_as_help(cli, capsys, argv, message):
    assert cli(argv) != 0
    assert message in capsys.readouterr().err


def test_help_has_an_example(parser, capsys):
    with pytest.raises(SystemExit):
        parser.parse_args(["top", "--help"])
    assert "kraft top --metrics 127.0.0.1:9404" in capsys.readouterr().out
