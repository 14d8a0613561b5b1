"""The history checks over one Kafka partition's whole history at once, vectorised with numpy: the
audit shuffles the history (and the replica logs' values) once by partition and hands each
partition's rows to `check_partition` (an applyInArrow function), instead of running a dozen
Spark joins and windows per row. Each check gives the rows, values and messages the Spark SQL
checks gave (tests/chaos/audit/test_history_differential.py compares the two)."""

from __future__ import annotations

import json

import numpy as np

from chaos.audit.segments import arrow_schema

# What the shuffle carries: chunks of rows, one row shape for every kind (unused columns null).
# Scalars: kind, key (the partition, "topic-p"), and for a replica's records its replica and its
# partition's final high watermark; lists, one element per event of the chunk (a whole list null
# where the kind has no such field). Kinds: send (a send's completion: type ok, fail or info),
# read (a polled value at its poll's `pos`), rebalance and reset (a consumer's position
# sessions), commit, log (a replica's records: value null for one that is not a workload value).
SCALAR_FIELDS = [
    ("kind", "string"),
    ("key", "string"),
    ("replica", "int"),
    ("high_watermark", "long"),
]
LIST_FIELDS = [
    ("idx", "long"),
    ("pos", "int"),
    ("process", "string"),
    ("type", "string"),
    ("value", "long"),
    ("offset", "long"),
    ("group", "string"),
    ("assign", "boolean"),
]
VIOLATION_FIELDS = [
    ("check", "string"),
    ("partition", "string"),
    ("offset_lo", "long"),
    ("offset_hi", "long"),
    ("replicas", "array<int>"),
    ("values_json", "string"),
    ("message", "string"),
]


def violation_schema():
    import pyarrow as pa

    return pa.schema(
        [
            (n, pa.list_(pa.int32()) if k == "array<int>" else arrow_schema([(n, k)]).field(0).type)
            for n, k in VIOLATION_FIELDS
        ]
    )


class _Out:
    """Violation rows of one partition, as columns."""

    def __init__(self, partition) -> None:
        self.partition = partition
        self.cols: dict[str, list] = {name: [] for name, _ in VIOLATION_FIELDS}

    def __call__(self, check, lo, hi, values: dict, message, replicas=()) -> None:
        c = self.cols
        c["check"].append(check)
        c["partition"].append(self.partition)
        c["offset_lo"].append(None if lo is None else int(lo))
        c["offset_hi"].append(None if hi is None else int(hi))
        c["replicas"].append([int(r) for r in replicas])
        # as Spark's to_json wrote them: null fields left out
        c["values_json"].append(
            json.dumps({k: v for k, v in values.items() if v is not None}, separators=(",", ":"))
        )
        c["message"].append(message)

    def table(self):
        import pyarrow as pa

        return pa.Table.from_pydict(self.cols, schema=violation_schema())


def _d(v) -> str:
    """An integer as Spark's format_string %d writes it (null as "null")."""
    return "null" if v is None else str(int(v))


def _columns(table) -> dict:
    """The chunk rows as one numpy array per field, an element per event (a scalar repeated over
    its chunk): name -> values (integer nulls as 0) and name + "?" -> whether each is there."""
    import pyarrow as pa
    import pyarrow.compute as pc

    table = table.combine_chunks()
    lists = [n for n, _ in LIST_FIELDS]
    lengths = np.zeros(table.num_rows, np.int64)
    for name in lists:
        lengths = np.maximum(
            lengths,
            pc.fill_null(pc.list_value_length(table[name]), 0).to_numpy(zero_copy_only=False),
        )
    out = {}
    for name in table.column_names:
        col = table.column(name).chunk(0) if table.num_rows else table.column(name)
        if name in lists:
            if col.null_count == 0:
                col = col.flatten()
            else:
                col = pa.concat_arrays(
                    [
                        col[i].values if col[i].is_valid else pa.nulls(n, col.type.value_type)
                        for i, n in enumerate(lengths.tolist())
                    ]
                )
        else:
            col = col.take(pa.array(np.repeat(np.arange(table.num_rows), lengths)))
        out[name + "?"] = np.asarray(pc.is_valid(col).to_numpy(zero_copy_only=False), bool)
        if pa.types.is_integer(col.type):
            col = pc.fill_null(col, 0)
        out[name] = np.asarray(col.to_numpy(zero_copy_only=False))
    return out


