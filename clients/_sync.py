"""Threads meeting trio: SyncRunner (a background thread's `trio.run` that user threads call into),
TrioHome (wake-ups from any thread) and Doorbell (a wait a Ctrl-C cannot leave holding a lock)."""

from __future__ import annotations

import threading
from collections.abc import Awaitable, Callable
from typing import Any

import trio

from clients.errors import ErrorCode, KraftError


class SyncRunner:
    def __init__(self, name: str = "kraft-client") -> None:
        self._ready = threading.Event()
        self._token: trio.lowlevel.TrioToken | None = None
        self._nursery: trio.Nursery | None = None
        self._stop: trio.Event | None = None
        self._error: BaseException | None = None
        self._closed = False
        self._thread = threading.Thread(target=self._main, name=name, daemon=True)
        self._thread.start()
        self._ready.wait()
        if self._error is not None:
            raise self._error

    def _main(self) -> None:
        try:
            trio.run(self._serve)
        except BaseException as exc:  # surfaced to the next caller instead of vanishing
            self._error = exc
        finally:
            self._ready.set()

    async def _serve(self) -> None:
        self._token = trio.lowlevel.current_trio_token()
        self._stop = trio.Event()
        async with trio.open_nursery() as nursery:
            self._nursery = nursery
            self._ready.set()
            await self._stop.wait()
            nursery.cancel_scope.cancel()

    @property
    def token(self) -> trio.lowlevel.TrioToken:
        return self._token

    def run(
        self, async_fn: Callable[..., Awaitable[Any]], *args: Any, timeout: float | None = None
    ) -> Any:
        """Run `async_fn(*args)` in the trio thread and block until it returns (or raise
        KraftError(REQUEST_TIMED_OUT) after `timeout` seconds, cancelling it)."""
        self._check()
        if timeout is None:
            return trio.from_thread.run(async_fn, *args, trio_token=self._token)

        async def bounded() -> Any:
            with trio.move_on_after(timeout) as scope:
                return await async_fn(*args)
            if scope.cancelled_caught:
                raise KraftError(ErrorCode.REQUEST_TIMED_OUT, f"gave up after {timeout} s")

        return trio.from_thread.run(bounded, trio_token=self._token)

    def run_sync_soon(self, fn: Callable[..., Any], *args: Any) -> None:
        """Schedule a plain function in the trio thread without waiting (the cheap wake-up)."""
        self._token.run_sync_soon(fn, *args)

    def start_service(self, async_fn: Callable[..., Awaitable[Any]], *args: Any) -> Any:
        """`nursery.start(async_fn, *args)` in the long-lived nursery: returns once the service
        called task_status.started(value), then it keeps running until close()."""
        self._check()

        async def start() -> Any:
            return await self._nursery.start(async_fn, *args)

        return trio.from_thread.run(start, trio_token=self._token)

    def close(self, timeout: float | None = 10) -> None:
        """Cancel whatever still runs in the nursery and join the thread."""
        if self._closed:
            return
        self._closed = True
        if self._error is None and self._thread.is_alive():
            try:
                self._token.run_sync_soon(self._stop.set)
            except trio.RunFinishedError:
                pass
        if threading.current_thread() is not self._thread:
            self._thread.join(timeout)

    def _check(self) -> None:
        if self._error is not None:
            raise KraftError(
                ErrorCode.UNKNOWN_SERVER_ERROR,
                f"the client's background thread died: {self._error!r}",
            )
        if self._closed:
            raise KraftError(ErrorCode.NETWORK_EXCEPTION, "client is closed")


class Doorbell:
    """A wake-up between threads that a signal can never leave half-done. A Condition's `with`
    and `wait` run Python code between taking and releasing their lock, so a Ctrl-C
    (KeyboardInterrupt) landing there can leave the lock held for good and hang the client's
    trio thread; this is a bare C lock used as a binary semaphore instead. A ring wakes one
    waiter: waiters check their condition again and wait in short steps."""

    def __init__(self) -> None:
        self._bell = threading.Lock()
        self._bell.acquire()

    def ring(self) -> None:
        try:
            self._bell.release()
        except RuntimeError:
            pass  # rung already and nobody took it yet

    def wait(self, timeout: float) -> bool:
        return self._bell.acquire(timeout=max(0.0, timeout))


class TrioHome:
    """The trio thread a client's tasks run in, once `settle` was called there: `call_soon`
    runs a plain function at once when called in that thread (or before it settled), else
    hands it over through the trio token, so the async clients' wake-ups work from any thread
    (the blocking facades' callers) without being swapped for thread-safe versions."""

    def __init__(self) -> None:
        self._token: trio.lowlevel.TrioToken | None = None
        self._thread: int | None = None

    def settle(self) -> None:
        """Call from a task of the trio run the client lives in."""
        self._token = trio.lowlevel.current_trio_token()
        self._thread = threading.get_ident()

    def is_home(self) -> bool:
        return self._thread is None or threading.get_ident() == self._thread

    def call_soon(self, fn: Callable[..., Any], *args: Any) -> None:
        if self.is_home():
            fn(*args)
            return
        try:
            self._token.run_sync_soon(fn, *args)
        except trio.RunFinishedError:
            pass  # the client stopped: nothing is left to wake
