"""Runs on Spark's Python workers: reads one segment file (and its offset index) with the project's
batch readers into Arrow rows, one per batch with its integrity verdict, or one per record."""

from __future__ import annotations

import hashlib
import itertools
import os

from clients.record.batch_header import HEADER_SIZE, LOG_OVERHEAD, CorruptBatchError, validate_batch
from clients.record.codec import decode_batch
from clients.record.compression import MAX_DECOMPRESSED_SIZE
from clients.record.control import decode_marker
from clients.record.record_scan import walk_batch
from kraft.log.offset_index import ENTRY as INDEX_ENTRY

CHUNK = 16 * 1024 * 1024  # bytes read per pread: the memory a task holds per file
ARROW_ROWS = 65536  # rows per Arrow batch handed back to Spark
METADATA_TOPIC = "__cluster_metadata"

# The files each Spark task gets: one row per segment file (inputs.SegmentFile).
FILE_FIELDS = [
    ("replica", "int"),
    ("topic", "string"),
    ("partition", "int"),
    ("segment", "long"),
    ("path", "string"),
    ("index_path", "string"),
    ("size", "long"),
    ("is_last", "boolean"),
]
# One row per batch, or per problem: problem_kind is null for a valid batch, else "corrupt"
# (unreadable from here to the end of the file), "index" (a bad .index entry), "records" (an
# intact batch whose records do not walk: a count that lies, bad framing, a bad or bomb
# compressed section; a row of its own, after the batch's) or "torn-tail"
# (an incomplete last batch of the active segment: what a kill -9 mid-write leaves; the log
# engine cuts it at the next start, so it is reported as a notice, not a violation).
BATCH_FIELDS = [
    ("replica", "int"),
    ("topic", "string"),
    ("partition", "int"),
    ("segment", "long"),
    ("position", "long"),
    ("base_offset", "long"),
    ("last_offset", "long"),
    ("epoch", "int"),
    ("size", "int"),
    ("attributes", "int"),
    ("producer_id", "long"),
    ("producer_epoch", "int"),
    ("base_sequence", "int"),
    ("records_count", "int"),
    ("digest", "string"),
    ("problem", "string"),
    ("problem_kind", "string"),
]
# One row per record of a valid, non-control data batch (value: the workload's int, parsed from
# its decimal ASCII, null for anything else) or of any metadata-log batch (payload: its bytes).
RECORD_FIELDS = [
    ("replica", "int"),
    ("topic", "string"),
    ("partition", "int"),
    ("offset", "long"),
    ("epoch", "int"),
    ("control", "boolean"),
    ("value", "long"),
    ("payload", "binary"),
]


def ddl(fields) -> str:
    """Spark's schema string for a field list."""
    return ", ".join(f"`{name}` {kind}" for name, kind in fields)


def arrow_schema(fields):
    import pyarrow as pa

    kinds = {
        "int": pa.int32(),
        "long": pa.int64(),
        "string": pa.string(),
        "boolean": pa.bool_(),
        "binary": pa.binary(),
    }
    return pa.schema([(name, kinds[kind]) for name, kind in fields])


def list_fields(fields):
    """fields as Spark array columns."""
    return [(name, f"array<{kind}>") for name, kind in fields]


def chunk_batch(keys: list[tuple], key_fields, list_fields_, chunks: list[dict]):
    """One Arrow batch, a row per chunk: the scalar key columns (key_fields, from `keys`) and a
    list per field of list_fields_ (each chunk's {name: values}; a name it lacks is a null list:
    Spark converts, caches and shuffles a null list for free, a list of nulls per element)."""
    import pyarrow as pa

    lengths = [len(next(iter(c.values()))) for c in chunks]
    offsets = pa.array([0] + list(itertools.accumulate(lengths)), pa.int32())
    scalar = arrow_schema(key_fields)
    elems = arrow_schema(list_fields_)
    arrays = [pa.array([k[i] for k in keys], scalar.field(i).type) for i in range(len(key_fields))]
    for f in elems:
        lacks = [f.name not in c for c in chunks]
        if all(lacks):
            arrays.append(pa.nulls(len(chunks), pa.list_(f.type)))
            continue
        flat = pa.concat_arrays(
            [
                pa.array(c[f.name], f.type) if f.name in c else pa.nulls(n, f.type)
                for c, n in zip(chunks, lengths)
            ]
        )
        arrays.append(
            pa.ListArray.from_arrays(offsets, flat, mask=pa.array(lacks) if any(lacks) else None)
        )
    names = [n for n, _ in key_fields] + [f.name for f in elems]
    return pa.RecordBatch.from_arrays(arrays, names=names)


