"""One Kafka client connection: a reader task and a writer task around a bounded, ordered queue
of slots. The reader parses each frame, runs the order-sensitive part of its handler inline (a
Produce's append, so pipelined requests reach the log in the order sent), lets the rest (an
acks=all wait, a long-poll Fetch) go on in its own task, and queues the slot; a full queue stops
reading. The writer owns the socket and sends the answers in request order, record bytes from
segment files by sendfile. acks=0 gets no answer. A bad frame closes only this connection."""

from __future__ import annotations

import errno
import logging
import os
from collections.abc import Awaitable, Callable

import trio

from broker.kafka import apis
from broker.kafka.answer import Answer, FileRange
from broker.kafka.framing import (
    FrameError,
    RequestHeader,
    frame_size,
    parse_request_header,
    response_header,
    size_prefix,
)
from clients.rate_limited_log import RateLimitedLog

log = logging.getLogger(__name__)
_bad_frames = RateLimitedLog(10.0, logger=log)

# Answers a connection may owe before it stops reading: clients keep up to 5 in flight
# (max.in.flight.requests.per.connection), librdkafka up to 1,000,000 queued ones.
MAX_QUEUED = 64
READ_CHUNK = 65536

# (header, body view, connection) -> its answer, or None for none (acks=0). `started()` is
# called once its order-sensitive part is done; the dispatcher calls it for handlers that
# have none.
Dispatch = Callable[
    [RequestHeader, memoryview, "Connection", Callable[[], None]], Awaitable[Answer | None]
]


class CloseConnection(Exception):
    """A handler's verdict: this connection cannot go on (Kafka closes on an unknown API)."""


class _Slot:
    __slots__ = ("answer", "done", "failed", "header")

    def __init__(self, header: RequestHeader) -> None:
        self.header = header
        self.done = trio.Event()
        self.answer: Answer | None = None
        self.failed: Exception | None = None


