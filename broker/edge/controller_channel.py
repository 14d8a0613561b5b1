"""How a broker reaches the active controller: this node's own controller when it is the active
one, else the Raft leader the metadata log names, over the Controller service on the voters'
controller listeners. NOT_CONTROLLER and unreachable controllers are retried until the deadline;
a call in flight to one controller moves to another as soon as this node learns that it leads."""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from typing import Protocol

import trio

from broker.edge import controller_wire
from clients import bridge
from clients.errors import ErrorCode, KraftError
from clients.wire import controller_pb2_grpc

log = logging.getLogger(__name__)

RETRY_BACKOFF_S = 0.05
CALL_TIMEOUT_S = 5.0


class NotController(Exception):
    """This node is not the active controller; `leader_id` is the Raft leader it knows of."""

    def __init__(self, node_id: int, leader_id: int | None) -> None:
        self.leader_id = leader_id
        where = f"node {leader_id} is" if leader_id is not None else "no controller is known to be"
        super().__init__(f"node {node_id} is not the active controller; {where} active")


class LocalController(Protocol):
    """This node's own controller (broker/controller/active.py's ActiveController): asked in
    place of a network call when it is the one the channel targets; raises NotController when
    it is not active."""

    @property
    def node_id(self) -> int: ...

    async def handle(self, request) -> tuple[object, int]: ...


class ControllerChannel:
    def __init__(
        self,
        voters: dict[int, str],
        leader_hint: Callable[[], int | None],
        local: LocalController | None = None,
        open_channel: Callable[[str], object] = bridge.open_channel,
        leader_changed: Callable[[], Awaitable[object]] | None = None,
    ) -> None:
        """`leader_hint`: the Raft leader this node's metadata seat knows of (None: electing);
        `leader_changed`: returns once that may have changed (the driver's wait_leader_change)."""
        # TLS with this node's certificate when secured; DescribeQuorum on a broker uses it too.
        self.open_channel = open_channel
        self._voters = dict(voters)
        self._leader_hint = leader_hint
        self._leader_changed = leader_changed
        self._local = local
        self._stubs: dict[int, controller_pb2_grpc.ControllerStub] = {}
        self._channels: dict[int, object] = {}
        self._told: int | None = None  # the controller a NOT_CONTROLLER answer pointed at
        self._next_voter = 0

    def _target(self) -> int | None:
        """Whom to ask: the controller the last NOT_CONTROLLER answer named (the freshest word:
        this node's own metadata seat may still name the old leader), else the Raft leader this
        node knows of, else the next voter in turn (a voter that is not active answers
        NOT_CONTROLLER naming the one that is)."""
        if self._told is not None:
            return self._told
        leader = self._leader_hint()
        if leader is not None:
            return leader
        ids = sorted(self._voters)
        if not ids:
            return None
        self._next_voter = (self._next_voter + 1) % len(ids)
        return ids[self._next_voter]

    async def send(self, request, timeout_s: float):
        """The active controller's response to `request` (a kraft.controller.messages request).
        Raises KraftError(REQUEST_TIMED_OUT) when no active controller answered in time."""
        response, _ = await self.send_with_offset(request, timeout_s)
        return response

    async def send_with_offset(self, request, timeout_s: float) -> tuple[object, int]:
        """Like send; also the metadata offset the command committed (-1: it wrote nothing)."""
        last_problem = "no controller answered"
        with trio.move_on_after(timeout_s):
            while True:
                target = self._target()
                try:
                    if (
                        target is not None
                        and self._local is not None
                        and target == self._local.node_id
                    ):
                        return await self._local.handle(request)
                    if target is not None and target in self._voters:
                        answer = await self._remote_while_leading(target, request)
                        if answer is None:  # another controller leads now: ask it
                            last_problem = f"controller {target} is no longer the leader"
                            self._told = None
                            continue
                        response, offset = answer
                        if response.error_code != ErrorCode.NOT_CONTROLLER:
                            self._told = None
                            return response, offset
                        last_problem = response.error_message
                        self._told = response.controller_id if response.controller_id >= 0 else None
                except NotController as exc:
                    last_problem = str(exc)
                    self._told = exc.leader_id if exc.leader_id != target else None
                except KraftError as exc:
                    if exc.code not in (
                        ErrorCode.NETWORK_EXCEPTION,
                        ErrorCode.REQUEST_TIMED_OUT,
                        ErrorCode.NOT_CONTROLLER,
                        ErrorCode.UNKNOWN_SERVER_ERROR,
                    ):
                        raise
                    last_problem = f"controller {target}: {exc.message}"
                    self._told = None
                await self._backoff(target)
        raise KraftError(
            ErrorCode.REQUEST_TIMED_OUT,
            f"no active controller answered within {timeout_s:g} s ({last_problem})",
        )

    async def _wait_another_leader(self, target: int | None, known: int | None = None) -> None:
        """Return once this node's metadata seat names a leader other than `target` and `known`
        (the one it named already, which a NOT_CONTROLLER answer may have overruled)."""
        while True:
            leader = self._leader_hint()
            if leader is not None and leader not in (target, known):
                return
            await self._leader_changed()

    async def _backoff(self, target: int | None) -> None:
        """RETRY_BACKOFF_S before the next try, cut short when a new leader becomes known."""
        with trio.move_on_after(RETRY_BACKOFF_S):
            if self._leader_changed is not None and self._told is None:
                await self._wait_another_leader(target)
            else:
                await trio.sleep_forever()

    async def _remote_while_leading(self, target: int, request) -> tuple[object, int] | None:
        """`target`'s answer; None if this node learns of another leader first. A dead or paused
        controller's call is then abandoned at once rather than after CALL_TIMEOUT_S, and asked
        of the new leader: it holds everything that committed, and a command the old one had
        not committed either reached the new leader's log (the second try then answers as any
        retry does, e.g. TOPIC_ALREADY_EXISTS) or is lost with its epoch."""
        if self._leader_changed is None:
            return await self._remote(target, request)
        answer, failure, known = None, None, self._leader_hint()
        async with trio.open_nursery() as nursery:

            async def call() -> None:
                nonlocal answer, failure
                try:
                    answer = await self._remote(target, request)
                except KraftError as exc:  # raised here, not as a nursery's ExceptionGroup
                    failure = exc
                nursery.cancel_scope.cancel()

            async def watch() -> None:
                await self._wait_another_leader(target, known)
                nursery.cancel_scope.cancel()

            nursery.start_soon(call)
            nursery.start_soon(watch)
        if failure is not None:
            raise failure
        return answer

    async def _remote(self, node_id: int, request) -> tuple[object, int]:
        stub = self._stubs.get(node_id)
        if stub is None:
            channel = self._channels[node_id] = self.open_channel(self._voters[node_id])
            stub = self._stubs[node_id] = controller_pb2_grpc.ControllerStub(channel)
        method = getattr(stub, controller_wire.RPC_OF[type(request)])
        answer = await bridge.call(method, controller_wire.to_proto(request), CALL_TIMEOUT_S)
        return controller_wire.from_proto(answer), answer.metadata_offset

    def close(self) -> None:
        for channel in self._channels.values():
            channel.close()
        self._channels.clear()
        self._stubs.clear()
