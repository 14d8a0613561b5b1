"""One replica hosted on this broker: its log and its replication state (PartitionState, leader or
follower). The log's high watermark (what consumers may read, what is checkpointed) follows the
core's; this is the only place that copies it across."""
from __future__ import annotations

import dataclasses

from broker.replication.disk_log import DiskReplicaLog
from broker.replication.messages import (Effect, HighWatermarkAdvanced, IsrChanged, ProposeIsr,
                                         Truncated)
from broker.replication.partition_state import PartitionState, ReplicationConfig
from kraft.log.log import Log
from kraft.log.log_config import LogConfig
from kraft.metadata.image import PartitionRegistration


class Partition:
    def __init__(self, topic: str, partition: int, topic_id: str, log: Log, node_id: int,
                 replica_lag_time_max_ms: int, broker_epoch: int) -> None:
        self.topic, self.partition, self.topic_id = topic, partition, topic_id
        self.log = log
        config = ReplicationConfig(replica_lag_time_max_ms=replica_lag_time_max_ms,
                                   min_insync_replicas=log.config.min_insync_replicas)
        # A restart resumes from the checkpointed high watermark (capped by what the log holds).
        self._replica_log = DiskReplicaLog(log)
        self.state = PartitionState(node_id, self._replica_log, config, broker_epoch,
                                    high_watermark=log.high_watermark)

    # -- views
    @property
    def is_leader(self) -> bool:
        return self.state.is_leader

    @property
    def leader_epoch(self) -> int:
        return self.state.leader_epoch

    @property
    def leader_id(self) -> int:
        return -1 if self.state.leader_id is None else self.state.leader_id

    @property
    def high_watermark(self) -> int:
        return self.log.high_watermark

    @property
    def last_append_time(self) -> int:
        """The log append time of the last leader append (-1 unless LogAppendTime)."""
        info = self._replica_log.last_append
        return -1 if info is None else info.log_append_time

    # -- metadata
    def apply_registration(self, reg: PartitionRegistration, node_id: int,
                           now_ms: int) -> tuple[Effect, ...]:
        if reg.leader == node_id:
            return self.state.become_leader(reg.leader_epoch, reg.partition_epoch, tuple(reg.isr),
                                            tuple(reg.replicas), now_ms)
        return self.state.become_follower(reg.leader if reg.leader >= 0 else None,
                                          reg.leader_epoch, reg.partition_epoch, now_ms)

    def update_config(self, config: LogConfig) -> None:
        self.log.update_config(config)
        if config.min_insync_replicas != self.state.config.min_insync_replicas:
            self.state.config = dataclasses.replace(
                self.state.config, min_insync_replicas=config.min_insync_replicas)

    def set_broker_epoch(self, broker_epoch: int) -> None:
        self.state.broker_epoch = broker_epoch

    # -- effects
    def absorb(self, effects: tuple[Effect, ...]) -> tuple[list[ProposeIsr], bool, int | None]:
        """Sort the core's effects: (ISR proposals to send, whether waiters should re-check, the
        truncation offset if the log was cut). The high watermark itself the core keeps in the log."""
        proposals, wake, truncated = [], False, None
        for effect in effects:
            if isinstance(effect, HighWatermarkAdvanced):
                wake = True
            elif isinstance(effect, Truncated):
                truncated, wake = effect.offset, True
            elif isinstance(effect, ProposeIsr):
                proposals.append(effect)
            elif isinstance(effect, IsrChanged):
                wake = True
        return proposals, wake, truncated
