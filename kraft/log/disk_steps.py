"""Disk work written once as a generator of steps and run either inline or with each step in a
worker thread: the generator runs on the caller's thread (the loop), each callable it yields is
blocking disk work that touches no state of the loop, and its result (or exception) comes back."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Generator
from typing import Any

Steps = Generator[Callable[[], Any], Any, Any]


def run_inline(steps: Steps) -> Any:
    """Run every step on this thread; returns what the generator returns."""

    async def call(work: Callable[[], Any]) -> Any:
        return work()

    # `call` never suspends, so the coroutine runs to its end in one send.
    coroutine = run_off_loop(steps, call)
    try:
        coroutine.send(None)
    except StopIteration as stop:
        return stop.value
    raise RuntimeError("an inline disk step suspended")


async def run_off_loop(
    steps: Steps, run_sync: Callable[[Callable[[], Any]], Awaitable[Any]]
) -> Any:
    """Run each step through `run_sync` (trio.to_thread.run_sync: the loop goes on meanwhile)
    and the generator between steps on the loop. A cancellation closes the generator, whose
    cleanup (finally) runs on the loop."""
    try:
        work = next(steps)
        while True:
            try:
                value = await run_sync(work)
            except Exception as exc:
                work = steps.throw(exc)
            else:
                work = steps.send(value)
    except StopIteration as stop:
        return stop.value
    finally:
        steps.close()
