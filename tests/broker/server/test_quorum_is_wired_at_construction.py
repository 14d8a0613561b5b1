"""The node's seat on the metadata log comes wired from its constructor: on a combined node the
active controller replays first, then the broker's image, and snapshots are of the controller's
image; on a broker-only node the broker's image is both the listener and the snapshot source."""
from __future__ import annotations

from broker.controller.active import ActiveController
from broker.server.config import build_config
from broker.server.node import open_broker_storage, open_quorum
from kraft.raft.disk import quorum_state_path, write_initial


def _config(tmp_path, roles: str):
    listeners = "PLAINTEXT://127.0.0.1:0,REPLICATION://127.0.0.1:0,CONTROLLER://127.0.0.1:0"
    props = {"node.id": "1", "process.roles": roles, "log.dirs": str(tmp_path / "data"),
             "listeners": listeners,
             "listener.security.protocol.map":
             "PLAINTEXT:PLAINTEXT,REPLICATION:PLAINTEXT,CONTROLLER:PLAINTEXT"}
    if roles == "broker":
        props.update({"node.id": "2", "controller.quorum.voters": "1@127.0.0.1:9",
                      "listeners": "PLAINTEXT://127.0.0.1:0,REPLICATION://127.0.0.1:0"})
    config = build_config(props)
    if config.runs_quorum:
        write_initial(quorum_state_path(tmp_path / "data"), sorted(config.voters))
    return config


def test_a_combined_node_wires_controller_then_broker_image(tmp_path):
    config = _config(tmp_path, "broker,controller")
    storage = open_broker_storage(config, now_ms=0)
    quorum = open_quorum(config, "cluster", None, storage.metadata)
    try:
        active, metadata = quorum.listeners
        assert isinstance(active, ActiveController) and active is quorum.controller
        assert active.driver is quorum.driver and metadata is storage.metadata
        assert quorum.snapshot_source() is active.image()
    finally:
        quorum.close()
        storage.log_manager.close()


def test_a_broker_only_node_snapshots_its_own_image(tmp_path):
    config = _config(tmp_path, "broker")
    storage = open_broker_storage(config, now_ms=0)
    quorum = open_quorum(config, "cluster", None, storage.metadata)
    try:
        assert quorum.controller is None and quorum.listeners == (storage.metadata,)
        assert quorum.snapshot_source() is storage.metadata.image
    finally:
        quorum.close()
        storage.log_manager.close()
