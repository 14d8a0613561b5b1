"""A controller's seat in the KRaft metadata quorum: the Raft log and quorum-state in the first log
dir, a RaftCore and its RaftDriver, and the Quorum gRPC service on the controller listener."""
from __future__ import annotations

import pathlib
import random

import trio

from broker.config import ServerConfig, ServerConfigError
from broker.quorum_servicer import QuorumServicer
from clients.bridge import start_server, stop_server
from kraft.raft import RaftConfig, RaftCore
from kraft.raft.disk import FileElectionStore, FileRaftLog, metadata_log_dir, quorum_state_path
from kraft.raft.driver import RaftDriver, monotonic_ms


def metadata_dir(config: ServerConfig) -> pathlib.Path:
    """Kafka's metadata.log.dir defaults to the first of log.dirs; so does ours."""
    return pathlib.Path(config.log_dirs[0])


def raft_config(config: ServerConfig) -> RaftConfig:
    fetch_timeout = config.quorum_fetch_timeout_ms
    try:
        # The leader parks an idle Fetch for at most a quarter of the fetch timeout, so a follower
        # always hears back well before it would give up on the leader.
        return RaftConfig(election_timeout_ms=config.quorum_election_timeout_ms,
                          fetch_timeout_ms=fetch_timeout,
                          election_backoff_max_ms=config.quorum_election_backoff_max_ms,
                          request_timeout_ms=config.quorum_request_timeout_ms,
                          retry_backoff_ms=config.quorum_retry_backoff_ms,
                          fetch_max_wait_ms=max(1, min(500, fetch_timeout // 4)))
    except ValueError as exc:
        raise ServerConfigError(f"controller.quorum.*: {exc}") from None


class ControllerQuorum:
    """Opened before the node serves; `serve` runs the Quorum service and the driver until
    cancelled; `close` releases the log files afterwards."""

    def __init__(self, config: ServerConfig) -> None:
        self.config = config
        log_dir = metadata_dir(config)
        self.store = FileElectionStore(quorum_state_path(log_dir))
        voters = frozenset(config.quorum_voters)
        if self.store.read() is not None and set(self.store.voters) != voters:
            raise ServerConfigError(
                f"controller.quorum.voters lists {sorted(voters)} but {self.store.path} was formatted "
                f"for {sorted(self.store.voters)}; fix the config or re-format the node")
        raft = raft_config(config)
        self.log = FileRaftLog(metadata_log_dir(log_dir), now_ms=monotonic_ms())
        try:
            core = RaftCore(config.node_id, voters, self.log, self.store, random.Random(), raft,
                            monotonic_ms())
            peers = {i: a for i, a in config.quorum_voters.items() if i != config.node_id}
            self.driver = RaftDriver(core, self.log, self.store, peers)
        except BaseException:
            self.log.close()
            raise

    async def serve(self, *, task_status=trio.TASK_STATUS_IGNORED) -> None:
        """Serve Quorum on the controller listener and run the driver; `started(port)`."""
        host, port = self.config.controller_listener
        token = trio.lowlevel.current_trio_token()
        servicer = QuorumServicer(self.driver)
        server, port = start_server(f"{host}:{port}", lambda s: servicer.register(s, token))
        try:
            async with trio.open_nursery() as nursery:
                await nursery.start(self.driver.run)
                task_status.started(port)
        finally:
            await stop_server(server, grace=0.5)

    def close(self) -> None:
        self.log.close()