def _codes(strings) -> np.ndarray:
    import pandas as pd

    return pd.factorize(strings, use_na_sentinel=False)[0]


def _prev(keys: list[np.ndarray], order: list[np.ndarray]):
    """The sort permutation by (keys, order) and, in that order, whether each row has a row
    before it with the same keys (Spark's lag over a window partitioned by keys)."""
    perm = np.lexsort(tuple(reversed(keys + order)))
    same = np.zeros(len(perm), bool)
    if len(perm) > 1:
        same[1:] = True
        for k in keys:
            ks = k[perm]
            same[1:] &= ks[1:] == ks[:-1]
    return perm, same


def check_partition(table):
    """applyInArrow over one partition's chunk rows (SCALAR_FIELDS, LIST_FIELDS): its violation
    rows (VIOLATION_FIELDS)."""
    c = _columns(table)
    out = _Out(table.column("key")[0].as_py() if table.num_rows else None)
    kind = c["kind"]
    is_send, is_read = kind == "send", kind == "read"
    # the replicas' records below the high watermark; another topic's are not workload values
    is_log = (
        (kind == "log") & (c["offset"] < c["high_watermark"]) & (is_send.any() or is_read.any())
    )
    _commit_backwards(out, c, kind == "commit")
    reads = _sessions(c, is_read, kind == "rebalance", kind == "reset")
    acked = is_send & (c["type"] == "ok") & c["offset?"] & c["value?"]
    valued_reads = is_read & c["value?"]
    valued_log = is_log & c["value?"]
    _nonmonotonic_send(out, c, acked)
    # the offsets known to hold something (values, and log records of other values): ranks
    known = np.unique(
        np.concatenate([c["offset"][acked], c["offset"][valued_reads], c["offset"][is_log]])
    )
    _poll_checks(out, c, reads, known)
    obs = acked | valued_reads | valued_log
    _inconsistent_offsets(out, c, obs, is_send, is_read)
    _duplicates(out, c, obs, is_log)
    _unpolled(out, c, acked, valued_reads, valued_log, is_read, is_log)
    _aborted_reads(out, c, valued_reads, is_send & (c["type"] == "fail") & c["value?"])
    return out.table()


def _who(c, i, is_send, is_read) -> str:
    if is_send[i]:
        return f"send:{c['process'][i]}"
    if is_read[i]:
        return f"poll:{c['process'][i]}"
    return f"log:{c['replica'][i]}"


def _sessions(c, is_read, is_rebalance, is_reset):
    """(row indexes of the reads in (process, idx, pos) order, whether each follows a read of
    its session, whether its process's last reset was an assign): a consumer's position session changes on its assign or
    subscribe and, per partition, on a poll's `rebalanced` (counted before that poll's values);
    a reset's row is in every partition's rows. Jepsen's checker needs these sessions."""
    rows = np.flatnonzero(is_read | is_rebalance | is_reset)
    proc = _codes(c["process"][rows])
    # a reset sorts before anything of its op (it has no pos), a rebalance before the poll's values
    pos = np.where(is_reset[rows], -2, np.where(is_rebalance[rows], -1, c["pos"][rows]))
    perm, same = _prev([proc], [c["idx"][rows], pos])
    rows, proc = rows[perm], proc[perm]
    starts = np.flatnonzero(~same) if len(rows) else np.zeros(0, int)

    def per_process_cumsum(flags):
        total = np.cumsum(flags)
        before = np.repeat(total[starts] - flags[starts], np.diff(np.append(starts, len(rows))))
        return total - before

    resets = per_process_cumsum(is_reset[rows].astype(np.int64))
    rebalances = per_process_cumsum(is_rebalance[rows].astype(np.int64))
    # the assign flag of the process's last reset so far (false before any)
    last = np.where(is_reset[rows], np.arange(len(rows)), -1)
    last = np.maximum.accumulate(last) if len(rows) else last
    first_of_process = (
        np.maximum.accumulate(np.where(~same, np.arange(len(rows)), 0)) if len(rows) else last
    )
    has_reset = last >= first_of_process
    assign = np.zeros(len(rows), bool)
    assign[has_reset] = c["assign"][rows[last[has_reset]]] == True  # noqa: E712 (None is false)
    keep = is_read[rows]
    rows, resets, rebalances, assign = (a[keep] for a in (rows, resets, rebalances, assign))
    # sessions are runs within a process (both counts only rise along it): a read follows one
    # of its session if the row before it is one of its process with the same counts
    follows = np.zeros(len(rows), bool)
    if len(rows) > 1:
        proc = proc[keep]
        follows[1:] = (
            (proc[1:] == proc[:-1])
            & (resets[1:] == resets[:-1])
            & (rebalances[1:] == rebalances[:-1])
        )
    return rows, follows, assign


