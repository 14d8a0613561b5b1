"""The blocking facades' runner: one trio thread, calls and services in it, errors and timeouts
carried back to the caller, a clean close."""

from __future__ import annotations

import threading

import pytest
import trio

from clients._sync import SyncRunner
from clients.errors import ErrorCode, KraftError


def test_run_returns_values_and_raises_errors_in_the_caller():
    runner = SyncRunner()
    try:

        async def add(a, b):
            await trio.sleep(0)
            return a + b, threading.current_thread().name

        value, thread = runner.run(add, 2, 3)
        assert value == 5 and thread == "kraft-client"

        async def boom():
            raise KraftError(ErrorCode.INVALID_CONFIG, "bad")

        with pytest.raises(KraftError) as info:
            runner.run(boom)
        assert info.value.code == ErrorCode.INVALID_CONFIG
        with pytest.raises(KraftError) as info:
            runner.run(trio.sleep, 10, timeout=0.05)
        assert info.value.code == ErrorCode.REQUEST_TIMED_OUT
    finally:
        runner.close()


def test_services_run_until_close_and_close_joins_the_thread():
    runner = SyncRunner()
    stopped = threading.Event()

    async def service(task_status=trio.TASK_STATUS_IGNORED):
        task_status.started("up")
        try:
            await trio.sleep_forever()
        finally:
            stopped.set()

    assert runner.start_service(service) == "up"
    hits = []
    runner.run_sync_soon(hits.append, 1)
    runner.run(trio.sleep, 0)
    assert hits == [1]
    runner.close()
    assert stopped.is_set() and not runner._thread.is_alive()
    with pytest.raises(KraftError):
        runner.run(trio.sleep, 0)
    runner.close()  # idempotent
