"""The server half of the trio<->grpcio bridge: grpcio's asyncio servers run on one thread of the
process (`shared_aio_loop`), and each request runs as a trio task in the node's loop, so a parked
request holds no thread.

Why this shape: grpcio's thread-pool server ties up one worker thread per in-flight call, so a few
dozen long-polling consumers blocked every other request. grpc.aio parks a call as a coroutine;
the only hops are asyncio -> trio (`run_sync_soon`) and trio -> asyncio (`call_soon_threadsafe`).
Requests are parsed and answers serialized here, on the asyncio thread: a request that does not
parse gets INVALID_ARGUMENT and one rate-limited WARNING, never a traceback per request."""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import dataclasses
import logging
import os
import threading
import time
from collections.abc import Awaitable, Callable
from typing import Any

import grpc
import trio
from google.protobuf import message_factory

from clients.bridge import CHANNEL_OPTIONS
from clients.rate_limited_log import RateLimitedLog
from clients.request_times import measure_request, request_times

log = logging.getLogger(__name__)

Handler = Callable[[Any], Awaitable[Any]]


class Refused(Exception):
    """An authenticator's no: the request is answered UNAUTHENTICATED (who are you?) or
    PERMISSION_DENIED (not you) with "<Kafka error name>: <message>", and never served."""

    def __init__(self, error_name: str, message: str, *, unauthenticated: bool = True) -> None:
        super().__init__(f"{error_name}: {message}")
        self.error_name, self.message = error_name, message
        self.status = (
            grpc.StatusCode.UNAUTHENTICATED
            if unauthenticated
            else grpc.StatusCode.PERMISSION_DENIED
        )


# (method "Service.Method", the call's context) -> who sent it; raises Refused.
Authenticator = Callable[[str, Any], "RequestContext"]


@dataclasses.dataclass(frozen=True)
class RequestContext:
    """Who sent the request being served: what authorization decides on. `principal` is Kafka's
    form ("User:alice"); ANONYMOUS until a listener authenticates its peers."""

    principal: str = "User:ANONYMOUS"
    host: str = ""
    listener: str = ""
    # The listener's security protocol: on PLAINTEXT nobody is authenticated, so node-identity
    # checks (broker/security/node_trust.py) only apply to the other three.
    security_protocol: str = "PLAINTEXT"


ANONYMOUS = RequestContext()
_REQUEST: contextvars.ContextVar[RequestContext] = contextvars.ContextVar(
    "kraft_request", default=ANONYMOUS
)


def request_context() -> RequestContext:
    """The context of the request this trio task serves (ANONYMOUS outside a request)."""
    return _REQUEST.get()


@contextlib.contextmanager
def serving_as(context: RequestContext):
    """Test hook: code inside runs as if serving a request from `context` (in-process tests
    call servicers directly with the principal an authenticated listener would set)."""
    token = _REQUEST.set(context)
    try:
        yield context
    finally:
        _REQUEST.reset(token)


def peer_host(peer: str) -> str:
    """grpc's peer string ("ipv4:127.0.0.1:5000", "ipv6:[::1]:5000") to its host."""
    kind, _, rest = peer.partition(":")
    if kind == "ipv6":
        return rest.rpartition(":")[0].strip("[]")
    if kind == "ipv4":
        return rest.rpartition(":")[0]
    return rest


def parses_request(parse: Callable[[bytes], Any]):
    """Marks a raw handler that takes its request as `parse(bytes)` returns it rather than as
    the parsed message (a request read without copying its large fields); `parse` raises on
    bytes that are not the message, which are refused as any unparsable request is."""

    def mark(handler):
        handler.parse_request = parse
        return handler

    return mark


