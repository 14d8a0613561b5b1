"""RaftConfig: the quorum's timeouts and sizes, named after Kafka's controller.quorum.* keys and
defaulting to Kafka's values; the driver builds it from server.properties."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class RaftConfig:
    # controller.quorum.election.timeout.ms: each wait is randomised in [t, 2t) from the core's rng.
    election_timeout_ms: int = 1000
    # controller.quorum.fetch.timeout.ms: a follower with no fetch answered for this long elects.
    fetch_timeout_ms: int = 2000
    # controller.quorum.election.backoff.max.ms: the longest wait after a lost election or an
    # EndQuorumEpoch for a follower far down the preferred successors.
    election_backoff_max_ms: int = 1000
    # controller.quorum.request.timeout.ms: resend a request that got no answer.
    request_timeout_ms: int = 2000
    # controller.quorum.retry.backoff.ms: pause before retrying after an error answer.
    retry_backoff_ms: int = 20
    # How long the leader parks a Fetch that has nothing new to return (long poll).
    fetch_max_wait_ms: int = 500
    fetch_max_entries: int = 1000
    snapshot_chunk_bytes: int = 1 << 20
    # Ask the driver for a snapshot once this many committed entries follow the last one (0: never).
    snapshot_interval_entries: int = 0
    # A leader that has not heard from a majority for factor * fetch_timeout_ms resigns.
    check_quorum_factor: float = 1.5
    # The most a single Vote or BeginQuorumEpoch request may move this node's epoch forward (not
    # a Kafka key). Honest quorums never come near it; it keeps one forged request from taking
    # the epoch to the end of int32. A node further behind learns the epoch from the answers to
    # its own requests, which it always believes.
    max_epoch_jump: int = 1000

    @property
    def check_quorum_timeout_ms(self) -> int:
        return int(self.fetch_timeout_ms * self.check_quorum_factor)

    def __post_init__(self) -> None:
        if self.fetch_max_wait_ms >= self.fetch_timeout_ms:
            raise ValueError(
                "fetch_max_wait_ms must be below fetch_timeout_ms, or an idle "
                "follower would time out while its fetch is parked"
            )
        for name in (
            "election_timeout_ms",
            "fetch_timeout_ms",
            "request_timeout_ms",
            "max_epoch_jump",
        ):
            if getattr(self, name) <= 0:
                raise ValueError(f"{name} must be positive")
