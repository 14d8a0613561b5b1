"""kraft dev's cluster plan (ids, roles, ports, one voters string, overrides) gives configs a node
accepts; --stop signals only live kraft processes named in cluster.json, never a reused pid."""

from __future__ import annotations

import subprocess
import sys
import time

import pytest

from broker.server.config import load_config, parse_properties
from entry import dev as dev_command
from entry import dev_cluster
from entry.dev_cluster import DevClusterError, Target, is_kraft_process, plan_cluster, stop_targets
from entry.main import main


def fake_ports(start: int = 40000):
    def pick(host: str, count: int) -> list[int]:
        nonlocal start
        start += count
        return list(range(start - count, start))

    return pick


def test_controllers_take_the_first_ids_and_brokers_the_next(tmp_path):
    plans = plan_cluster(tmp_path, 3, 2)
    assert [(p.id, p.roles) for p in plans] == [
        (1, ("controller",)),
        (2, ("controller",)),
        (3, ("controller",)),
        (4, ("broker",)),
        (5, ("broker",)),
    ]
    assert [p.address for p in plans] == [
        "127.0.0.1:9192",
        "127.0.0.1:9193",
        "127.0.0.1:9194",
        "127.0.0.1:9095",
        "127.0.0.1:9096",
    ]
    assert [p.data_dir for p in plans] == [tmp_path / f"node-{i}" / "data" for i in range(1, 6)]
    assert plans[3].config_path == tmp_path / "node-4" / "server.properties"
    assert plans[3].log_path == tmp_path / "node-4" / "node.log"


def test_every_node_names_the_same_voters_and_its_own_listener(tmp_path):
    plans = plan_cluster(tmp_path, 3, 3, port=19092, controller_port=19192)
    voters = {p.properties["controller.quorum.voters"] for p in plans}
    assert voters == {"1@127.0.0.1:19192,2@127.0.0.1:19193,3@127.0.0.1:19194"}
    assert [p.properties["listeners"].split(",")[0] for p in plans] == [
        "CONTROLLER://127.0.0.1:19192",
        "CONTROLLER://127.0.0.1:19193",
        "CONTROLLER://127.0.0.1:19194",
        "PLAINTEXT://127.0.0.1:19092",
        "PLAINTEXT://127.0.0.1:19093",
        "PLAINTEXT://127.0.0.1:19094",
    ]
    # Each broker's Kafka wire listener too, on a port of its own (free ones off the defaults).
    kafka = [p.properties["listeners"].split(",")[1] for p in plans[3:]]
    assert [k.rpartition(":")[0] for k in kafka] == ["KAFKA://127.0.0.1"] * 3
    assert [p.kafka_address for p in plans[3:]] == [k.split("//")[1] for k in kafka]
    assert len(set(kafka)) == 3


def test_port_zero_picks_distinct_ports_for_every_node(tmp_path):
    plans = plan_cluster(tmp_path, 3, 3, port=0, pick_ports=fake_ports())
    ports = [int(p.address.rsplit(":", 1)[1]) for p in plans]
    assert len(set(ports)) == 6
    real = plan_cluster(tmp_path, 5, 4, port=0)
    assert len({p.address for p in real}) == 9


def test_overrides_reach_every_node_and_wiring_keys_are_refused(tmp_path):
    plans = plan_cluster(
        tmp_path, 1, 2, extra_overrides=["num.partitions=6", "min.insync.replicas=2"]
    )
    assert all(
        p.properties["num.partitions"] == "6" and p.properties["min.insync.replicas"] == "2"
        for p in plans
    )
    with pytest.raises(DevClusterError, match="--override node.id: kraft dev sets it"):
        plan_cluster(tmp_path, 1, 1, extra_overrides=["node.id=7"])


def test_dev_fences_a_silent_broker_sooner_than_kafka_unless_told_otherwise(tmp_path):
    plans = plan_cluster(tmp_path, 1, 1)
    assert all(
        (p.properties["broker.session.timeout.ms"], p.properties["broker.heartbeat.interval.ms"])
        == ("1200", "200")
        for p in plans
    )
    told = plan_cluster(tmp_path, 1, 1, extra_overrides=["broker.session.timeout.ms=9000"])
    assert {p.properties["broker.session.timeout.ms"] for p in told} == {"9000"}


@pytest.mark.parametrize(
    "controllers, brokers, port, controller_port, message",
    [
        (0, 1, 9092, 9192, "give 1 to 9"),
        (10, 1, 9092, 9192, "give 1 to 9"),
        (1, 0, 9092, 9192, "--brokers 0: give 1 or more"),
        (3, 3, 9190, 9192, "overlap"),
        (1, 3, 65534, 9192, "between 1 and 65535"),
    ],
)
def test_impossible_shapes_and_ports_read_as_help(
    tmp_path, controllers, brokers, port, controller_port, message
):
    with pytest.raises(DevClusterError, match=message):
        plan_cluster(tmp_path, controllers, brokers, port=port, controller_port=controller_port)


def test_written_properties_are_configs_each_node_accepts(tmp_path):
    for plan in plan_cluster(tmp_path, 3, 2, port=0, extra_overrides=["num.partitions=3"]):
        plan.config_path.parent.mkdir(parents=True)
        plan.config_path.write_text(dev_cluster.properties_text(plan))
        assert parse_properties(plan.config_path.read_text()) == plan.properties
        config = load_config(str(plan.config_path), [])
        assert config.process_roles == plan.roles and config.node_id == plan.id
        assert sorted(config.quorum_voters) == [1, 2, 3] and config.num_partitions == 3


