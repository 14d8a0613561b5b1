"""The node's seat on the metadata log comes wired from its constructor: on a combined node the
active controller replays first, then the broker's image, and snapshots are of the controller's
image; on a broker-only node the broker's image is both the listener and the snapshot source.
A config the seat cannot use is refused with a message that names the key."""

from __future__ import annotations

import pytest

from broker.controller.active import ActiveController
from broker.metadata.quorum import QuorumConfigError
from broker.server.config import ServerConfigError, build_config
from broker.server.node import open_broker_storage, open_quorum
from kraft.raft.disk import quorum_state_path, write_initial


def _config(tmp_path, roles: str, overrides: dict[str, str] | None = None):
    listeners = "PLAINTEXT://127.0.0.1:0,REPLICATION://127.0.0.1:0,CONTROLLER://127.0.0.1:0"
    props = {
        "node.id": "1",
        "process.roles": roles,
        "log.dirs": str(tmp_path / "data"),
        "listeners": listeners,
        "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,REPLICATION:PLAINTEXT,CONTROLLER:PLAINTEXT",
    }
    if roles == "broker":
        props.update(
            {
                "node.id": "2",
                "controller.quorum.voters": "1@127.0.0.1:9",
                "listeners": "PLAINTEXT://127.0.0.1:0,REPLICATION://127.0.0.1:0",
            }
        )
    config = build_config({**props, **(overrides or {})})
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


def test_voters_other_than_those_formatted_are_refused(tmp_path):
    config = _config(tmp_path, "broker,controller")
    write_initial(quorum_state_path(tmp_path / "data"), [1, 2, 3], overwrite=True)
    with pytest.raises(QuorumConfigError, match=r"lists \[1\] but .* formatted for \[1, 2, 3\]"):
        open_quorum(config, "cluster", None, None)


def test_raft_settings_raft_cannot_use_name_the_keys(tmp_path):
    # A fetch timeout of 1 ms leaves an idle Fetch no time to park below it.
    config = _config(tmp_path, "broker,controller", {"controller.quorum.fetch.timeout.ms": "1"})
    with pytest.raises(ServerConfigError, match=r"controller\.quorum\.\*: fetch_max_wait_ms"):
        open_quorum(config, "cluster", None, None)
