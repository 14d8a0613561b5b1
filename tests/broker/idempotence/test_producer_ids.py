"""Producer ids come from controller-allocated blocks, a block at a time, never twice; a re-init
with a known id bumps its epoch; a broker that cannot get a block answers a retriable error."""

from __future__ import annotations

import pytest

from broker.idempotence.producer_ids import MAX_PRODUCER_EPOCH, ProducerIdBlocks, init_producer_id
from clients.errors import ErrorCode, KraftError
from kraft.controller.messages import AllocateProducerIdsRequest, AllocateProducerIdsResponse


class FakeChannel:
    """Hands out blocks of 3 ids, as the controller would (1000 there)."""

    def __init__(self, answers: list | None = None) -> None:
        self.requests: list = []
        self.answers = answers or []
        self.next = 0

    async def send(self, request, timeout_s):
        self.requests.append(request)
        if self.answers:
            return self.answers.pop(0)
        start, self.next = self.next, self.next + 3
        return AllocateProducerIdsResponse(producer_id_start=start, producer_id_len=3)


async def test_ids_come_block_by_block_with_this_brokers_epoch():
    channel = FakeChannel()
    blocks = ProducerIdBlocks(channel, broker_id=4, broker_epoch=lambda: 17)
    ids = [await blocks.next_id() for _ in range(7)]
    assert ids == list(range(7))
    assert channel.requests == [AllocateProducerIdsRequest(4, 17)] * 3


async def test_without_a_block_the_answer_is_retriable():
    unregistered = ProducerIdBlocks(FakeChannel(), 4, lambda: -1)
    with pytest.raises(KraftError) as info:
        await unregistered.next_id()
    assert info.value.retriable and "not registered" in info.value.message
    stale = ProducerIdBlocks(
        FakeChannel([AllocateProducerIdsResponse(ErrorCode.STALE_BROKER_EPOCH, "old epoch")]),
        4,
        lambda: 3,
    )
    with pytest.raises(KraftError) as info:
        await stale.next_id()
    assert info.value.code == ErrorCode.COORDINATOR_LOAD_IN_PROGRESS and info.value.retriable
    assert await stale.next_id() == 0  # the next try gets a block


async def test_init_producer_id_bumps_a_known_epoch_or_deals_a_fresh_id():
    blocks = ProducerIdBlocks(FakeChannel(), 1, lambda: 1)
    assert await init_producer_id(blocks, None, None) == (0, 0)
    assert await init_producer_id(blocks, 0, 0) == (0, 1)
    assert await init_producer_id(blocks, 0, MAX_PRODUCER_EPOCH - 1) == (1, 0)  # epochs ran out
    with pytest.raises(KraftError) as info:
        await init_producer_id(blocks, 5, None)
    assert info.value.code == ErrorCode.INVALID_REQUEST