def _poll_checks(out, c, reads, known) -> None:
    """nonmonotonic-poll (a consumer's next offset in a session not above the last) and
    poll-skip (an assign()ed consumer's step over offsets known to hold values)."""
    rows, same, assign = reads
    offset = c["offset"][rows]
    prev = np.roll(offset, 1)
    back = np.flatnonzero(same & (offset <= prev))
    for i in back:
        r = rows[i]
        out(
            "nonmonotonic-poll",
            prev[i],
            offset[i],
            {"process": c["process"][r]},
            f"process {c['process'][r]} polled offset {offset[i]} after offset {prev[i]}",
        )
    steps = np.flatnonzero(same & assign & (offset > prev + 1))
    if not len(steps):
        return
    i_at = np.searchsorted(known, offset[steps])
    i_prev = np.searchsorted(known, prev[steps])
    found = (
        (i_at < len(known))
        & (known[np.minimum(i_at, len(known) - 1)] == offset[steps])
        & (i_prev < len(known))
        & (known[np.minimum(i_prev, len(known) - 1)] == prev[steps])
    )
    for j in np.flatnonzero(found & (i_at - i_prev > 1)):
        i, r = steps[j], rows[steps[j]]
        skipped = int(i_at[j] - i_prev[j] - 1)
        out(
            "poll-skip",
            prev[i],
            offset[i],
            {"process": c["process"][r], "skipped": skipped},
            f"process {c['process'][r]} polled offset {offset[i]} right after offset {prev[i]}, "
            f"skipping {skipped} offsets known to hold values",
        )


def _nonmonotonic_send(out, c, acked) -> None:
    """One process's acknowledged offsets in a partition must rise (in history order)."""
    rows = np.flatnonzero(acked)
    perm, same = _prev([_codes(c["process"][rows])], [c["idx"][rows]])
    rows = rows[perm]
    offset, value = c["offset"][rows], c["value"][rows]
    prev_o, prev_v = np.roll(offset, 1), np.roll(value, 1)
    for i in np.flatnonzero(same & (offset <= prev_o)):
        p = c["process"][rows[i]]
        out(
            "nonmonotonic-send",
            prev_o[i],
            offset[i],
            {"process": p, "values": [int(prev_v[i]), int(value[i])]},
            f"process {p} sent {prev_v[i]} then {value[i]}, acknowledged at offsets {prev_o[i]} "
            f"then {offset[i]}",
        )


def _commit_backwards(out, c, is_commit) -> None:
    """A group's committed offset for a partition never decreases (in history order)."""
    rows = np.flatnonzero(is_commit & c["offset?"])
    if not len(rows):
        return
    perm, same = _prev([_codes(c["group"][rows])], [c["idx"][rows]])
    rows = rows[perm]
    offset = c["offset"][rows]
    prev = np.roll(offset, 1)
    for i in np.flatnonzero(same & (offset < prev)):
        r, q = rows[i], rows[i - 1]
        g, p, pp = c["group"][r], c["process"][r], c["process"][q]
        out(
            "commit-backwards",
            offset[i],
            prev[i],
            {"group": g, "process": p, "previous_process": pp},
            f"group '{g}' committed offset {offset[i]} (process {p}) after {prev[i]} "
            f"(process {pp})",
        )


