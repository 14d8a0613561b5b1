"""The purgatory is keyed by partition: a move of partition A wakes A's waiters and no waiter of
B; a waiter on several partitions wakes on any of them; a deadline ends a wait unwoken; and the
acks=all rule (ReplicaManager.wait_committed) answers through it."""

from __future__ import annotations

import trio
import trio.testing

from broker.replication.purgatory import Purgatory

A, B, C = ("t", 0), ("t", 1), ("u", 0)


async def test_a_move_of_a_wakes_no_waiter_of_b(autojump_clock):
    purgatory = Purgatory()
    woke = []

    async def wait(name, partitions):
        moved = await purgatory.wait_moved(partitions, trio.current_time() + 10)
        woke.append((name, moved, trio.current_time()))

    async with trio.open_nursery() as nursery:
        nursery.start_soon(wait, "on A", [A])
        nursery.start_soon(wait, "on B", [B])
        nursery.start_soon(wait, "on B and C", [B, C])
        await trio.testing.wait_all_tasks_blocked()
        assert purgatory.waiting(*A) == 1 and purgatory.waiting(*B) == 2
        purgatory.moved(*A)
        await trio.testing.wait_all_tasks_blocked()
        assert [w[0] for w in woke] == ["on A"]
        purgatory.moved(*C)
        await trio.testing.wait_all_tasks_blocked()
        assert [w[0] for w in woke] == ["on A", "on B and C"]
    # B never moved: its waiter ran into its deadline, unwoken.
    assert woke[2][0] == "on B" and woke[2][1] is False and woke[2][2] >= 10
    assert purgatory.waiting(*A) == purgatory.waiting(*B) == purgatory.waiting(*C) == 0


async def test_wait_until_rechecks_after_each_move_and_gives_none_at_the_deadline(autojump_clock):
    purgatory = Purgatory()
    high_watermark = [0]

    async def committed(offset):
        return await purgatory.wait_until(
            [A], lambda: "ok" if high_watermark[0] > offset else None, trio.current_time() + 5
        )

    async with trio.open_nursery() as nursery:
        answers = []
        nursery.start_soon(lambda: _append(answers, committed(3)))
        await trio.testing.wait_all_tasks_blocked()
        high_watermark[0] = 2
        purgatory.moved(*A)
        await trio.testing.wait_all_tasks_blocked()
        assert answers == []  # woken, looked again, still below
        high_watermark[0] = 4
        purgatory.moved(*A)
        await trio.testing.wait_all_tasks_blocked()
        assert answers == ["ok"]
    assert await committed(10) is None  # never reached: the deadline answers


async def test_watchers_hear_every_partition_of_their_topic():
    purgatory = Purgatory()
    heard = []
    purgatory.watch("t", heard.append)
    purgatory.moved(*A)
    purgatory.moved(*C)
    purgatory.moved(*B)
    assert heard == [0, 1]


async def _append(out, awaitable):
    out.append(await awaitable)


async def test_a_move_of_the_log_end_alone_wakes_only_log_end_waiters(autojump_clock):
    # An append that leaves the high watermark where it was (followers have yet to fetch it)
    # wakes followers' fetches, not consumers' fetches or acks=all answers.
    purgatory = Purgatory()
    woke, watched = [], []
    purgatory.watch("t", watched.append)

    async def wait(name, log_end):
        moved = await purgatory.wait_which_moved([A], trio.current_time() + 10, log_end=log_end)
        woke.append((name, moved))

    async with trio.open_nursery() as nursery:
        nursery.start_soon(wait, "follower", True)
        nursery.start_soon(wait, "consumer", False)
        await trio.testing.wait_all_tasks_blocked()
        purgatory.end_moved(*A)
        await trio.testing.wait_all_tasks_blocked()
        assert woke == [("follower", {A})] and watched == [0]
        purgatory.moved(*A)  # the high watermark moved: everyone looks again
        await trio.testing.wait_all_tasks_blocked()
        assert woke == [("follower", {A}), ("consumer", {A})]