class TrioGrpcServer:
    """Serves async servicers (`async def Method(request) -> response`) from the current trio
    loop. Use as `port = await nursery.start(server.serve)`; cancelling that task stops it."""

    def __init__(
        self,
        address: str,
        *,
        grace_s: float = 0.5,
        listener_name: str = "",
        credentials: grpc.ServerCredentials | None = None,
        authenticate: Authenticator | None = None,
        interceptors: tuple[grpc.aio.ServerInterceptor, ...] = (),
    ) -> None:
        self.address = address
        self.interceptors = interceptors  # e.g. the node's request metrics
        self.listener_name = listener_name
        self.credentials = credentials  # None: plaintext
        self.authenticate = authenticate  # None: everyone is ANONYMOUS
        self.grace_s = grace_s
        self._services: list[tuple[str, dict[str, grpc.RpcMethodHandler]]] = []
        self._token: trio.lowlevel.TrioToken | None = None
        self._nursery: trio.Nursery | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._scope = trio.CancelScope()
        self._stopped: trio.Event | None = None
        self._port = 0
        self.bad_requests = RateLimitedLog(logger=log)
        self.refusals = RateLimitedLog(logger=log)

    # -- registration (before serve) ---------------------------------------------------------
    def add_servicer(
        self,
        servicer: Any,
        pb2_module: Any,
        service: str,
        raw_methods: dict[str, Handler] | None = None,
        only: tuple[str, ...] | None = None,
    ) -> None:
        """Serve every method of `service` (as named in the .proto) from `servicer`, or those in
        `only` (the others answer UNIMPLEMENTED); but a method named in `raw_methods` from the
        handler given there, which answers already-serialized bytes (a response built around
        file reads; grpcio wants `bytes`: a bytearray or memoryview answer never completes the
        call) and may take its request unparsed (`parses_request`)."""
        descriptor = pb2_module.DESCRIPTOR.services_by_name[service]
        raw_methods = raw_methods or {}
        handlers = {}
        for method in descriptor.methods:
            if only is not None and method.name not in only:
                continue
            request_type = message_factory.GetMessageClass(method.input_type)
            raw = raw_methods.get(method.name)
            handlers[method.name] = grpc.unary_unary_rpc_method_handler(
                self._shim(
                    f"{service}.{method.name}",
                    raw or getattr(servicer, method.name),
                    request_type,
                    raw=raw is not None,
                )
            )
        self._services.append((descriptor.full_name, handlers))

    def _shim(self, name: str, handler: Handler, request_type: Any, *, raw: bool):
        parse = getattr(handler, "parse_request", request_type.FromString)

        async def run(data: bytes, context: grpc.aio.ServicerContext) -> bytes:
            try:
                request = parse(data)
            except Exception as exc:  # noqa: BLE001 - any parse failure is the client's bytes
                peer = context.peer()
                self.bad_requests.warning(
                    name, "%s: a request from %s does not parse (%s); refused", name, peer, exc
                )
                await context.abort(
                    grpc.StatusCode.INVALID_ARGUMENT,
                    f"{name}: the request is not a valid {request_type.__name__} message ({exc})",
                )
            response = await self._in_trio(name, handler, request, context)
            return response if raw else response.SerializeToString()

        return run

    async def _in_trio(
        self, name: str, handler: Handler, request: Any, context: grpc.aio.ServicerContext
    ) -> Any:
        """Run `handler(request)` as a trio task and await its answer from the asyncio side."""
        loop = asyncio.get_running_loop()
        answer: asyncio.Future = loop.create_future()
        if self.authenticate is None:
            who = RequestContext(host=peer_host(context.peer()), listener=self.listener_name)
        else:
            try:
                who = self.authenticate(name, context)
            except Refused as exc:
                self.refusals.warning(
                    f"{name} {exc.error_name}", "%s from %s refused: %s", name, context.peer(), exc
                )
                await context.abort(exc.status, str(exc))
        call = _TrioCall(handler, request, answer, loop, who, request_times())
        try:
            self._token.run_sync_soon(self._start, call)
        except trio.RunFinishedError:
            await context.abort(grpc.StatusCode.UNAVAILABLE, "node is shutting down")
        try:
            return await answer
        except asyncio.CancelledError:
            # The client went away or its deadline passed: stop the trio side too.
            try:
                self._token.run_sync_soon(call.cancel)
            except trio.RunFinishedError:
                pass
            raise
        except _Unavailable:
            await context.abort(grpc.StatusCode.UNAVAILABLE, "node is shutting down")
        except Exception as exc:  # noqa: BLE001 - a bug must answer, not hang or kill the node
            log.error(
                "%s failed on a request; answered UNKNOWN_SERVER_ERROR",
                name,
                exc_info=(type(exc), exc, exc.__traceback__),
            )
            await context.abort(
                grpc.StatusCode.INTERNAL,
                f"UNKNOWN_SERVER_ERROR: {name} failed ({type(exc).__name__}: {exc}); "
                "the node logged the details",
            )

    def _start(self, call: _TrioCall) -> None:  # on the trio thread
        if self._nursery is None:
            call.settle_exception(_Unavailable())
            return
        self._nursery.start_soon(call.run)

    # -- lifetime ----------------------------------------------------------------------------
    @property
    def port(self) -> int:
        return self._port

    async def serve(self, *, task_status=trio.TASK_STATUS_IGNORED) -> None:
        """Listen; `task_status.started(port)`; serve until cancelled (or `stop()`), then stop:
        calls in flight get `grace_s` to finish, their trio tasks are cancelled after that."""
        self._token = trio.lowlevel.current_trio_token()
        self._stopped = trio.Event()
        try:
            with self._scope:
                await self._serve(task_status)
        finally:
            self._stopped.set()

    async def stop(self) -> None:
        """Stop serving and wait until the port is closed."""
        self._scope.cancel()
        if self._stopped is not None:
            await self._stopped.wait()

    async def _serve(self, task_status) -> None:
        started = trio.Event()
        stopped = trio.Event()
        outcome: dict[str, Any] = {}
        token = self._token

        def report(key: str, value: Any, event: trio.Event) -> None:
            outcome[key] = value
            try:
                token.run_sync_soon(event.set)
            except trio.RunFinishedError:
                pass  # the node's loop is gone: nobody waits for this any more

        async with trio.open_nursery() as nursery:
            self._nursery = nursery
            self._loop = shared_aio_loop()
            asyncio.run_coroutine_threadsafe(self._aio_main(report, started, stopped), self._loop)
            with trio.CancelScope(shield=True):
                await started.wait()
            if "error" in outcome:
                with trio.CancelScope(shield=True):
                    await stopped.wait()
                raise outcome["error"]
            try:
                self._port = outcome["port"]
                task_status.started(self._port)
                await trio.sleep_forever()
            finally:
                with trio.CancelScope(shield=True):
                    self._loop.call_soon_threadsafe(outcome["stop"].set)
                    with trio.move_on_after(self.grace_s + 5):
                        await stopped.wait()
                self._nursery = None
                nursery.cancel_scope.cancel()

    async def _aio_main(self, report, started: trio.Event, stopped: trio.Event) -> None:
        try:
            await self._run_aio(report, started)
        except BaseException as exc:  # noqa: BLE001 - reported to the trio side
            report("error", exc, started)
        finally:
            report("done", True, stopped)

    async def _run_aio(self, report, started: trio.Event) -> None:
        # grpcio turns SO_REUSEPORT on by default: a second node would share the port silently.
        server = grpc.aio.server(
            options=[*CHANNEL_OPTIONS, ("grpc.so_reuseport", 0)],
            interceptors=self.interceptors or None,
        )
        for name, handlers in self._services:
            server.add_generic_rpc_handlers((grpc.method_handlers_generic_handler(name, handlers),))
        try:
            if self.credentials is None:
                port = server.add_insecure_port(self.address)
            else:
                port = server.add_secure_port(self.address, self.credentials)
        except RuntimeError:
            port = 0
        if port == 0:
            raise OSError(
                f"cannot listen on {self.address}: the port is in use or the address is not local"
            )
        await server.start()
        stop = asyncio.Event()
        report("stop", stop, trio.Event())  # set before "port": serve reads both after started
        report("port", port, started)
        await stop.wait()
        await server.stop(self.grace_s)