def _several(mask, key, other):
    """(key, its rows) for each key that the rows of `mask` give more than one `other`."""
    rows = np.flatnonzero(mask)
    rows = rows[np.lexsort((other[rows], key[rows]))]
    k, o = key[rows], other[rows]
    bad = np.unique(k[1:][(k[1:] == k[:-1]) & (o[1:] != o[:-1])])
    for b, lo, hi in zip(bad, np.searchsorted(k, bad, "left"), np.searchsorted(k, bad, "right")):
        yield b, rows[lo:hi]


def _inconsistent_offsets(out, c, obs, is_send, is_read) -> None:
    """One offset, several values (among acknowledged sends, polls and the log's values)."""
    for o, at in _several(obs, c["offset"], c["value"]):
        seen: dict[int, set] = {}
        reps = set()
        for r in at:
            seen.setdefault(int(c["value"][r]), set()).add(_who(c, r, is_send, is_read))
            if not is_send[r] and not is_read[r]:
                reps.add(int(c["replica"][r]))
        values = [{"value": v, "seen_by": sorted(seen[v])} for v in sorted(seen)]
        text = "; ".join(f"{x['value']} ({', '.join(x['seen_by'])})" for x in values)
        out(
            "inconsistent-offsets",
            o,
            o,
            {"values": values},
            f"offset {o} holds {len(values)} values: {text}",
            sorted(reps),
        )


def _duplicates(out, c, obs, is_log) -> None:
    """One value at several offsets (among acknowledged sends, polls and the log's values)."""
    for v, at in _several(obs, c["value"], c["offset"]):
        offsets = sorted({int(o) for o in c["offset"][at]})
        reps = sorted({int(c["replica"][r]) for r in at if is_log[r]})
        out(
            "duplicate",
            offsets[0],
            offsets[-1],
            {"value": int(v), "offsets": offsets},
            f"value {v} appears at offsets {', '.join(map(str, offsets))}",
            reps,
        )


def _unpolled(out, c, acked, valued_reads, valued_log, is_read, is_log) -> None:
    """lost-write and unseen: acknowledged sends whose value no poll returned. Lost if the log
    does not hold the value either, though polls or the log reach past its offset."""
    rows = np.flatnonzero(acked & ~np.isin(c["value"], c["value"][valued_reads]))
    if not len(rows):
        return
    max_polled = int(c["offset"][is_read].max()) if is_read.any() else None
    log_top = int(c["offset"][is_log].max()) if is_log.any() else None
    reach = max((x for x in (max_polled, log_top) if x is not None), default=None)
    in_log = np.isin(c["value"][rows], c["value"][valued_log])
    for r, logged in zip(rows, in_log):
        v, o, p = int(c["value"][r]), int(c["offset"][r]), c["process"][r]
        if not logged and reach is not None and o <= reach:
            out(
                "lost-write",
                o,
                o,
                {"value": v, "process": p, "max_polled": max_polled, "log_top": log_top},
                f"value {v} acknowledged at offset {o} (process {p}) is in no poll and not in "
                f"the log, though polls or the log reach offset {_d(reach)}",
            )
        else:
            out(
                "unseen",
                o,
                o,
                {"value": v, "process": p, "in_log": bool(logged)},
                f"value {v} acknowledged at offset {o} (process {p}) was never polled"
                + (" (it is in the log)" if logged else ""),
            )


def _aborted_reads(out, c, valued_reads, failed) -> None:
    """G1a: a poll saw a value whose send failed (each such poll with each failed send)."""
    polls = np.flatnonzero(valued_reads & np.isin(c["value"], c["value"][failed]))
    if not len(polls):
        return
    writers = np.flatnonzero(failed)
    for r in polls:
        v = c["value"][r]
        for w in writers[c["value"][writers] == v]:
            reader, writer = c["process"][r], c["process"][w]
            out(
                "aborted-read",
                c["offset"][r],
                c["offset"][r],
                {"value": int(v), "reader": reader, "writer": writer},
                f"process {reader} polled value {v} at offset {c['offset'][r]}, but its send "
                f"(process {writer}) failed",
            )
