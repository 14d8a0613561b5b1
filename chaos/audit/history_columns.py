"""A history byte range parsed by pyarrow's JSON reader (C++) straight into the scan's event
columns, six to seven times cheaper than json.loads and Op.from_json per line. The lines are read
in groups by their f, so that each group's "value" has one JSON type (an int for sends, an object
for polls and commits) and the reader can hold it in a column.

Only for ranges it reads exactly as the per-line path would: `events` raises Unfit for anything it
does not recognise or that Op.from_json would refuse (a line that is not one JSON object, a type
the reader cannot hold, a missing field, a bad partition name), and the caller then parses that
range line by line, which reports the first bad line as before. So the fast path never decides a
verdict or an error on its own."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.json as pj

from chaos.history import FUNCTIONS, TYPES

# A partition name as chaos.history.partition_name accepts a string: "topic-p", p ASCII digits
# (it also takes other Unicode digits: those ranges go the per-line way).
PARTITION_NAME = r"-[0-9]+$"
# Top-level fields a line may give as null; a null anywhere else in a poll's or commit's line is
# inside its value, where from_json refuses it (and the reader could not tell it from absent).
NULLABLE = ("value", "partition", "offset", "group", "rebalanced")
_COMMON = [
    ("type", pa.string()),
    ("f", pa.string()),
    ("time", pa.int64()),
    ("partition", pa.string()),
    ("offset", pa.int64()),
    ("group", pa.string()),
    ("rebalanced", pa.list_(pa.string())),
]
# "process" (an int or a string) and, except for sends, "value" are left to the reader to infer.
_SCHEMAS = {
    f: pa.schema(_COMMON + ([("value", pa.int64())] if f == "send" else [])) for f in FUNCTIONS
}


class Unfit(Exception):
    """This range is not one the columnar path reads exactly: parse it line by line."""


def _require(ok, why: str) -> None:
    if not ok:
        raise Unfit(why)


def _np(array) -> np.ndarray:
    return np.asarray(array.to_numpy(zero_copy_only=False))


def _lines(buf: bytes):
    """(the lines as a string array, each with its newline; their start offsets in buf). buf is
    whole lines, the last ending in a newline."""
    a = np.frombuffer(buf, np.uint8)
    ends = np.flatnonzero(a == 0x0A)
    _require(len(ends) and ends[-1] == len(buf) - 1, "not whole lines")
    _require(len(buf) < 2**31, "range too large for 32-bit offsets")
    starts = np.concatenate(([0], ends[:-1] + 1))
    # one JSON object a line, no blank lines or padding: what the chaos writer writes
    _require(
        (a[starts] == ord("{")).all() and (a[ends - 1] == ord("}")).all(),
        "a line that is not a bare JSON object",
    )
    offsets = np.append(starts, len(buf)).astype(np.int32)
    lines = pa.StringArray.from_buffers(len(starts), pa.py_buffer(offsets), pa.py_buffer(buf))
    try:
        lines.validate(full=True)  # UTF-8, which json.loads would refuse otherwise
    except pa.ArrowInvalid as exc:
        raise Unfit(str(exc)) from None
    return lines, starts


def _read(lines, f: str):
    """The lines of one f as a table, read in one block so the types are inferred over all of
    them (a reader block of null values alone cannot later become an object)."""
    offsets = np.frombuffer(lines.buffers()[1], np.int32)[
        lines.offset : lines.offset + len(lines) + 1
    ]
    data = lines.buffers()[2][int(offsets[0]) : int(offsets[-1])]
    try:
        table = pj.read_json(
            pa.BufferReader(data),
            read_options=pj.ReadOptions(use_threads=False, block_size=len(data) + 1),
            parse_options=pj.ParseOptions(
                explicit_schema=_SCHEMAS[f], unexpected_field_behavior="infer"
            ),
        )
        # pyarrow 26 drops a list's nulls that come before its element type is known
        # ([[null, 2]]), leaving offsets past the values: full validation catches that
        table.validate(full=True)
    except (pa.ArrowException, ValueError) as exc:
        raise Unfit(f"{f}: {exc}") from None
    # several objects on one line would read as more rows than lines
    _require(table.num_rows == len(lines), f"{f}: not one object a line")
    return table.combine_chunks()


def _names_valid(strings) -> bool:
    return (
        strings.null_count == 0
        and pc.all(pc.match_substring_regex(strings, PARTITION_NAME)).as_py() is not False
    )


def _common(table, f: str):
    """The fields every op has, checked as from_json checks them: (process as strings, type)."""
    for name in ("process", "type", "time"):
        _require(name in table.column_names and table[name].null_count == 0, f"{name} missing")
    process = table["process"]
    _require(
        pa.types.is_string(process.type) or pa.types.is_int64(process.type),
        f"process of type {process.type}",
    )
    _require(pc.all(pc.equal(table["f"], f)).as_py(), "f differs from its line group")
    _require(pc.all(pc.is_in(table["type"], pa.array(TYPES))).as_py(), "a type not in TYPES")
    part = table["partition"]
    _require(_names_valid(part.drop_null()), "a bad partition name")
    _require(f != "send" or part.null_count == 0, "a send without a partition")
    rebalanced = (
        table["rebalanced"].chunk(0) if table.num_rows else pa.array([], pa.list_(pa.string()))
    )
    _require(_names_valid(rebalanced.flatten()), "a bad rebalanced name")
    return pc.cast(process, pa.string()), _np(table["type"])


def _value_children(table):
    """A poll's or commit's value object as (partition name, child array) pairs; the object's
    fields are the struct's, null in the rows that lack them."""
    value = table["value"] if "value" in table.column_names else None
    if value is None or pa.types.is_null(value.type):
        return []
    _require(pa.types.is_struct(value.type), f"value of type {value.type}")
    children = value.chunk(0).flatten()  # a null value nulls its children too
    names = [field.name for field in value.type]
    _require(_names_valid(pa.array(names, pa.string())), "a bad partition name in a value")
    return list(zip(names, children))