def _batches(fd: int, size: int):
    """Yield (position, header, view) per whole valid batch, then at most one
    (position, None, (kind, message)) for the first unreadable byte range."""
    pos, chunk, chunk_pos = 0, b"", 0
    while pos < size:
        rel = pos - chunk_pos
        if rel + LOG_OVERHEAD > len(chunk):
            chunk, chunk_pos, rel = os.pread(fd, min(CHUNK, size - pos), pos), pos, 0
        length = (
            int.from_bytes(chunk[rel + 8 : rel + 12], "big", signed=True)
            if rel + LOG_OVERHEAD <= len(chunk)
            else -1
        )
        total = LOG_OVERHEAD + length
        if size - pos < HEADER_SIZE or (
            length >= HEADER_SIZE - LOG_OVERHEAD and pos + total > size
        ):
            yield (
                pos,
                None,
                (
                    "incomplete",
                    f"incomplete batch at position {pos}: "
                    f"{size - pos} bytes left in a {size}-byte file",
                ),
            )
            return
        if length >= HEADER_SIZE - LOG_OVERHEAD and rel + total > len(chunk):
            chunk, chunk_pos, rel = os.pread(fd, min(max(CHUNK, total), size - pos), pos), pos, 0
        try:
            header = validate_batch(chunk, rel)
        except CorruptBatchError as exc:
            # The reader names the position within the chunk; say the file's.
            yield pos, None, ("corrupt", str(exc).replace(f"position {rel}", f"position {pos}"))
            return
        yield pos, header, memoryview(chunk)[rel : rel + header.size]
        pos += header.size


def _records_problem(view, header, metadata: bool) -> str | None:
    """What is wrong with an intact batch's records, walked as the broker's validator walks a
    produce (inflating to a bounded size), or None. Any log may have been compacted (thinned
    batches); emptied batches the cleaner keeps hold no records by design."""
    if header.records_count == 0:
        return None
    try:
        walk_batch(view, 0, header, MAX_DECOMPRESSED_SIZE, compacted=True)
        if header.is_control and not metadata:
            return _marker_problem(view, header)
    except CorruptBatchError as exc:
        return str(exc)
    return None


def _marker_problem(view, header) -> str | None:
    """A data partition's control batch must be one end-transaction marker of a transactional
    producer, as the coordinator writes it. (The metadata log's control records are Raft's own,
    and its batches carry no partition leader epoch: they are left alone here.)"""
    if not header.is_transactional or header.producer_id < 0:
        return (
            f"control batch at offset {header.base_offset} is not a transaction marker "
            f"(transactional flag {header.is_transactional}, producer id {header.producer_id})"
        )
    _, records = decode_batch(bytes(view), verify_crc=False)
    if len(records) != 1:
        return f"control batch at offset {header.base_offset} holds {len(records)} records, not one"
    decode_marker(records[0].key, records[0].value)  # raises CorruptBatchError, named
    return None


