"""The one place the gRPC listeners' requests are counted and timed: a grpc.aio server
interceptor that wraps each method's handler once, reads the Kafka error codes out of the
answer (every `error_code` field, as Kafka's errorCounts) and reports to RequestStats."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import grpc
from google.protobuf import message_factory

from broker.metrics.request_stats import RequestStats
from broker.metrics.wire_codes import wire_error_counts, wire_plan
from clients.errors import ErrorCode
from clients.request_times import RequestTimes, measure_request, stop_measuring
from clients.wire import (
    broker_pb2,
    controller_pb2,
    group_pb2,
    quorum_pb2,
    security_pb2,
    transaction_pb2,
)

_WIRE = (broker_pb2, controller_pb2, group_pb2, quorum_pb2, security_pb2, transaction_pb2)
_INT_TYPES = frozenset((1, 3, 4, 5, 6, 7, 13, 15, 16, 17, 18))  # FieldDescriptor int types
# (field name, the plan of its message or None for an error_code itself, repeated)
Plan = tuple[tuple[str, Any, bool], ...]


def error_plan(descriptor, _seen: frozenset = frozenset()) -> Plan:
    """Where a message's `error_code` fields are, nested messages included (maps skipped)."""
    plan = []
    for field in descriptor.fields:
        if field.name == "error_code" and field.type in _INT_TYPES and not field.is_repeated:
            plan.append((field.name, None, False))
            continue
        sub = field.message_type
        if sub is None or sub.GetOptions().map_entry or sub.full_name in _seen:
            continue
        nested = error_plan(sub, _seen | {descriptor.full_name})
        if nested:
            plan.append((field.name, nested, field.is_repeated))
    return tuple(plan)


def error_counts(message, plan: Plan) -> dict[int, int]:
    """{error code: how many} in `message`; {0: 1} when it has no error_code at all."""
    out: dict[int, int] = {}
    counter_for(plan)(message, out)
    return out or {0: 1}


_COUNTERS: dict[Plan, Callable] = {}


def counter_for(plan: Plan) -> Callable:
    """`plan` as nested closures, built once per plan: a Produce answer is walked on every
    request, and interpreting the plan tuple each time cost twice as much."""
    counter = _COUNTERS.get(plan)
    if counter is None:
        counter = _COUNTERS[plan] = _compile(plan)
    return counter


def _compile(plan: Plan) -> Callable:
    steps = [
        _code_step(name)
        if nested is None
        else _repeated_step(name, _compile(nested))
        if repeated
        else _optional_step(name, _compile(nested))
        for name, nested, repeated in plan
    ]
    if len(steps) == 1:
        return steps[0]

    def all_steps(message, out):
        for step in steps:
            step(message, out)

    return all_steps


def _code_step(name: str) -> Callable:
    def step(message, out):
        code = getattr(message, name)
        out[code] = out.get(code, 0) + 1

    return step


def _repeated_step(name: str, inner: Callable) -> Callable:
    def step(message, out):
        for item in getattr(message, name):
            inner(item, out)

    return step


def _optional_step(name: str, inner: Callable) -> Callable:
    def step(message, out):
        if message.HasField(name):
            inner(getattr(message, name), out)

    return step


# Above this size an answer's codes are read off its bytes (wire_codes.py) instead of parsing it:
# parsing is faster for small answers (3 µs against 5 for a 16 KB Fetch answer here), but copies
# a large one whole (57 µs against 5 for 1 MB).
SCAN_ABOVE_BYTES = 32768


def _responses() -> dict[str, tuple[Any, Plan, dict]]:
    """gRPC method path ("/kraft.broker.v1.Broker/Produce") -> (response class, its plan, its
    plan by field number)."""
    out = {}
    for module in _WIRE:
        for service in module.DESCRIPTOR.services_by_name.values():
            for method in service.methods:
                out[f"/{service.full_name}/{method.name}"] = (
                    message_factory.GetMessageClass(method.output_type),
                    error_plan(method.output_type),
                    wire_plan(method.output_type),
                )
    return out


_RESPONSES: dict[str, tuple[Any, Plan, dict]] | None = None


def aborted_error(context) -> str:
    """The error of a call that ended without an answer: the Kafka error name an abort's
    details start with ("UNKNOWN_SERVER_ERROR: ..."), else the gRPC status ("CANCELLED" when
    the client went away)."""
    details = context.details() or ""
    name = details.partition(":")[0]
    if name in ErrorCode.__members__:
        return name
    code = context.code()
    return code.name if isinstance(code, grpc.StatusCode) else "CANCELLED"


class RequestMetricsInterceptor(grpc.aio.ServerInterceptor):
    """One per gRPC server (each serves one listener)."""

    def __init__(
        self, stats: RequestStats, listener: str, clock: Callable[[], float] = time.perf_counter
    ) -> None:
        global _RESPONSES
        if _RESPONSES is None:
            _RESPONSES = _responses()
        self.stats, self.listener, self.clock = stats, listener, clock
        self._wrapped: dict[str, grpc.RpcMethodHandler] = {}

    async def intercept_service(self, continuation, handler_call_details):
        method = handler_call_details.method
        wrapped = self._wrapped.get(method)
        if wrapped is None:  # once per method: a server's handlers never change
            handler = await continuation(handler_call_details)
            if handler is None or handler.unary_unary is None:
                return handler  # UNIMPLEMENTED: grpcio answers it, nothing of ours ran
            wrapped = self._wrapped[method] = self._wrap(method, handler)
        return wrapped

    def _wrap(self, method: str, handler: grpc.RpcMethodHandler) -> grpc.RpcMethodHandler:
        api = method.rpartition("/")[2]
        response_class, plan, by_number = _RESPONSES.get(method, (None, (), {}))
        behavior, observe, listener, clock = (
            handler.unary_unary,
            self.stats.observe_request,
            self.listener,
            self.clock,
        )

        async def timed(request, context):
            times = RequestTimes()  # the server takes it to the request's trio task
            token = measure_request(times)
            start = clock()
            try:
                response = await behavior(request, context)
            except BaseException:
                observe(
                    api,
                    listener,
                    aborted_error(context),
                    clock() - start,
                    queue_s=times.queue_s,
                    remote_s=times.remote_s,
                )
                raise
            finally:
                stop_measuring(token)
            elapsed = clock() - start  # the answer's own time, not our look at it
            try:
                if not plan:
                    codes: Any = 0
                elif isinstance(response, bytes):  # the servers answer serialized messages
                    codes = (
                        wire_error_counts(response, by_number)
                        if len(response) > SCAN_ABOVE_BYTES
                        else error_counts(response_class.FromString(response), plan)
                    )
                else:
                    codes = error_counts(response, plan)
            except Exception:  # noqa: BLE001 - counting must never fail the answer
                codes = "UNREADABLE_ANSWER"
            observe(api, listener, codes, elapsed, queue_s=times.queue_s, remote_s=times.remote_s)
            return response

        return grpc.unary_unary_rpc_method_handler(
            timed,
            request_deserializer=handler.request_deserializer,
            response_serializer=handler.response_serializer,
        )
