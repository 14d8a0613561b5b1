"""The `.lock` file each data directory holds while a node uses it (Kafka's FileLock): flock'd for
the life of the process, with the holder's pid inside so a second node can name it."""

from __future__ import annotations

import fcntl
import os
from pathlib import Path

LOCK_FILE = ".lock"


class DirLocked(RuntimeError):
    """Another process holds the directory's lock; the message names the dir and the holder."""


class DirLock:
    def __init__(self, dir: Path, fd: int) -> None:
        self.dir, self._fd = dir, fd

    def release(self) -> None:
        if self._fd >= 0:
            os.close(self._fd)  # closing the fd drops the flock
            self._fd = -1


def lock_dir(dir: Path) -> DirLock:
    """Take `<dir>/.lock` (creating the dir) or raise DirLocked. The lock dies with the process,
    so a kill -9 never leaves a stale one behind."""
    dir = Path(dir)
    dir.mkdir(parents=True, exist_ok=True)
    path = dir / LOCK_FILE
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        holder = os.pread(fd, 32, 0).decode(errors="replace").strip() or "unknown"
        os.close(fd)
        raise DirLocked(
            f"data dir {dir} is in use by another kraft process (pid {holder}); stop "
            f"that node or point this one at another dir"
        ) from None
    except BaseException:
        os.close(fd)
        raise
    os.ftruncate(fd, 0)
    os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
    return DirLock(dir, fd)


def lock_dirs(dirs) -> list[DirLock]:
    """Lock every dir (each once) or none: a refusal releases those already taken."""
    locks: list[DirLock] = []
    try:
        for d in dict.fromkeys(Path(d).resolve() for d in dirs):
            locks.append(lock_dir(d))
    except BaseException:
        release_all(locks)
        raise
    return locks


def release_all(locks: list[DirLock]) -> None:
    for lock in locks:
        lock.release()
