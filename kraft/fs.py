"""The one crash-safe way to replace a small file: write a temporary file, fsync it, rename it
over the target, fsync the directory. Every checkpoint and metadata file goes through here."""

from __future__ import annotations

import os
from pathlib import Path

TMP_SUFFIX = ".tmp"


def fsync_dir(path: Path) -> None:
    """Make a rename, create or unlink inside `path` durable."""
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def write_all(fd: int, data) -> None:
    """os.write may write less than asked (signals, huge buffers); loop until all is written."""
    view = memoryview(data)
    while view:
        written = os.write(fd, view)
        view = view[written:]


IOV_MAX = 1024  # Linux's limit on buffers per writev


def writev_all(fd: int, buffers: list) -> None:
    """Write `buffers` one after another with as few writev calls as the kernel allows."""
    views, i, written = buffers, 0, 0
    while i < len(views):
        written += os.writev(fd, views[i : i + IOV_MAX])
        # Skip what is written; a buffer written in part goes on from where it stopped.
        while i < len(views) and written >= len(views[i]):
            written -= len(views[i])
            i += 1
        if written:
            if views is buffers:
                views = list(buffers)
            views[i] = memoryview(views[i])[written:]
            written = 0


def atomic_write(path: Path, data: bytes | str, *, dir_fd: int | None = None) -> None:
    """Replace `path` with `data` so that after a crash it holds either the old or the new
    content, never a mix (tmp, fsync, rename, fsync dir). With `dir_fd` (an open directory),
    `path` is a name inside it: a write from another thread then follows that directory even if
    it is renamed meanwhile (a partition dir renamed for deletion), never landing in a new one."""
    path = Path(path)
    if isinstance(data, str):
        data = data.encode()
    tmp = path.with_name(path.name + TMP_SUFFIX)
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644, dir_fd=dir_fd)
    try:
        write_all(fd, data)
        os.fsync(fd)
    finally:
        os.close(fd)
    os.replace(tmp, path, src_dir_fd=dir_fd, dst_dir_fd=dir_fd)
    if dir_fd is None:
        fsync_dir(path.parent)
    else:
        os.fsync(dir_fd)


def remove_durably(path: Path) -> bool:
    """Unlink `path` and fsync its directory; False when it did not exist."""
    path = Path(path)
    try:
        os.unlink(path)
    except FileNotFoundError:
        return False
    fsync_dir(path.parent)
    return True
