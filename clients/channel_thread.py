"""One completion thread per channel for the channel's whole life, not one per burst of calls.

grpcio's sync channel runs a thread that reads the channel's completion queue and calls the
futures' done-callbacks; it ends that thread whenever the channel has no call in flight, and
starts a new one with the next call. A consumer's fetch loop or a producer sending one record at a
time goes from zero to one call in flight on every request, so every request paid for a thread
start (and its handshake with the starting thread, under the GIL) before it was even sent: a
sequential client created 602 threads for 300 records. Here a channel marked by `keep_thread`
keeps its thread until `close()`, which first wakes it with a call that the close cancels, so
that the thread has left the completion queue before grpcio destroys it.

This reaches into grpcio's private `grpc._channel` (the spin thread and its call count); if a
grpcio version lacks what it needs, channels simply keep grpcio's own behaviour (and
tests/clients/test_channel_thread.py fails, so the loss is seen)."""

from __future__ import annotations

from typing import Any

import grpc

try:
    from grpc import _channel as _grpc_channel
    from grpc._cython import cygrpc as _cygrpc

    _grpc_spin = _grpc_channel._run_channel_spin_thread
    _SUPPORTED = (
        hasattr(_grpc_channel, "_ChannelCallState")
        and hasattr(_cygrpc, "block_if_fork_in_progress")
        and hasattr(_cygrpc.ForkManagedThread(target=len), "_thread")
    )
except (ImportError, AttributeError):
    _SUPPORTED = False

# Channels whose thread saw its queue shut down under it (grpcio destroys the queue right after):
# a close that bypassed `keep_thread`'s. Tests check it stays 0.
unwoken_closes = 0

# A method no node serves: the call that wakes a closing channel's thread (close cancels it).
_WAKE_METHOD = "/kraft.ChannelThread/Wake"


def _spin(state: Any) -> None:
    """grpcio's channel loop, but it leaves only when the channel is closing and idle."""
    while True:
        _cygrpc.block_if_fork_in_progress(state)
        event = state.channel.next_call_event()
        if event.completion_type == _cygrpc.CompletionType.queue_timeout:
            continue
        if event.completion_type == _cygrpc.CompletionType.queue_shutdown:
            # Closed by a way that did not wake us first (none is known): the queue is gone.
            global unwoken_closes
            with state.lock:
                state.kraft_thread = None
                unwoken_closes += 1
            return
        if event.tag(event):
            with state.lock:
                state.managed_calls -= 1
                if state.managed_calls == 0 and state.kraft_closing:
                    state.kraft_thread = None
                    return


def _start_spin(state: Any) -> None:
    """Replaces grpcio's `_run_channel_spin_thread`, which it calls with state.lock held when
    a call is made on a channel with none in flight."""
    if not getattr(state, "kraft_keep", False):
        _grpc_spin(state)
        return
    thread = state.kraft_thread
    if thread is not None and thread.is_alive():  # (not alive in a forked child)
        return
    managed = _cygrpc.ForkManagedThread(target=_spin, args=(state,))
    managed.setDaemon(True)
    state.kraft_thread = managed._thread  # the threading.Thread inside
    managed.start()


if _SUPPORTED:
    _grpc_channel._run_channel_spin_thread = _start_spin


def keep_thread(channel: grpc.Channel) -> grpc.Channel:
    """Mark a new channel so that its completion thread lives until `channel.close()`."""
    state = getattr(channel, "_call_state", None)
    if (
        not _SUPPORTED
        or state is None
        or not hasattr(state, "managed_calls")
        or not hasattr(channel, "_close")
    ):
        return channel
    with state.lock:
        state.kraft_keep = True
        state.kraft_closing = False
        state.kraft_thread = None
    grpc_close = channel._close  # what close() and `with channel:` both end in

    def close() -> None:
        with state.lock:
            state.kraft_closing = True
            idle = state.kraft_thread is not None and state.managed_calls == 0
        if idle:
            # The thread waits on the queue with no call to end that wait; this one ends it
            # (grpcio's close cancels every call in flight, and waits for them to finish).
            try:
                channel.unary_unary(_WAKE_METHOD).future(b"")
            except ValueError:
                pass  # closed already by someone else
        grpc_close()

    channel.close = channel._close = close
    return channel


def supported() -> bool:
    """Whether this grpcio lets channels keep their thread."""
    return _SUPPORTED
