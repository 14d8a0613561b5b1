"""Producer ids for InitProducerId: this broker takes blocks of ids from the active controller
(AllocateProducerIds, committed to the metadata log so no id is handed out twice) and deals them."""

from __future__ import annotations

import logging
from collections.abc import Callable

import trio

from broker.edge.controller_channel import ControllerChannel
from clients.errors import ErrorCode, KraftError
from kraft.controller.messages import AllocateProducerIdsRequest

log = logging.getLogger(__name__)

REQUEST_TIMEOUT_S = 5.0
# Kafka's producer epoch is an int16 and the last value is reserved: at this epoch a producer
# gets a new id instead of a bump.
MAX_PRODUCER_EPOCH = 2**15 - 1


class ProducerIdBlocks:
    def __init__(
        self,
        channel: ControllerChannel,
        broker_id: int,
        broker_epoch: Callable[[], int],
        timeout_s: float = REQUEST_TIMEOUT_S,
    ) -> None:
        self.channel = channel
        self.broker_id = broker_id
        self.broker_epoch = broker_epoch  # the BrokerEpoch: -1 until registered
        self.timeout_s = timeout_s
        self._next = 0
        self._end = 0  # the current block is [_next, _end)
        self._lock = trio.Lock()  # one AllocateProducerIds at a time

    async def next_id(self) -> int:
        """A producer id no other producer of the cluster has. Raises a retriable KraftError
        while no block can be had (no active controller, broker not registered yet)."""
        async with self._lock:
            if self._next >= self._end:
                await self._fetch_block()
            pid = self._next
            self._next += 1
            return pid

    async def _fetch_block(self) -> None:
        epoch = self.broker_epoch()
        if epoch < 0:
            raise KraftError(
                ErrorCode.COORDINATOR_LOAD_IN_PROGRESS,
                f"broker {self.broker_id} is not registered with the controller yet; retry shortly",
            )
        response = await self.channel.send(
            AllocateProducerIdsRequest(self.broker_id, epoch), self.timeout_s
        )
        if response.error_code:
            # A stale broker epoch means a re-registration is under way: worth a retry.
            code = (
                ErrorCode.COORDINATOR_LOAD_IN_PROGRESS
                if response.error_code == ErrorCode.STALE_BROKER_EPOCH
                else response.error_code
            )
            raise KraftError(code, f"no producer ids from the controller: {response.error_message}")
        self._next = response.producer_id_start
        self._end = response.producer_id_start + response.producer_id_len
        log.debug("broker %d got producer ids %d..%d", self.broker_id, self._next, self._end - 1)


async def init_producer_id(
    blocks: ProducerIdBlocks | None, producer_id: int | None, producer_epoch: int | None
) -> tuple[int, int]:
    """InitProducerId's answer (id, epoch): a known id with its epoch gets the next epoch (KIP-360,
    for an idempotent producer the broker holds no per-id state to check); anything else a fresh
    id at epoch 0. Raises KraftError."""
    if producer_id is not None and producer_id >= 0:
        if producer_epoch is None or producer_epoch < 0:
            raise KraftError(
                ErrorCode.INVALID_REQUEST,
                f"producer id {producer_id} without its epoch: send both to bump "
                f"the epoch, or neither for a new id",
            )
        if producer_epoch + 1 < MAX_PRODUCER_EPOCH:
            return producer_id, producer_epoch + 1
    if blocks is None:
        raise KraftError(
            ErrorCode.COORDINATOR_NOT_AVAILABLE,
            "this node hands out no producer ids (it is not a broker)",
        )
    return await blocks.next_id(), 0
