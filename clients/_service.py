"""The lifecycle the async clients share: one background task (the fetcher, the sender) that runs
from start() to aclose() in the caller's nursery, or under a SyncRunner for the blocking facades."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any, Self

import trio


class BackgroundService:
    """Runs `task` (a `nursery.start`-able async function) until a close is requested. `serve`
    is the service's whole life: start() runs it in a nursery of the caller's task, the blocking
    facades hand it to `SyncRunner.start_service`; either way `_stop` (aclose) ends it."""

    def __init__(self, task: Callable[..., Awaitable[Any]]) -> None:
        self._task = task
        self._nursery_cm = None
        self._close_requested: trio.Event | None = None
        self._done: trio.Event | None = None

    async def serve(self, task_status=trio.TASK_STATUS_IGNORED) -> None:
        """Run until aclose(), in a nursery the caller owns (`nursery.start(service.serve)`)."""
        self._close_requested = trio.Event()
        self._done = trio.Event()
        try:
            async with trio.open_nursery() as nursery:
                await nursery.start(self._task)
                task_status.started()
                await self._close_requested.wait()
                nursery.cancel_scope.cancel()
        finally:
            self._on_stopped()
            self._done.set()

    def _on_stopped(self) -> None:
        """Release what the task used; runs once it has stopped, however it stopped."""

    async def start(self) -> None:
        """Start the background task; pair with aclose() in the same task (or use `async with`)."""
        # Entered by hand, not with `async with`, so the service outlives this call; _stop exits it.
        self._nursery_cm = trio.open_nursery()
        nursery = await self._nursery_cm.__aenter__()
        await nursery.start(self.serve)

    async def _stop(self) -> None:
        """Ask the task to stop and wait until it has (and its nursery, if start() opened one)."""
        if self._close_requested is not None:
            self._close_requested.set()
        if self._nursery_cm is not None:
            cm, self._nursery_cm = self._nursery_cm, None
            await cm.__aexit__(None, None, None)
        elif self._done is not None:
            await self._done.wait()

    async def aclose(self) -> None:
        await self._stop()

    async def __aenter__(self) -> Self:
        await self.start()
        return self

    async def __aexit__(self, *exc_info) -> None:
        await self.aclose()