def _poll_reads(table, ok, idx, process, out) -> None:
    """Each ok poll's values: a read row per (partition, offset, value), `pos` counting a poll's
    values in the order the reader's fields give (a poll's values keep their order within a
    partition, which is all the checks read pos for)."""
    base = np.zeros(table.num_rows, np.int64)
    for name, child in _value_children(table):
        if pa.types.is_list(child.type) and pa.types.is_null(child.type.value_type):
            _require(pc.max(pc.list_value_length(child)).as_py() in (None, 0), "a null pair")
            continue
        _require(
            pa.types.is_list(child.type)
            and pa.types.is_list(child.type.value_type)
            and pa.types.is_int64(child.type.value_type.value_type),
            f"poll values of type {child.type}",
        )
        pairs = child.flatten()
        _require(
            pairs.null_count == 0
            and pc.all(pc.equal(pc.list_value_length(pairs), 2)).as_py() is not False,
            "a poll value that is not an [offset, value] pair",
        )
        flat = pairs.flatten()
        offsets, values = (
            flat.take(np.arange(0, len(flat), 2)),
            flat.take(np.arange(1, len(flat), 2)),
        )
        _require(offsets.null_count == 0, "a polled offset that is null")
        lens = _np(pc.fill_null(pc.list_value_length(child), 0)).astype(np.int64)
        row = np.repeat(np.arange(table.num_rows), lens)
        first = np.repeat(np.cumsum(lens) - lens, lens)
        pos = np.arange(len(row)) - first + base[row]
        base += lens
        keep = ok[row]
        out.add(
            "read",
            name,
            idx[row][keep],
            pos=pa.array(pos[keep], pa.int32()),
            process=process.take(row[keep]),
            offset=offsets.filter(keep),
            value=values.filter(keep),
        )


def _rebalances(table, ok, idx, process, out) -> None:
    col = table["rebalanced"].chunk(0)
    rows = _np(pc.list_parent_indices(col)).astype(np.int64)
    keep = ok[rows]
    out.add(
        "rebalance", col.flatten().filter(keep), idx[rows][keep], process=process.take(rows[keep])
    )