def test_restarting_a_data_dir_keeps_its_cluster_id_and_refuses_another_shape(tmp_path):
    from kraft.log.log_manager import write_meta_properties

    plans = plan_cluster(tmp_path, 1, 1)
    assert len(dev_cluster.cluster_id_for(tmp_path, plans)) == 32  # fresh: a new id
    plans[0].data_dir.mkdir(parents=True)
    write_meta_properties(plans[0].data_dir, "abc", 1)
    assert dev_cluster.cluster_id_for(tmp_path, plans) == "abc"
    previous = {"nodes": [dev_cluster.node_entry(p, None) for p in plan_cluster(tmp_path, 3, 3)]}
    with pytest.raises(
        DevClusterError, match="holds a cluster of 3 controllers and 3 brokers; restart it"
    ):
        dev_cluster.check_reuse(tmp_path, plans, previous)
    dev_cluster.check_reuse(
        tmp_path, plans, {"nodes": [dev_cluster.node_entry(p, None) for p in plans]}
    )


def sleeper(*argv: str) -> subprocess.Popen:
    """A process that sleeps a minute; `argv` lands in its command line (sys.argv[1:])."""
    return subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)", *argv])


def reap(*procs: subprocess.Popen) -> None:
    for p in procs:
        if p.poll() is None:
            p.kill()
        p.wait(10)


def test_stop_signals_kraft_processes_and_never_a_reused_pid(tmp_path, capsys):
    node, stranger = sleeper("entry.main", "node"), sleeper("something-else")
    try:
        time.sleep(0.2)  # let exec finish, so /proc shows the new command line
        assert is_kraft_process(node.pid) and not is_kraft_process(stranger.pid)
        dev_cluster.write_cluster_json(
            tmp_path,
            {
                "cluster_id": "c",
                "supervisor_pid": None,
                "nodes": [
                    {
                        "id": 1,
                        "roles": ["controller"],
                        "address": "x:1",
                        "pid": node.pid,
                        "data_dir": "d",
                    },
                    {
                        "id": 2,
                        "roles": ["broker"],
                        "address": "x:2",
                        "pid": stranger.pid,
                        "data_dir": "d",
                    },
                ],
            },
        )
        assert dev_command.stop_cluster(tmp_path, sys.stdout) == 0
        assert node.wait(5) == -15 and stranger.poll() is None
        assert (
            capsys.readouterr().out == f"kraft dev: stopped node 1 (controller), pid {node.pid}\n"
        )

        assert dev_command.stop_cluster(tmp_path, sys.stdout) == 0  # nothing left: says so
        assert "nothing was running" in capsys.readouterr().out
    finally:
        reap(node, stranger)


def test_a_process_ignoring_sigterm_is_killed_after_the_grace(tmp_path):
    stubborn = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); time.sleep(60)",
            "kraft",
        ]
    )
    try:
        time.sleep(0.3)
        lines = stop_targets([Target("node 9 (broker)", stubborn.pid)], grace=0.5)
        assert lines == [
            f"killed node 9 (broker), pid {stubborn.pid}: still running 0.5 s after SIGTERM"
        ]
        assert stubborn.wait(5) == -9
    finally:
        reap(stubborn)


def test_pids_that_are_not_live_kraft_processes_are_left_alone():
    import os

    assert (
        not is_kraft_process(os.getpid()) and not is_kraft_process(1) and not is_kraft_process(None)
    )
    done = sleeper("entry.main")
    done.kill()
    time.sleep(0.2)
    assert not is_kraft_process(done.pid)  # a zombie is not running
    done.wait(5)
    assert not is_kraft_process(done.pid)  # nor is a pid that is gone


def test_stop_without_cluster_json_and_flag_clashes_are_one_line(tmp_path, capsys):
    assert main(["dev", "--stop", "--data", str(tmp_path)]) == 0
    assert "nothing to stop" in capsys.readouterr().out
    assert main(["dev", "--stop", "--controllers", "3", "--data", str(tmp_path)]) == 1
    assert capsys.readouterr().err == "kraft dev: --stop takes only --data; drop --controllers\n"
    assert main(["dev", "--restart", "2", "--data", str(tmp_path)]) == 1
    assert "has no cluster.json" in capsys.readouterr().err


def test_port_zero_on_a_rerun_reuses_the_recorded_ports_when_they_are_free(tmp_path):
    import socket

    first = plan_cluster(tmp_path, 1, 2, port=0)
    previous = {"nodes": [dev_cluster.node_entry(p, None) for p in first]}
    again = plan_cluster(tmp_path, 1, 2, port=0, pick_ports=dev_cluster.reusing_ports(previous))
    assert [p.address for p in again] == [p.address for p in first]
    # Another shape, or one of the ports taken meanwhile: fresh ports for all.
    assert dev_cluster.reusing_ports(previous, fake_ports())("127.0.0.1", 5) == [
        40000,
        40001,
        40002,
        40003,
        40004,
    ]
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", int(first[1].address.rpartition(":")[2])))
        taken.listen()
        assert dev_cluster.reusing_ports(previous, fake_ports())("127.0.0.1", 3) == [
            40000,
            40001,
            40002,
        ]
    # Fixed broker ports with free controller ports: the controllers' recorded ones.
    fixed = plan_cluster(
        tmp_path,
        1,
        2,
        port=45000,
        controller_port=0,
        pick_ports=dev_cluster.reusing_ports(previous),
    )
    assert fixed[0].address == first[0].address
