"""A Raft leader stand-in for ActiveController tests: it commits every proposal at once and
replays it into the active controller, as the metadata quorum would."""

from __future__ import annotations

from types import SimpleNamespace

from broker.controller.active import ActiveController
from kraft.metadata import records as r

EPOCH = 3


class CommittingDriver:
    """A Raft leader in epoch 3."""

    def __init__(self) -> None:
        self.core = SimpleNamespace(
            node_id=1, epoch=EPOCH, is_leader=True, describe=lambda: SimpleNamespace(leader_id=1)
        )
        self.active: ActiveController | None = None
        self.committed_end = 0
        self.proposals: list[list] = []

    def leader_epoch_start_offset(self) -> int:
        return 0

    async def propose(self, payloads) -> int:
        records = r.decode_batch(list(payloads))
        self.proposals.append(records)
        base = self.committed_end
        self.active.replay_committed([(base + i, EPOCH, rec) for i, rec in enumerate(records)])
        self.committed_end = base + len(records)
        return self.committed_end - 1

    async def wait_committed(self, offset: int) -> None:
        return None
