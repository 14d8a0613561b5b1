"""Kafka's crash-safe swap of a cleaned segment into a log (`.cleaned` -> `.swap` -> live name), and
its completion when a log dir is opened after a crash interrupted it.

The protocol, one cleaned segment at a time:
1. the cleaner writes `<base>.log.cleaned` (+ `.index.cleaned`, `.timeindex.cleaned`, and
   `.txnindex.cleaned` when it keeps aborted transactions or the segment at its base offset has
   some, then empty) and fsyncs it;
2. the indexes, then the `.log`, are renamed to `.swap`; the directory is fsynced. The `.log.swap`
   rename is the commit point: before it the old segments are the truth and every `.cleaned` file
   is a stray (recovery deletes it), after it the swap segment is the truth;
3. the old segments are deleted, then the swap files take their live names.
A crash after step 2 leaves a `.log.swap`: `complete_interrupted_swaps` deletes the old segments it
replaces (those whose base offset lies in [base, swap's next offset)) and renames it; its indexes
are dropped so that the normal open rebuilds them with a CRC scan.
"""

from __future__ import annotations

import os
from pathlib import Path

from clients.record.batch_header import HEADER_SIZE, parse_header
from kraft.fs import fsync_dir
from kraft.log import file_names as fn

CLEANED_SUFFIX = ".cleaned"
SWAP_SUFFIX = ".swap"
_LOG_SWAP = fn.LOG_SUFFIX + SWAP_SUFFIX


def swap_in(log, first: int, old: list, new) -> None:
    """Replace `old` (the log's segments[first:first + len(old)]) by `new`, a sealed and fsynced
    segment carrying CLEANED_SUFFIX whose base offset is old[0]'s."""
    new.change_suffix(CLEANED_SUFFIX, SWAP_SUFFIX)
    fsync_dir(log.dir)  # the commit point is durable before anything is lost
    log.replace_segments(first, len(old), new)
    for seg in old:
        seg.delete()
    new.change_suffix(SWAP_SUFFIX, "")
    fsync_dir(log.dir)


def complete_interrupted_swaps(dir: Path) -> int:
    """Finish every swap a crash interrupted after its commit point; drop `.swap` indexes left
    without their `.log.swap`. Returns the number of swaps completed. Call before the segments
    are opened (`.cleaned` leftovers are strays removed by recovery.remove_stray_files)."""
    names = os.listdir(dir)
    log_bases = {
        b for b in (fn.parse_base_offset(n, fn.LOG_SUFFIX) for n in names) if b is not None
    }
    completed = 0
    for name in sorted(names):
        if not name.endswith(_LOG_SWAP):
            continue
        base = fn.parse_base_offset(name[: -len(SWAP_SUFFIX)], fn.LOG_SUFFIX)
        if base is None:
            continue
        swap_path = dir / name
        # An emptied swap segment still replaces the old one carrying its base offset (same name).
        end = max(_next_offset(swap_path, base), base + 1)
        for old in sorted(b for b in log_bases if base <= b < end):
            _unlink(fn.log_file(dir, old))  # .log first: a crash now leaves only orphan indexes
            _unlink(fn.index_file(dir, old))
            _unlink(fn.time_index_file(dir, old))
            if old != base:
                _unlink(fn.txn_index_file(dir, old))
            log_bases.discard(old)
        # Whatever index files carry the live name may be the old segment's: rebuild them.
        _unlink(fn.index_file(dir, base))
        _unlink(fn.time_index_file(dir, base))
        # The .txnindex cannot be rebuilt from the segment alone: the swap's is the truth. With
        # none, step 3 renamed it already or neither side has entries (a swap replacing a
        # segment with entries always carries one, if empty): the live one is right. Without
        # that rule an old segment's entry would outlive its dropped ABORT marker, and a
        # read_committed consumer would skip its producer's next, committed, transaction.
        txn_swap = Path(str(fn.txn_index_file(dir, base)) + SWAP_SUFFIX)
        if txn_swap.exists():
            os.replace(txn_swap, fn.txn_index_file(dir, base))
        os.replace(swap_path, fn.log_file(dir, base))
        log_bases.add(base)
        completed += 1
    changed = completed > 0
    for name in names:
        if name.endswith(SWAP_SUFFIX) and not name.endswith(_LOG_SWAP):
            # Swap indexes are rebuilt from the log rather than trusted: cheap, and always right.
            _unlink(dir / name)
            changed = True
    if changed:
        fsync_dir(dir)
    return completed


def _next_offset(path: Path, base: int) -> int:
    """One past the last offset of the whole batches in a segment file (headers only); `base`
    when it holds none. A torn tail cannot occur (step 1 fsyncs) but is ignored if it does."""
    next_offset, pos = base, 0
    fd = os.open(path, os.O_RDONLY)
    try:
        size = os.fstat(fd).st_size
        while size - pos >= HEADER_SIZE:
            header = parse_header(os.pread(fd, HEADER_SIZE, pos))
            if header.size < HEADER_SIZE or pos + header.size > size:
                break
            next_offset = header.next_offset
            pos += header.size
    finally:
        os.close(fd)
    return next_offset


def _unlink(path: Path) -> None:
    try:
        os.unlink(path)
    except FileNotFoundError:
        pass