_shared_loop: tuple[int, asyncio.AbstractEventLoop] | None = None  # (pid, loop)
_shared_loop_lock = threading.Lock()


def shared_aio_loop() -> asyncio.AbstractEventLoop:
    """The process's one asyncio loop, on a thread of its own, that every TrioGrpcServer serves on.

    Why one: grpcio's asyncio stack has one completion queue per process, bound to the first loop
    that used it; an event for a call of any other loop is handled on that first loop's thread and
    then handed on with call_soon_threadsafe. A node with two servers on two loops (a combined
    broker,controller node, or a broker with several listeners) paid that extra thread hop on every
    completion of every call, each needing the GIL (a combined node serving produce calls spent
    about a tenth of its CPU on that second loop's thread).
    The loop lives as long as the process, so the queue is never left bound to a stopped loop."""
    global _shared_loop
    with _shared_loop_lock:
        if _shared_loop is None or _shared_loop[0] != os.getpid():  # a forked child: no thread
            loop = asyncio.new_event_loop()
            ready = threading.Event()
            loop.call_soon(ready.set)
            threading.Thread(target=loop.run_forever, name="grpc-aio", daemon=True).start()
            ready.wait()
            _shared_loop = (os.getpid(), loop)
        return _shared_loop[1]


class _Unavailable(Exception):
    """The node stopped before the request could run."""


class _TrioCall:
    """One request's trio side: runs the handler, hands its answer to the asyncio future."""

    def __init__(
        self,
        handler: Handler,
        request: Any,
        answer: asyncio.Future,
        loop: asyncio.AbstractEventLoop,
        who: RequestContext,
        times=None,
    ) -> None:
        self.handler, self.request, self.answer, self.loop = handler, request, answer, loop
        self.who = who
        self.scope = trio.CancelScope()
        self.times = times  # a RequestTimes when the request is measured (metrics on)
        self.queued = time.perf_counter() if times is not None else 0.0

    def cancel(self) -> None:  # on the trio thread
        self.scope.cancel()

    async def run(self) -> None:
        _REQUEST.set(self.who)  # this task's own context: no other request sees it
        if self.times is not None:
            self.times.queue_s = time.perf_counter() - self.queued
            measure_request(self.times)  # for the purgatory: its parked time
        with self.scope:
            try:
                response = await self.handler(self.request)
            except Exception as exc:  # noqa: BLE001 - the asyncio side logs and answers it
                self.settle_exception(exc)
                return
            self.loop.call_soon_threadsafe(_settle, self.answer, response, None)
            return
        self.settle_exception(_Unavailable())  # cancelled: the node is stopping

    def settle_exception(self, exc: BaseException) -> None:
        try:
            self.loop.call_soon_threadsafe(_settle, self.answer, None, exc)
        except RuntimeError:
            pass  # the asyncio loop already closed: nobody waits for this answer


def _settle(future: asyncio.Future, result: Any, exc: BaseException | None) -> None:
    if future.done():
        return  # cancelled by the client meanwhile
    if exc is not None:
        future.set_exception(exc)
    else:
        future.set_result(result)
