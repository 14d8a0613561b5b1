"""A stand-in for the Raft driver: runs a command on a QuorumController, "commits" its records
at the next offsets of an in-memory log and replays them, as the real driver will."""

from __future__ import annotations

import random

from kraft.controller.controller import QuorumController
from kraft.controller.controller_config import ControllerConfig
from kraft.controller.messages import (
    BrokerHeartbeatRequest,
    CreatableTopic,
    CreateTopicsRequest,
    RegisterBrokerRequest,
)

EPOCH = 1


class Harness:
    def __init__(self, config: ControllerConfig | None = None, seed: int = 0) -> None:
        self.controller = QuorumController(config or ControllerConfig(), rng=random.Random(seed))
        self.log: list = []  # every committed record, its index is its offset
        self.broker_epochs: dict[int, int] = {}

    @property
    def image(self):
        return self.controller.image

    def commit(self, result):
        base = len(self.log)
        self.log.extend(result.records)
        self.controller.replay_batch(result.records, base, EPOCH)
        return result.response

    def call(self, method: str, req, now_ms: int = 0):
        return self.commit(getattr(self.controller, method)(req, now_ms))

    def register(
        self,
        broker_id: int,
        rack: str | None = None,
        now_ms: int = 0,
        incarnation: str | None = None,
    ):
        resp = self.call(
            "handle_register_broker",
            RegisterBrokerRequest(
                broker_id,
                incarnation or f"inc-{broker_id}-{len(self.log)}",
                "localhost",
                9092 + broker_id,
                rack,
            ),
            now_ms,
        )
        if resp.error_code == 0:
            self.broker_epochs[broker_id] = resp.broker_epoch
        return resp

    def heartbeat(self, broker_id: int, now_ms: int = 0, caught_up: bool = True, **kw):
        offset = len(self.log) - 1 if caught_up else -1
        return self.call(
            "handle_broker_heartbeat",
            BrokerHeartbeatRequest(broker_id, self.broker_epochs[broker_id], offset, **kw),
            now_ms,
        )

    def add_brokers(self, ids, racks=None, now_ms: int = 0) -> None:
        """Register and unfence brokers."""
        for i, broker_id in enumerate(ids):
            assert self.register(broker_id, racks[i] if racks else None, now_ms).error_code == 0
            assert self.heartbeat(broker_id, now_ms).is_fenced is False

    def create_topic(
        self,
        name: str,
        partitions: int = 1,
        rf: int = 1,
        configs=None,
        now_ms: int = 0,
        internal: bool = False,
    ):
        """`internal`: as a broker creating its own internal topic (__consumer_offsets)."""
        resp = self.call(
            "handle_create_topics",
            CreateTopicsRequest(
                (CreatableTopic(name, partitions, rf, configs or {}),), internal=internal
            ),
            now_ms,
        )
        return resp.topics[0]

    def partition(self, topic: str, p: int = 0):
        return self.image.partition(topic, p)
