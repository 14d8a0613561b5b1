"""Fetch 4-12 for consumers: the Fetch handler's long poll and reads, answered by hand with each
partition's records left as a range of its segment file, sent by sendfile (zero copy). No
fetch sessions: the answer's session id is 0 and it lists every partition asked for."""

from __future__ import annotations

from broker.handlers import fetch as f
from broker.kafka.answer import Answer
from broker.kafka.wire import I16, I32, I64, NO_TAGS, array_length, bytes_length, string
from clients.errors import ErrorCode
from kraft.log.file_slice import FileSlice

API_KEY = 1
ORDERED = False


def _ms(value) -> int:
    return int(value.total_seconds() * 1000) if hasattr(value, "total_seconds") else int(value)


def to_neutral(request) -> f.FetchRequest:
    # A follower replicates over gRPC, with its node identity checked: here every fetch is a
    # consumer's, whatever replica_id it claims.
    return f.FetchRequest(
        [
            f.FetchTopic(
                t.topic,
                [
                    f.FetchPartition(
                        partition=p.partition,
                        fetch_offset=p.fetch_offset,
                        partition_max_bytes=p.partition_max_bytes,
                        current_leader_epoch=getattr(p, "current_leader_epoch", -1),
                    )
                    for p in t.partitions
                ],
            )
            for t in request.topics
        ],
        replica_id=-1,
        replica_epoch=-1,
        max_wait_ms=_ms(request.max_wait),
        min_bytes=request.min_bytes,
        max_bytes=getattr(request, "max_bytes", 0),
        isolation_level=getattr(request, "isolation_level", 0),
    )


async def handle(ctx, request, started):
    version = ctx.version
    if getattr(request, "session_id", 0) != 0:
        # We never hand out a session, so an incremental fetch names one we do not have.
        return Answer.of(encode_error(version, ErrorCode.FETCH_SESSION_ID_NOT_FOUND))
    return await ctx.backend.fetch(to_neutral(request), lambda r: encode(version, r), ctx.who)


def encode_error(version: int, code: int) -> bytes:
    """A Fetch answer with only a top-level error (v7+; older ones have no such field, so
    they get an empty answer)."""
    out = [I32.pack(0)]
    if version >= 7:
        out.append(I16.pack(code) + I32.pack(0))
    out.append(array_length(0, version >= 12))
    if version >= 12:
        out.append(NO_TAGS)
    return b"".join(out)


def encode(version: int, response: f.FetchResponse) -> Answer:
    """The answer of `version`. Runs inside the handler's render, right after the read: each
    FileSlice's descriptor is duplicated now, so its range stays the bytes read until the
    writer sends it, whatever happens to the segment meanwhile."""
    if response.error_code:
        return Answer.of(encode_error(version, response.error_code))
    flexible = version >= 12
    answer = Answer()
    pending = [I32.pack(0)]  # throttle_time_ms
    if version >= 7:
        pending.append(I16.pack(ErrorCode.NONE) + I32.pack(0))  # error_code, session_id 0
    pending.append(array_length(len(response.topics), flexible))
    try:
        for t in response.topics:
            pending.append(string(t.topic, flexible))
            pending.append(array_length(len(t.partitions), flexible))
            for p in t.partitions:
                pending.append(
                    I32.pack(p.partition)
                    + I16.pack(p.error_code)
                    + I64.pack(p.high_watermark)
                    + I64.pack(p.last_stable_offset)
                )
                if version >= 5:
                    pending.append(I64.pack(p.log_start_offset))
                aborted = p.aborted_transactions
                # null when there are none, as Kafka sends it to read_uncommitted consumers
                pending.append(array_length(len(aborted) if aborted else None, flexible))
                for txn in aborted:
                    pending.append(I64.pack(txn.producer_id) + I64.pack(txn.first_offset))
                    if flexible:
                        pending.append(NO_TAGS)
                if version >= 11:
                    pending.append(I32.pack(-1))  # preferred_read_replica
                records = p.records
                size = len(records)
                pending.append(bytes_length(size, flexible))
                if size:
                    if isinstance(records, FileSlice):
                        answer.pieces.append(b"".join(pending))
                        pending = []
                        try:
                            answer.add_file(records.fd, records.position, size)
                        except OSError:
                            # No descriptor left to duplicate (EMFILE): copy the bytes now.
                            # An error reading them is the log's, as the handler expects.
                            answer.pieces.append(records.read())
                    else:
                        pending.append(bytes(records))
                if flexible:
                    pending.append(NO_TAGS)
            if flexible:
                pending.append(NO_TAGS)
        if flexible:
            pending.append(NO_TAGS)
        if pending:
            answer.pieces.append(b"".join(pending))
    except BaseException:
        answer.close()
        raise
    return answer
