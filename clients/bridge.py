"""Where trio meets grpcio (which has no trio support), client side: trio code awaits a unary call
through `call` (a grpcio future whose callback wakes the trio loop; cancelling the trio scope
cancels the call). The server side is clients/grpc_server.py."""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import grpc
import trio

from clients.channel_thread import keep_thread
from clients.errors import ErrorCode, KraftError

if TYPE_CHECKING:
    from clients.security import ClientSecurity

log = logging.getLogger(__name__)

# gRPC status codes that mean "could not talk to that node": the caller should refresh its view
# of the cluster and retry, like Kafka's NetworkException.
_UNREACHABLE = {
    grpc.StatusCode.UNAVAILABLE,
    grpc.StatusCode.DEADLINE_EXCEEDED,
    grpc.StatusCode.CANCELLED,
}

# The prefix of an UNAUTHENTICATED answer to a token the node no longer knows: retriable.
SESSION_EXPIRED = "SESSION_EXPIRED"

# What grpc's details say when a TLS handshake failed (wrong CA, no TLS, hostname mismatch).
_TLS_FAILURES = ("Ssl handshake", "SSL routines", "CERTIFICATE_VERIFY_FAILED", "handshake failed")

# The largest message either side of any kraft channel sends or takes (clients and nodes share
# these options; the server's are the same): far above the batch limits (max.request.size,
# max.message.bytes, fetch sizes), which are what refuse a large record, by name.
MAX_MESSAGE_BYTES = 256 * 1024 * 1024

# How long a connection attempt may take before it fails (see CHANNEL_OPTIONS).
CONNECT_TIMEOUT_MS = 1000

CHANNEL_OPTIONS = [
    ("grpc.max_receive_message_length", MAX_MESSAGE_BYTES),
    ("grpc.max_send_message_length", MAX_MESSAGE_BYTES),
    ("grpc.enable_http_proxy", 0),
    # gRPC backs off reconnects from 1 s up to 120 s; a node that restarts (chaos, failover) would
    # stay "unreachable" for seconds after it listens again. Kafka caps its reconnect backoff at
    # 1 s (reconnect.backoff.max.ms); so do we, starting much lower (grpc core floors it at 100 ms).
    ("grpc.initial_reconnect_backoff_ms", 50),
    ("grpc.max_reconnect_backoff_ms", 1000),
    # Not a backoff in grpc core: the least time a connection attempt (TCP, TLS, the server's
    # HTTP/2 SETTINGS) gets before it counts as failed. At 50 (floored to 100 ms) a node busy for
    # a tenth of a second, as on a loaded machine, failed every new connection ("timed out
    # before receiving SETTINGS frame"). A refused connection still fails at once; only a
    # silent peer (a partition, a vanished host) now takes up to this long to give up on.
    ("grpc.min_reconnect_backoff_ms", CONNECT_TIMEOUT_MS),
]


def open_channel(address: str, security: ClientSecurity | None = None) -> grpc.Channel:
    """A channel to `address`: plaintext, or TLS and/or a SCRAM session as `security` says.
    Its completion thread lives until `close()` (clients/channel_thread.py says why)."""
    if security is None or security.security_protocol == "PLAINTEXT":
        return keep_thread(grpc.insecure_channel(address, options=CHANNEL_OPTIONS))
    from clients.security import open_secure_channel  # (keeps the thread too)

    return open_secure_channel(address, security, CHANNEL_OPTIONS)


class PendingCall:
    """A unary RPC already on its way (`start`); `finish` awaits its answer. `taken`: what the
    `on_answer` hook returned, None if it did not take the answer."""

    __slots__ = ("future", "done", "taken")

    def __init__(self, future: grpc.Future, done: trio.Event) -> None:
        self.future = future
        self.done = done
        self.taken: Any = None


