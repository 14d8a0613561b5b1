"""A broker's ControllerChannel moves to a new active controller as soon as it learns of it: a
call in flight to the old one (dead or paused, never answering) is asked again of the new leader
when the broker's metadata seat names it, or at once when a NOT_CONTROLLER answer names it, never
after CALL_TIMEOUT_S. Fake controllers behind the channel's one network call, on a fake clock."""

from __future__ import annotations

import trio

from broker.edge.controller_channel import CALL_TIMEOUT_S, ControllerChannel
from clients.errors import ErrorCode, KraftError
from kraft.controller.messages import CreatableTopic, CreateTopicsRequest, CreateTopicsResponse

REQUEST = CreateTopicsRequest((CreatableTopic("orders", 1, 1),))
VOTERS = {1: "127.0.0.1:1", 2: "127.0.0.1:2", 3: "127.0.0.1:3"}


class Seat:
    """The broker's metadata seat: the leader it knows of and a wait for that to change."""

    def __init__(self, leader: int | None) -> None:
        self.leader = leader
        self._changed = trio.Event()

    def hint(self) -> int | None:
        return self.leader

    def elect(self, leader: int | None) -> None:
        self.leader = leader
        self._changed.set()
        self._changed = trio.Event()

    async def wait_leader_change(self) -> None:
        await self._changed.wait()


class FakeControllers(ControllerChannel):
    """`hung` never answer (a paused controller, or a dead one whose connection never breaks);
    `active` answers; any other answers NOT_CONTROLLER naming `active`."""

    def __init__(self, seat: Seat, active: int, hung: set[int], notify: bool = True) -> None:
        super().__init__(
            VOTERS, seat.hint, leader_changed=seat.wait_leader_change if notify else None
        )
        self.active, self.hung = active, hung
        self.asked: list[tuple[int, float]] = []

    async def _remote(self, node_id: int, request):
        self.asked.append((node_id, trio.current_time()))
        if node_id in self.hung:
            await trio.sleep(CALL_TIMEOUT_S)  # the real call's deadline
            raise KraftError(ErrorCode.NETWORK_EXCEPTION, "node timed out: Deadline Exceeded")
        if node_id != self.active:
            return CreateTopicsResponse(
                (), ErrorCode.NOT_CONTROLLER, "not me", controller_id=self.active
            ), -1
        return CreateTopicsResponse(()), 42


async def test_a_call_to_a_hung_controller_moves_when_the_seat_names_a_new_leader(autojump_clock):
    seat = Seat(leader=1)
    channel = FakeControllers(seat, active=2, hung={1})
    answered = []

    async def create() -> None:
        answered.append((await channel.send_with_offset(REQUEST, 30.0), trio.current_time()))

    start = trio.current_time()
    async with trio.open_nursery() as nursery:
        nursery.start_soon(create)
        await trio.sleep(1.0)  # the election takes a second
        assert not answered and channel.asked == [(1, start)]
        seat.elect(None)  # electing: nobody to move to yet
        await trio.sleep(0.2)
        assert not answered
        seat.elect(2)
    (response, offset), at = answered[0]
    assert (response.error_code, offset) == (ErrorCode.NONE, 42)
    assert channel.asked == [(1, start), (2, start + 1.2)]
    assert at - start == 1.2  # at once, not after CALL_TIMEOUT_S


async def test_without_notifications_the_call_waits_out_its_timeout(autojump_clock):
    """The control case: what the test above would see without the seat's notification."""
    seat = Seat(leader=1)
    channel = FakeControllers(seat, active=2, hung={1}, notify=False)
    start = trio.current_time()
    async with trio.open_nursery() as nursery:
        nursery.start_soon(channel.send_with_offset, REQUEST, 30.0)
        await trio.sleep(1.0)
        seat.elect(2)
    assert channel.asked[1][0] == 2 and channel.asked[1][1] - start >= CALL_TIMEOUT_S


async def test_a_not_controller_answer_is_followed_even_while_the_seat_names_the_old_leader(
    autojump_clock,
):
    seat = Seat(leader=3)  # stale: 3 answers NOT_CONTROLLER naming 2
    channel = FakeControllers(seat, active=2, hung=set())
    start = trio.current_time()
    response, offset = await channel.send_with_offset(REQUEST, 30.0)
    assert (response.error_code, offset) == (ErrorCode.NONE, 42)
    assert [node for node, _ in channel.asked] == [3, 2]
    assert trio.current_time() - start < 0.1  # one retry backoff at most


async def test_a_call_is_not_abandoned_for_the_leader_the_seat_named_already(autojump_clock):
    """Told by NOT_CONTROLLER to ask 2 while the seat still names 3: the call to 2 stands until
    it answers (the seat naming 3 again is no news), rather than going back to 3."""
    seat = Seat(leader=3)
    channel = FakeControllers(seat, active=2, hung=set())
    gate = trio.Event()
    answer = channel._remote

    async def slow_remote(node_id: int, request):
        if node_id == 2:
            await gate.wait()
        return await answer(node_id, request)

    channel._remote = slow_remote
    answered = []

    async def create() -> None:
        answered.append(await channel.send_with_offset(REQUEST, 30.0))

    async with trio.open_nursery() as nursery:
        nursery.start_soon(create)
        await trio.sleep(2.0)
        seat.elect(3)
        await trio.sleep(0.5)
        assert not answered
        gate.set()
    assert answered[0][1] == 42
    assert [node for node, _ in channel.asked] == [3, 2]