def _commits(table, ok, idx, process, out) -> None:
    group = pc.fill_null(table["group"].chunk(0), "")
    for name, child in _value_children(table):
        _require(pa.types.is_int64(child.type), f"commit offsets of type {child.type}")
        keep = ok & _np(child.is_valid())
        out.add(
            "commit",
            name,
            idx[keep],
            process=process.filter(keep),
            group=group.filter(keep),
            offset=child.filter(keep),
        )


def _nulls_inside_values(lines) -> bool:
    """Whether a line has a null that is not one of its top-level NULLABLE fields: inside a poll's
    or commit's value, from_json refuses it, and the reader would read it as absent."""
    total = _np(pc.count_substring(lines, '":null'))
    some = total > 0
    if not some.any():
        return False
    few = lines.filter(pa.array(some))  # short lines mostly: invokes with no value
    known = sum(_np(pc.count_substring(few, f'"{k}":null')) for k in NULLABLE)
    return bool((total[some] > known).any())


def _groups(lines, starts: np.ndarray, buf: bytes) -> dict[str, np.ndarray]:
    """Each line's f, told by the two bytes after its first '"f":"' (one short scan a line, not
    one a function); reading the group then checks each line's whole f, so a nested or unusual
    "f" only sends the range the per-line way."""
    at = _np(pc.find_substring(lines, '"f":"'))
    _require((at >= 0).all(), 'a line without "f":"')
    a = np.frombuffer(buf, np.uint8)
    p = starts + at + 5  # within the line: it ends '}\n' after the match
    two = a[p].astype(np.uint16) << 8 | a[p + 1]
    groups = {f: two == (ord(f[0]) << 8 | ord(f[1])) for f in FUNCTIONS}
    _require(sum(m.sum() for m in groups.values()) == len(starts), "an f of no group")
    return groups


def events(buf: bytes, base: int, out) -> None:
    """Adds the events of buf's lines (whole lines of the history, buf[0] at file offset base)
    to `out` (an Events); raises Unfit, having added nothing, where the per-line path must read
    them."""
    lines, starts = _lines(buf)
    pending = Events()
    for f, mask in _groups(lines, starts, buf).items():
        if not mask.any():
            continue
        sub = lines.filter(pa.array(mask))
        if f in ("poll", "commit"):
            _require(not _nulls_inside_values(sub), "a null inside a value")
        table = _read(sub, f)
        process, types = _common(table, f)
        idx = base + starts[mask].astype(np.int64)
        ok = types == "ok"
        pending.add(
            "op",
            process,
            idx,
            process=process,
            type=table["type"],
            f=table["f"],
            time=table["time"],
        )
        if f == "send":
            done = types != "invoke"
            pending.add(
                "send",
                table["partition"].filter(done),
                idx[done],
                process=process.filter(done),
                type=table["type"].filter(done),
                value=table["value"].filter(done),
                offset=table["offset"].filter(done),
            )
        elif f == "poll":
            _poll_reads(table, ok, idx, process, pending)
            _rebalances(table, ok, idx, process, pending)
        elif f == "commit":
            _commits(table, ok, idx, process, pending)
        else:
            n = int(ok.sum())
            pending.add(
                "reset",
                pa.nulls(n, pa.string()),
                idx[ok],
                process=process.filter(ok),
                assign=pa.array(np.full(n, f == "assign")),
            )
    out.merge(pending)


class Events:
    """Event columns per kind, gathered over ranges: kind -> (keys, idx, {field: values})."""

    def __init__(self) -> None:
        self.parts: dict[str, list] = {}
        self.count = 0

    def add(self, kind: str, key, idx: np.ndarray, **fields) -> None:
        if isinstance(key, str):
            key = pa.array(np.full(len(idx), key, dtype=object), pa.string())
        if len(idx):
            self.parts.setdefault(kind, []).append((key, idx, fields))
            self.count += len(idx)

    def merge(self, other: Events) -> None:
        for kind, parts in other.parts.items():
            self.parts.setdefault(kind, []).extend(parts)
        self.count += other.count