def start(
    method: grpc.UnaryUnaryMultiCallable,
    request: Any,
    timeout: float,
    on_answer: Callable[[Any], Any] | None = None,
) -> PendingCall:
    """Trio thread: hand the request to grpcio now, without waiting for a scheduling round (the
    producer's sender issues its requests in the same step that drains them).

    `on_answer(response)` runs in grpcio's callback thread before the trio loop is woken, for an
    answer someone in a third thread waits for: the consumer's poller gets its records one
    thread wake sooner (each wake costs 0.1-0.25 ms on a small VM). It must be thread-safe and
    return None to leave the answer to the trio side (an error, anything unusual)."""
    token = trio.lowlevel.current_trio_token()
    done = trio.Event()
    future = method.future(request, timeout=timeout)
    pending = PendingCall(future, done)
    if on_answer is None:
        future.add_done_callback(lambda _f: token.run_sync_soon(done.set))
    else:

        def answered(f: grpc.Future) -> None:
            try:
                if not f.cancelled() and f.exception() is None:
                    pending.taken = on_answer(f.result())
            except Exception:  # a bug in the hook must not lose the answer: trio handles it
                log.exception(
                    "the answer hook of %s failed; the answer is handled in trio",
                    getattr(method, "_method", method),
                )
                pending.taken = None
            finally:
                token.run_sync_soon(done.set)

        future.add_done_callback(answered)
    return pending


async def finish(pending: PendingCall) -> Any:
    """The answer of a `start`ed call; cancelling the trio scope cancels the RPC. Transport
    failures raise KraftError(NETWORK_EXCEPTION) so callers see one error type."""
    try:
        await pending.done.wait()
    except BaseException:
        pending.future.cancel()
        raise
    try:
        return pending.future.result()
    except grpc.RpcError as exc:
        raise as_kraft_error(exc) from None


async def call(method: grpc.UnaryUnaryMultiCallable, request: Any, timeout: float) -> Any:
    """Await one unary RPC without blocking the trio thread (`start` then `finish`)."""
    return await finish(start(method, request, timeout))


# How a node answers a service it does not serve (a broker RPC sent to a controller listener):
# Kafka's UNSUPPORTED_VERSION, "this node does not speak that API". `is_unimplemented` finds it.
NOT_SERVED = "the node at this address does not serve this request"


def as_kraft_error(exc: grpc.RpcError) -> KraftError:
    code = exc.code() if hasattr(exc, "code") else None
    details = exc.details() if hasattr(exc, "details") else str(exc)
    if code == grpc.StatusCode.UNIMPLEMENTED:
        return KraftError(ErrorCode.UNSUPPORTED_VERSION, f"{NOT_SERVED} ({details})")
    if code in _UNREACHABLE:
        name = "timed out" if code == grpc.StatusCode.DEADLINE_EXCEEDED else "unreachable"
        if any(sign in (details or "") for sign in _TLS_FAILURES):
            details = (
                f"{details} (the TLS handshake failed: check security_protocol, the CA "
                f"file and the certificate; the certificate must name the host dialled)"
            )
        return KraftError(ErrorCode.NETWORK_EXCEPTION, f"node {name}: {details}")
    if code in (grpc.StatusCode.UNAUTHENTICATED, grpc.StatusCode.PERMISSION_DENIED):
        # The server refused before serving: "<KAFKA_ERROR_NAME>: <message>".
        name, _, message = (details or "").partition(": ")
        if name == SESSION_EXPIRED:  # the node forgot the session (restart): authenticate again
            return KraftError(ErrorCode.NETWORK_EXCEPTION, f"node unreachable: {message}")
        if name in ErrorCode.__members__:
            return KraftError(ErrorCode[name], message)
    return KraftError(ErrorCode.UNKNOWN_SERVER_ERROR, f"{code}: {details}")


def is_unimplemented(exc: KraftError) -> bool:
    """The node answered that it has no such RPC: the address is another kind of listener."""
    return exc.code == ErrorCode.UNSUPPORTED_VERSION and exc.message.startswith(NOT_SERVED)


def is_connection_refused(exc: KraftError) -> bool:
    """The call could not even connect (nothing listens, or the connection is backing off), as
    opposed to a timeout: the peer is down, not slow, so asking someone else at once is right."""
    return exc.code == ErrorCode.NETWORK_EXCEPTION and exc.message.startswith("node unreachable")
