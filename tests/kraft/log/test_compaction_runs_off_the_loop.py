"""The broker's cleaner reads segments and writes the cleaned ones in a worker thread and swaps
them in on the loop; appends go on meanwhile, and a pass whose log changed under it (truncation,
retention) swaps nothing, leaves no `.cleaned` file and is redone by the next round."""

import os
import threading

import pytest
import trio
from compaction_helpers import append, compact_config, latest_by_key, records, roll

from kraft.log import cleaner
from kraft.log.log_manager import LogManager

NOW = 10_000


def _pairs(n, keys=5, tag=b"v"):
    return [(b"k%d" % (i % keys), tag + b"%d" % i) for i in range(n)]


def _step(work) -> str:
    return getattr(work, "func", work).__name__


def _threaded(before_step=lambda name: None):
    """run_sync for clean_compacted_off_loop: `before_step` runs on the loop, then the step in
    a worker thread (trio's)."""

    async def run_sync(work):
        before_step(_step(work))
        return await trio.to_thread.run_sync(work)

    return run_sync


def _manager(tmp_path):
    manager = LogManager([tmp_path], compact_config(), now_ms=0)
    log = manager.get_or_create_log("t", 0)
    pairs = _pairs(40)
    append(log, pairs)
    roll(log)
    return manager, log, pairs


def _leftovers(log):
    return [n for n in os.listdir(log.dir) if n.endswith((".cleaned", ".swap"))]


async def test_reads_and_writes_run_in_a_thread_and_the_swap_on_the_loop(tmp_path, monkeypatch):
    manager, log, pairs = _manager(tmp_path)
    threads = {}

    def recorded(name, real):
        def call(*args, **kwargs):
            threads.setdefault(name, set()).add(threading.current_thread())
            return real(*args, **kwargs)

        return call

    monkeypatch.setattr(cleaner, "_build_offset_map", recorded("map", cleaner._build_offset_map))
    monkeypatch.setattr(
        cleaner.SegmentCleaner, "clean_group", recorded("write", cleaner.SegmentCleaner.clean_group)
    )
    monkeypatch.setattr(cleaner, "swap_in", recorded("swap", cleaner.swap_in))
    results = await manager.clean_compacted_off_loop(NOW, trio.to_thread.run_sync)
    loop = threading.current_thread()
    assert results["t", 0].records_kept == 5
    assert threads["swap"] == {loop}
    assert loop not in threads["map"] and loop not in threads["write"]
    assert {r.key: (r.offset, r.value) for r in records(log)} == latest_by_key(pairs)
    manager.close()
    assert (tmp_path / "cleaner-offset-checkpoint").read_text().split("\n")[2] == "t 0 40"


async def test_appends_and_rolls_during_the_pass_do_not_stop_the_swap(tmp_path):
    manager, log, pairs = _manager(tmp_path)

    def append_more(name):
        append(log, [(b"k0", b"during-" + name.encode())])
        roll(log)  # a new sealed segment above the planned end: not the pass's business

    results = await manager.clean_compacted_off_loop(NOW, _threaded(append_more))
    assert results["t", 0].end_offset == 40
    got = [(r.offset, r.key, r.value) for r in records(log)]
    cleaned, appended = got[:5], got[5:]
    assert [(o, k) for o, k, _ in cleaned] == sorted(
        (o, k) for k, (o, _) in latest_by_key(pairs).items()
    )
    assert appended and all(o >= 40 and v.startswith(b"during-") for o, _, v in appended)
    assert _leftovers(log) == []
    manager.close()


def _truncate(log):
    log.truncate_to(30)


def _retention(log):
    log.maybe_increment_log_start_offset(14)
    assert log.delete_old_segments(NOW) >= 1


@pytest.mark.parametrize("change", [_truncate, _retention])
@pytest.mark.parametrize("when", ["build_offset_map", "write_group"])
async def test_a_pass_whose_log_changed_meanwhile_swaps_nothing(tmp_path, change, when):
    manager, log, _ = _manager(tmp_path)
    changed = []

    def change_once(name):
        if name == when and not changed:
            change(log)
            changed.append(name)
            # Deterministic: the thread has not started; the segments it snapshotted are gone
            # or cut, the log goes on.

    results = await manager.clean_compacted_off_loop(NOW, _threaded(change_once))
    assert changed == [when]
    assert results == {}
    offsets = [r.offset for r in records(log)]
    assert offsets == list(range(offsets[0], log.log_end_offset))  # nothing cleaned away
    assert _leftovers(log) == []
    assert not (tmp_path / "cleaner-offset-checkpoint").exists()
    # The next round cleans what the log now holds.
    log.high_watermark = log.log_end_offset
    roll(log)
    results = await manager.clean_compacted_off_loop(NOW, _threaded())
    assert results["t", 0].end_offset == log.log_end_offset
    assert len(records(log)) == 5
    manager.close()
