"""The one place trio meets grpcio (which has no trio support): clients await unary calls through
`call`; servers run grpcio's thread-pool server and hop each request into the trio loop with
`serve_async_servicer`. Measured choices are in ../shared/FACTS.md."""
from __future__ import annotations

import threading
from typing import Any, Awaitable, Callable

import grpc
import trio

from clients.errors import ErrorCode, KraftError

# gRPC status codes that mean "could not talk to that node": the caller should refresh its view
# of the cluster and retry, like Kafka's NetworkException.
_UNREACHABLE = {grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.DEADLINE_EXCEEDED,
                grpc.StatusCode.CANCELLED}

CHANNEL_OPTIONS = [
    ("grpc.max_receive_message_length", 256 * 1024 * 1024),
    ("grpc.max_send_message_length", 256 * 1024 * 1024),
    ("grpc.enable_http_proxy", 0),
    # gRPC backs off reconnects from 1 s up to 120 s; a node that restarts (chaos, failover) would
    # stay "unreachable" for seconds after it listens again. Kafka caps its reconnect backoff at
    # 1 s (reconnect.backoff.max.ms); so do we, starting much lower.
    ("grpc.initial_reconnect_backoff_ms", 50),
    ("grpc.min_reconnect_backoff_ms", 50),
    ("grpc.max_reconnect_backoff_ms", 1000),
]


def open_channel(address: str) -> grpc.Channel:
    return grpc.insecure_channel(address, options=CHANNEL_OPTIONS)


async def call(method: grpc.UnaryUnaryMultiCallable, request: Any, timeout: float) -> Any:
    """Await one unary RPC without blocking the trio thread; cancelling the trio scope cancels
    the RPC. Transport failures raise KraftError(NETWORK_EXCEPTION) so callers see one error type."""
    token = trio.lowlevel.current_trio_token()
    done = trio.Event()
    future = method.future(request, timeout=timeout)
    future.add_done_callback(lambda _f: token.run_sync_soon(done.set))
    try:
        await done.wait()
    except BaseException:
        future.cancel()
        raise
    try:
        return future.result()
    except grpc.RpcError as exc:
        raise as_kraft_error(exc) from None


def as_kraft_error(exc: grpc.RpcError) -> KraftError:
    code = exc.code() if hasattr(exc, "code") else None
    details = exc.details() if hasattr(exc, "details") else str(exc)
    if code in _UNREACHABLE:
        name = "timed out" if code == grpc.StatusCode.DEADLINE_EXCEEDED else "unreachable"
        return KraftError(ErrorCode.NETWORK_EXCEPTION, f"node {name}: {details}")
    return KraftError(ErrorCode.UNKNOWN_SERVER_ERROR, f"{code}: {details}")


def is_connection_refused(exc: KraftError) -> bool:
    """The call could not even connect (nothing listens, or the connection is backing off), as
    opposed to a timeout: the peer is down, not slow, so asking someone else at once is right."""
    return exc.code == ErrorCode.NETWORK_EXCEPTION and exc.message.startswith("node unreachable")


def serve_async_servicer(servicer: Any, add_to_server: Callable[[Any, grpc.Server], None],
                         server: grpc.Server, token: trio.lowlevel.TrioToken,
                         method_names: list[str]) -> None:
    """Register an object whose RPC methods are `async def m(request) -> response` on a grpcio
    server. Each call runs in the trio loop; the grpc worker thread waits for it."""

    def bridge(name: str) -> Callable[[Any, grpc.ServicerContext], Any]:
        handler: Callable[[Any], Awaitable[Any]] = getattr(servicer, name)

        def run(request: Any, context: grpc.ServicerContext) -> Any:
            try:
                return trio.from_thread.run(handler, request, trio_token=token)
            except trio.RunFinishedError:
                context.abort(grpc.StatusCode.UNAVAILABLE, "node is shutting down")

        return run

    shim = type(type(servicer).__name__ + "Bridge", (), {n: staticmethod(bridge(n)) for n in method_names})
    add_to_server(shim(), server)


def start_server(address: str, register: Callable[[grpc.Server], None],
                 max_workers: int = 64) -> tuple[grpc.Server, int]:
    """A started grpcio server on `address` ("host:port", port 0 picks one) with the servicers
    `register` adds (grpcio wants them before start). Every in-flight RPC, long-poll fetches
    included, holds a worker thread, hence the generous pool."""
    from concurrent.futures import ThreadPoolExecutor

    # grpcio turns SO_REUSEPORT on by default: a second node would share the port silently.
    server = grpc.server(ThreadPoolExecutor(max_workers=max_workers, thread_name_prefix="grpc"),
                         options=[*CHANNEL_OPTIONS, ("grpc.so_reuseport", 0)])
    register(server)
    try:
        port = server.add_insecure_port(address)
    except RuntimeError:
        port = 0
    if port == 0:
        raise OSError(f"cannot listen on {address}: the port is in use or the address is not local")
    server.start()
    return server, port


async def stop_server(server: grpc.Server, grace: float = 1.0) -> None:
    """Stop without blocking the trio thread (server.stop waits on grpc's own threads)."""
    with trio.CancelScope(shield=True):
        stopped: threading.Event = server.stop(grace)
        await trio.to_thread.run_sync(stopped.wait)
