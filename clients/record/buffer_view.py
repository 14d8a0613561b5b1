"""Large buffers without copies, through CPython's public C API (ctypes): the CRC32C of part of
any buffer (google_crc32c takes only objects that need no buffer release, so a large range is
handed to it as a ctypes array over the buffer's own memory), and a new `bytes` written in place
(grpcio sends only `bytes`; building a bytearray and copying it into one costs a zero-fill and a
copy of every byte)."""

from __future__ import annotations

import ctypes
from collections.abc import Callable

import google_crc32c

# Below this a copy costs less than setting up the view (a few microseconds of ctypes calls).
VIEW_FROM_BYTES = 64 * 1024


class _PyBuffer(ctypes.Structure):
    """CPython's Py_buffer (Include/pybuffer.h), filled by PyObject_GetBuffer."""

    _fields_ = [
        ("buf", ctypes.c_void_p),
        ("obj", ctypes.c_void_p),
        ("len", ctypes.c_ssize_t),
        ("itemsize", ctypes.c_ssize_t),
        ("readonly", ctypes.c_int),
        ("ndim", ctypes.c_int),
        ("format", ctypes.c_char_p),
        ("shape", ctypes.c_void_p),
        ("strides", ctypes.c_void_p),
        ("suboffsets", ctypes.c_void_p),
        ("internal", ctypes.c_void_p),
    ]


_get_buffer = ctypes.pythonapi.PyObject_GetBuffer
_get_buffer.argtypes = (ctypes.py_object, ctypes.POINTER(_PyBuffer), ctypes.c_int)
_release_buffer = ctypes.pythonapi.PyBuffer_Release
_release_buffer.argtypes = (ctypes.POINTER(_PyBuffer),)
_SIMPLE = 0  # PyBUF_SIMPLE: one contiguous run of bytes, or an error
_new_bytes = ctypes.pythonapi.PyBytes_FromStringAndSize
_new_bytes.argtypes = (ctypes.c_char_p, ctypes.c_ssize_t)
_new_bytes.restype = ctypes.py_object


def crc32c(buf, start: int = 0, end: int | None = None) -> int:
    """CRC32C of buf[start:end]; the range is copied only when small."""
    end = len(buf) if end is None else end
    if end - start < VIEW_FROM_BYTES:
        return google_crc32c.value(bytes(memoryview(buf)[start:end]))
    if not 0 <= start <= end <= len(buf):
        raise IndexError(f"range {start}:{end} is outside a buffer of {len(buf)} bytes")
    view = _PyBuffer()
    _get_buffer(buf, ctypes.byref(view), _SIMPLE)  # holds the buffer still until released
    try:
        return google_crc32c.value((ctypes.c_char * (end - start)).from_address(view.buf + start))
    finally:
        _release_buffer(ctypes.byref(view))


def bytes_written_in_place(size: int, write: Callable[[memoryview], None]) -> bytes:
    """A new `bytes` of `size` whose contents `write(view)` puts in a writable view of it, as a
    C extension fills PyBytes_FromStringAndSize(NULL, size): the object is ours alone until
    returned (not hashed, not shared), and `write` must fill every byte."""
    if size == 0:
        write(memoryview(bytearray()))
        return b""  # the shared empty bytes: never written
    out = _new_bytes(None, size)  # not zeroed: `write` fills it
    view = _PyBuffer()
    _get_buffer(out, ctypes.byref(view), _SIMPLE)
    try:
        target = (ctypes.c_char * size).from_address(view.buf)
        with memoryview(target).cast("B") as writable:
            write(writable)
    finally:
        _release_buffer(ctypes.byref(view))
    return out
