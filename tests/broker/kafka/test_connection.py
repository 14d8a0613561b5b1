"""A Kafka connection over real loopback TCP with a scripted dispatcher: answers in request
order whatever order handlers finish in, an order-sensitive part that runs before the next
frame is read, no answer for acks=0, file ranges sent by sendfile from their own descriptor,
and bad frames or unknown APIs closing the connection and nothing else."""

from __future__ import annotations

import os
import struct

import trio

from broker.kafka.answer import Answer
from broker.kafka.connection import CloseConnection, Connection

MAX = 1 << 20


def frame(api_key: int, version: int, correlation: int, body: bytes = b"") -> bytes:
    head = struct.pack(">hhih", api_key, version, correlation, -1)
    return struct.pack(">i", len(head) + len(body)) + head + body


async def read_answer(stream) -> tuple[int, bytes]:
    data = b""
    while len(data) < 4:
        chunk = await stream.receive_some(65536)
        assert chunk, "the connection closed"
        data += chunk
    (size,) = struct.unpack(">i", data[:4])
    while len(data) < 4 + size:
        chunk = await stream.receive_some(65536)
        assert chunk, "the connection closed"
        data += chunk
    assert len(data) == 4 + size, "more bytes than one answer"
    return struct.unpack(">i", data[4:8])[0], data[8:]


async def serve(nursery, dispatch) -> int:
    listeners = await trio.open_tcp_listeners(0, host="127.0.0.1")

    async def handle(stream):
        await Connection(
            stream, dispatch, max_request_bytes=MAX, peer="127.0.0.1", listener="KAFKA"
        ).serve()

    await nursery.start(trio.serve_listeners, handle, listeners)
    return listeners[0].socket.getsockname()[1]


async def test_answers_in_request_order_and_ordered_parts_before_the_next_read():
    events = []
    release_first = trio.Event()

    async def dispatch(header, body, conn, started):
        cid = header.correlation_id
        events.append(("start", cid))
        started()  # the order-sensitive part is done
        if cid == 1:
            await release_first.wait()  # the first one waits (acks=all, a long poll)
        events.append(("end", cid))
        if cid == 1:
            pass
        return Answer.of(b"answer-%d" % cid)

    async with trio.open_nursery() as nursery:
        port = await serve(nursery, dispatch)
        stream = await trio.open_tcp_stream("127.0.0.1", port)
        await stream.send_all(frame(3, 1, 1) + frame(3, 1, 2) + frame(3, 1, 3))
        with trio.move_on_after(5):
            while ("end", 3) not in events:
                await trio.sleep(0.01)
        assert events[:2] == [("start", 1), ("start", 2)]  # pipelined: 2 ran while 1 waited
        release_first.set()
        assert [await read_answer(stream) for _ in range(3)] == [
            (1, b"answer-1"),
            (2, b"answer-2"),
            (3, b"answer-3"),
        ]
        nursery.cancel_scope.cancel()


async def test_no_answer_for_acks_0_and_the_next_one_still_comes():
    async def dispatch(header, body, conn, started):
        return None if header.correlation_id == 1 else Answer.of(b"ok")

    async with trio.open_nursery() as nursery:
        port = await serve(nursery, dispatch)
        stream = await trio.open_tcp_stream("127.0.0.1", port)
        await stream.send_all(frame(0, 7, 1) + frame(0, 7, 2))
        assert await read_answer(stream) == (2, b"ok")
        nursery.cancel_scope.cancel()


async def test_a_file_range_is_sent_from_its_own_descriptor(tmp_path):
    path = tmp_path / "00000000000000000000.log"
    path.write_bytes(b"x" * 100 + b"RECORDS" * 50000 + b"y" * 10)
    fd = os.open(path, os.O_RDONLY)
    answer = Answer([b"head"])
    answer.add_file(fd, 100, 7 * 50000)
    os.close(fd)  # the segment closed: its descriptor number may be reused...
    path.unlink()  # ...and deleted
    reuse = os.open(tmp_path, os.O_RDONLY)  # most likely the old number, another file
    try:

        async def dispatch(header, body, conn, started):
            return answer

        async with trio.open_nursery() as nursery:
            port = await serve(nursery, dispatch)
            stream = await trio.open_tcp_stream("127.0.0.1", port)
            await stream.send_all(frame(1, 11, 9))
            assert await read_answer(stream) == (9, b"head" + b"RECORDS" * 50000)
            nursery.cancel_scope.cancel()
    finally:
        os.close(reuse)
    assert answer.closed


async def test_a_bad_frame_or_an_unknown_api_closes_only_that_connection():
    async def dispatch(header, body, conn, started):
        if header.api_key == 99:
            raise CloseConnection("unknown")
        if header.api_key == 98:
            raise RuntimeError("a bug")
        return Answer.of(b"ok")

    async with trio.open_nursery() as nursery:
        port = await serve(nursery, dispatch)
        for bad in (
            struct.pack(">i", MAX + 1),
            struct.pack(">i", -5),
            struct.pack(">i", 12) + b"\x00\x03\x00\x01\x00\x00\x00\x01\x00\x09ab",
            frame(3, 1, 1) + frame(99, 0, 2) + frame(3, 1, 3),
            frame(98, 0, 1),
        ):
            stream = await trio.open_tcp_stream("127.0.0.1", port)
            await stream.send_all(bad)
            received = b""
            with trio.fail_after(5):
                while chunk := await stream.receive_some(65536):
                    received += chunk
            # The answers before the bad request, then the close: never one after it.
            if bad.startswith(frame(3, 1, 1)):
                assert received[8:] == b"ok" and len(received) == 10
            else:
                assert received == b""
        stream = await trio.open_tcp_stream("127.0.0.1", port)
        await stream.send_all(frame(3, 1, 5))
        assert await read_answer(stream) == (5, b"ok")
        nursery.cancel_scope.cancel()


async def test_a_full_queue_stops_reading():
    from broker.kafka import connection

    seen = []
    gate = trio.Event()

    async def dispatch(header, body, conn, started):
        seen.append(header.correlation_id)
        started()
        await gate.wait()
        return Answer.of(b"")

    async with trio.open_nursery() as nursery:
        port = await serve(nursery, dispatch)
        stream = await trio.open_tcp_stream("127.0.0.1", port)
        total = connection.MAX_QUEUED + 10
        await stream.send_all(b"".join(frame(3, 1, i) for i in range(total)))
        await trio.sleep(0.3)
        # One slot more than the queue holds is read and waits to be queued.
        assert len(seen) <= connection.MAX_QUEUED + 1
        gate.set()
        for i in range(total):
            assert (await read_answer(stream))[0] == i
        nursery.cancel_scope.cancel()