def _index_problems(seg: dict, starts: dict[int, int], end: int) -> list[tuple[int, int, str]]:
    """(offset, position, problem) for each .index entry that is not (last offset, start) of a
    batch; Kafka's rule (kraft/log/segment.py _track): an entry keys a batch's last offset."""
    try:
        with open(seg["index_path"], "rb") as f:
            data = f.read()
    except FileNotFoundError:
        return []  # the log engine rebuilds a missing index
    base, out = seg["segment"], []
    if len(data) % INDEX_ENTRY.size:
        out.append((base, 0, f"index size {len(data)} is not a multiple of {INDEX_ENTRY.size}"))
        data = data[: len(data) - len(data) % INDEX_ENTRY.size]
    last = None
    for relative, position in INDEX_ENTRY.iter_unpack(data):
        offset = base + relative
        if position >= end:
            # Past what is readable: a torn or corrupt tail already reports that region.
            continue
        if position not in starts:
            out.append(
                (offset, position, f"index entry ({offset}, {position}) points inside a batch")
            )
        elif starts[position] != offset:
            out.append(
                (
                    offset,
                    position,
                    f"index entry ({offset}, {position}) is at a batch whose "
                    f"last offset is {starts[position]}",
                )
            )
        elif last is not None and offset <= last:
            out.append(
                (offset, position, f"index entry ({offset}, {position}) does not follow {last}")
            )
        last = offset
    return out


def scan_batches(seg: dict, memo: dict | None = None):
    """Batch rows (tuples in BATCH_FIELDS order) for one segment file described by `seg`. memo, a
    dict a task keeps across its files: a byte-identical copy of the file before it (a replica's
    copy of the same segment) gives the rows read from that one, its own index checked anew."""
    same = (seg["topic"] == METADATA_TOPIC, seg["is_last"], file_digest(seg["path"]))
    if memo is not None and memo.get("file") == same:
        rows, starts, end = memo["rows"]
    else:
        rows, starts, end = _log_rows(seg)
        if memo is not None:
            memo.update(file=same, rows=(rows, starts, end))
    key = (seg["replica"], seg["topic"], seg["partition"], seg["segment"])
    for row in rows:
        yield key + row
    for offset, position, problem in _index_problems(seg, starts, end):
        yield key + (
            position,
            offset,
            offset,
            None,
            None,
            None,
            None,
            None,
            None,
            None,
            None,
            f"{seg['index_path']}: {problem}",
            "index",
        )


def _log_rows(seg: dict) -> tuple[list[tuple], dict[int, int], int]:
    """(batch rows less their key, batch start -> last offset, end of the readable batches) of
    a segment file: what its bytes, topic kind and being the active segment decide."""
    rows, starts, end = [], {}, 0
    fd = os.open(seg["path"], os.O_RDONLY)
    try:
        size = os.fstat(fd).st_size
        for pos, h, view in _batches(fd, size):
            if h is None:
                kind, message = view
                if kind == "incomplete":
                    kind = "torn-tail" if seg["is_last"] else "corrupt"
                rows.append(
                    (
                        pos,
                        None,
                        None,
                        None,
                        size - pos,
                        None,
                        None,
                        None,
                        None,
                        None,
                        None,
                        message,
                        kind,
                    )
                )
                break
            starts[pos] = h.last_offset
            end = pos + h.size
            digest = hashlib.blake2b(view, digest_size=16).hexdigest()
            rows.append(
                (
                    pos,
                    h.base_offset,
                    h.last_offset,
                    h.partition_leader_epoch,
                    h.size,
                    h.attributes,
                    h.producer_id,
                    h.producer_epoch,
                    h.base_sequence,
                    h.records_count,
                    digest,
                    None,
                    None,
                )
            )
            problem = _records_problem(view, h, seg["topic"] == METADATA_TOPIC)
            if problem:
                rows.append(
                    (
                        pos,
                        h.base_offset,
                        h.last_offset,
                        None,
                        None,
                        None,
                        None,
                        None,
                        None,
                        None,
                        None,
                        f"batch at position {pos}: {problem}",
                        "records",
                    )
                )
    finally:
        os.close(fd)
    return rows, starts, end


def _workload_value(value: bytes | None) -> int | None:
    if not value or len(value) > 19:
        return None
    try:
        return int(value)
    except ValueError:
        return None