class Connection:
    def __init__(
        self,
        stream: trio.SocketStream,
        dispatch: Dispatch,
        *,
        max_request_bytes: int,
        peer: str,
        listener: str,
    ) -> None:
        self.stream = stream
        self.dispatch = dispatch
        self.max_request_bytes = max_request_bytes
        self.peer = peer  # the client's host, for authorization and logs
        self.listener = listener
        self._buffer = bytearray()

    async def serve(self) -> None:
        """Until the client leaves, sends a bad frame, or the node stops; never raises but
        Cancelled."""
        send, receive = trio.open_memory_channel(MAX_QUEUED)
        try:
            async with trio.open_nursery() as nursery:
                nursery.start_soon(self._guarded, self._write, receive, nursery.cancel_scope)
                nursery.start_soon(self._guarded, self._read, send, nursery, nursery.cancel_scope)
        finally:
            with trio.CancelScope(shield=True):
                # Answers queued but never sent still hold segment descriptors.
                while True:
                    try:
                        slot = receive.receive_nowait()
                    except (trio.WouldBlock, trio.EndOfChannel, trio.ClosedResourceError):
                        break
                    if slot.answer is not None:
                        slot.answer.close()
                await trio.aclose_forcefully(self.stream)

    async def _guarded(self, task, *args) -> None:
        """Run the reader or the writer; whatever ends it ends the connection, not the node."""
        cancel_scope = args[-1]
        try:
            await task(*args[:-1])
        except (FrameError, CloseConnection) as exc:
            _bad_frames.warning(
                "bad-frame",
                "Kafka listener %s: closed the connection from %s: %s",
                self.listener,
                self.peer,
                exc,
            )
        except (trio.BrokenResourceError, trio.ClosedResourceError, ConnectionError):
            pass  # the client went away
        except OSError as exc:
            _bad_frames.warning(
                "socket",
                "Kafka listener %s: connection from %s failed: %s",
                self.listener,
                self.peer,
                exc,
            )
        except Exception:  # noqa: BLE001
            _bad_frames.exception(
                "crash",
                "Kafka listener %s: closed the connection from %s after an unexpected error",
                self.listener,
                self.peer,
            )
        cancel_scope.cancel()

    async def _read(self, send, nursery: trio.Nursery) -> None:
        async with send:
            while True:
                prefix = await self._receive_exactly(4)
                if prefix is None:
                    return
                frame = await self._receive_exactly(frame_size(prefix, self.max_request_bytes))
                if frame is None:
                    raise FrameError("the connection ended inside a frame")
                header = parse_request_header(frame)
                # kio's reader takes bytes or a read-only view only.
                body = memoryview(frame).toreadonly()[header.size :]
                slot = _Slot(header)
                await send.send(slot)  # blocks while MAX_QUEUED answers are owed
                await nursery.start(self._run, slot, body)
                if slot.failed:
                    return  # the writer closes the connection after the answers before it

    async def _run(self, slot: _Slot, body: memoryview, *, task_status) -> None:
        """The handler; `task_status.started()` once its order-sensitive part is done. A failure
        marks the slot: the writer closes the connection there, after the answers before it."""
        started = False

        def mark_started() -> None:
            nonlocal started
            if not started:
                started = True
                task_status.started()

        try:
            slot.answer = await self.dispatch(slot.header, body, self, mark_started)
        except (FrameError, CloseConnection) as exc:
            slot.failed = exc
        except Exception as exc:  # noqa: BLE001
            _bad_frames.exception(
                "handler",
                "Kafka listener %s: %s v%d from %s failed",
                self.listener,
                slot.header.api_key,
                slot.header.api_version,
                self.peer,
            )
            slot.failed = CloseConnection(f"the handler failed: {type(exc).__name__}")
        finally:
            slot.done.set()
            mark_started()

    async def _write(self, receive) -> None:
        async for slot in receive:
            await slot.done.wait()
            answer = slot.answer
            if slot.failed:
                raise slot.failed
            if answer is None:  # acks=0
                continue
            try:
                await self._send(slot.header, answer)
            finally:
                answer.close()

    async def _send(self, header: RequestHeader, answer: Answer) -> None:
        _, header_version = apis.header_versions(header.api_key, header.api_version)
        head = response_header(header.correlation_id, header_version)
        first = [size_prefix(len(head) + answer.size), head]
        pending: list[bytes] = first
        for piece in answer.pieces:
            if isinstance(piece, FileRange):
                if pending:
                    await self.stream.send_all(b"".join(pending))
                    pending = []
                await self._sendfile(piece)
            else:
                pending.append(piece)
        if pending:
            await self.stream.send_all(b"".join(pending))

    async def _sendfile(self, piece: FileRange) -> None:
        """os.sendfile on the non-blocking socket, waiting for room in between (socket.sendfile
        refuses non-blocking sockets)."""
        sock = self.stream.socket
        out = sock.fileno()
        position, left = piece.position, piece.size
        while left:
            try:
                sent = os.sendfile(out, piece.fd, position, left)
            except BlockingIOError:
                await trio.lowlevel.wait_writable(sock)
                continue
            except OSError as exc:
                if exc.errno in (errno.EPIPE, errno.ECONNRESET):
                    raise trio.BrokenResourceError() from exc
                raise
            if sent == 0:
                # The segment was truncated under the range: the frame's size is already
                # sent, so the only honest thing left is to end the connection.
                raise trio.BrokenResourceError("a segment ended inside a fetched range")
            position += sent
            left -= sent
            await trio.lowlevel.checkpoint_if_cancelled()

    async def _receive_exactly(self, n: int) -> bytes | None:
        """n bytes, or None at a clean end of stream before any of them."""
        buffer = self._buffer
        while len(buffer) < n:
            # At most a MiB per read: recv allocates the whole size asked for each time.
            chunk = await self.stream.receive_some(min(max(READ_CHUNK, n - len(buffer)), 1 << 20))
            if not chunk:
                if buffer:
                    raise FrameError("the connection ended inside a frame")
                return None
            buffer += chunk
        data = bytes(buffer[:n])
        del buffer[:n]
        return data
