"""How a broker reaches the active controller: this node's own controller when it is the active
one, else the Raft leader the metadata log names, over the Controller service on the voters'
controller listeners. NOT_CONTROLLER and unreachable controllers are retried until the deadline."""
from __future__ import annotations

import logging
from typing import Callable

import trio

from broker.controller import wire as controller_wire
from broker.controller.active import ActiveController, NotController
from clients import bridge
from clients.errors import ErrorCode, KraftError
from clients.wire import controller_pb2_grpc

log = logging.getLogger(__name__)

RETRY_BACKOFF_S = 0.05
CALL_TIMEOUT_S = 5.0


class ControllerChannel:
    def __init__(self, voters: dict[int, str], leader_hint: Callable[[], int | None],
                 local: ActiveController | None = None,
                 open_channel: Callable[[str], object] = bridge.open_channel) -> None:
        # TLS with this node's certificate when secured; DescribeQuorum on a broker uses it too.
        self.open_channel = open_channel
        self._voters = dict(voters)
        self._leader_hint = leader_hint
        self._local = local
        self._stubs: dict[int, controller_pb2_grpc.ControllerStub] = {}
        self._channels: dict[int, object] = {}
        self._told: int | None = None      # the controller a NOT_CONTROLLER answer pointed at
        self._next_voter = 0

    def _target(self) -> int | None:
        """Whom to ask: the Raft leader this node knows of, else the last hint, else the next
        voter in turn (a voter that is not active answers NOT_CONTROLLER naming the one that is)."""
        leader = self._leader_hint()
        if leader is not None:
            return leader
        if self._told is not None:
            return self._told
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
                    if target is not None and self._local is not None \
                            and target == self._local.node_id:
                        return await self._local.handle(request)
                    if target is not None and target in self._voters:
                        response, offset = await self._remote(target, request)
                        if response.error_code != ErrorCode.NOT_CONTROLLER:
                            self._told = None
                            return response, offset
                        last_problem = response.error_message
                        self._told = response.controller_id if response.controller_id >= 0 else None
                except NotController as exc:
                    last_problem = str(exc)
                    self._told = exc.leader_id if exc.leader_id != target else None
                except KraftError as exc:
                    if exc.code not in (ErrorCode.NETWORK_EXCEPTION, ErrorCode.REQUEST_TIMED_OUT,
                                        ErrorCode.NOT_CONTROLLER, ErrorCode.UNKNOWN_SERVER_ERROR):
                        raise
                    last_problem = f"controller {target}: {exc.message}"
                    self._told = None
                await trio.sleep(RETRY_BACKOFF_S)
        raise KraftError(ErrorCode.REQUEST_TIMED_OUT,
                         f"no active controller answered within {timeout_s:g} s ({last_problem})")

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