def scan_records(seg: dict):
    """Record rows (tuples in RECORD_FIELDS order) of the valid batches of one segment file."""
    metadata = seg["topic"] == METADATA_TOPIC
    key = (seg["replica"], seg["topic"], seg["partition"])
    fd = os.open(seg["path"], os.O_RDONLY)
    try:
        for _, h, view in _batches(fd, os.fstat(fd).st_size):
            if h is None:
                break
            control = h.is_control
            if control and not metadata:
                continue  # transaction markers: consumers never see them
            try:  # _batches checked the CRC; a bad batch is scan_batches' to report
                _, records = decode_batch(bytes(view), verify_crc=False)
            except CorruptBatchError:
                continue
            epoch = h.partition_leader_epoch
            for r in records:
                if metadata:
                    yield key + (r.offset, epoch, control, None, r.value)
                else:
                    yield key + (r.offset, epoch, control, _workload_value(r.value), None)
    finally:
        os.close(fd)


def _to_arrow(scan, fields, memo: bool = False):
    """A mapInArrow function: file rows in, one Arrow batch per ARROW_ROWS output rows out.
    memo: scan takes a dict the task keeps across its files."""
    import pyarrow as pa

    schema = arrow_schema(fields)
    names = [name for name, _ in fields]

    def run(batches):
        rows = []
        kept = {}
        for batch in batches:
            for seg in batch.to_pylist():
                for row in scan(seg, kept) if memo else scan(seg):
                    rows.append(row)
                    if len(rows) >= ARROW_ROWS:
                        yield pa.RecordBatch.from_arrays(
                            [
                                pa.array(col, type=schema.field(n).type)
                                for n, col in zip(names, zip(*rows))
                            ],
                            schema=schema,
                        )
                        rows = []
        if rows:
            yield pa.RecordBatch.from_arrays(
                [pa.array(col, type=schema.field(n).type) for n, col in zip(names, zip(*rows))],
                schema=schema,
            )

    return run


# The data topics' records as the history checks read them: a row per segment file, key
# "topic-p", the file's valid records' offsets and values (null: not a workload value) as lists.
LOG_KEY_FIELDS = [
    ("kind", "string"),
    ("key", "string"),
    ("replica", "int"),
    ("topic", "string"),
    ("partition", "int"),
]
LOG_LIST_FIELDS = [("offset", "long"), ("value", "long")]


def log_chunks(batches):
    """mapInArrow over data-topic segment file rows: one LOG_KEY_FIELDS + lists row per file. A
    file byte-identical to the one before it (a replica's copy of the same segment: the audit
    sends them to a task together) is decoded once."""
    keys, chunks = [], []
    last = None
    for batch in batches:
        for seg in batch.to_pylist():
            digest = file_digest(seg["path"])
            if last is None or last[0] != (seg["topic"], digest):
                offsets, values = [], []
                for row in scan_records(seg):
                    offsets.append(row[3])
                    values.append(row[6])
                last = ((seg["topic"], digest), {"offset": offsets, "value": values})
            keys.append(
                (
                    "log",
                    f"{seg['topic']}-{seg['partition']}",
                    seg["replica"],
                    seg["topic"],
                    seg["partition"],
                )
            )
            chunks.append(last[1])
            if sum(len(c["offset"]) for c in chunks) >= ARROW_ROWS:
                yield chunk_batch(keys, LOG_KEY_FIELDS, LOG_LIST_FIELDS, chunks)
                keys, chunks = [], []
    if chunks:
        yield chunk_batch(keys, LOG_KEY_FIELDS, LOG_LIST_FIELDS, chunks)


def file_digest(path: str) -> bytes:
    """A file's content hash (BLAKE2b, 16 bytes): far cheaper than decoding its records."""
    h = hashlib.blake2b(digest_size=16)
    with open(path, "rb") as f:
        while block := f.read(CHUNK):
            h.update(block)
    return h.digest()


batch_rows = _to_arrow(scan_batches, BATCH_FIELDS, memo=True)
record_rows = _to_arrow(scan_records, RECORD_FIELDS)
