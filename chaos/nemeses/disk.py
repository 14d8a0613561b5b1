"""The `disk-full` nemesis: each node's data dir is a small tmpfs of its own, so a fault can
fill it (one filler file taking every free byte: the node's next append, index write, checkpoint
or fsync meets ENOSPC) and the heal empties it. kraft takes a log dir that failed offline until
the node restarts (kraft/log/log_dir_failure.py), so the heal restarts a node whose log says so.

A tmpfs, not a loop device: no image file to size and no mkfs, and the kernel counts only pages
written, so six nodes' mounts cost what they hold. At the end `unmount_all` copies each mount's
files back into a plain data dir, so the audit reads them after the mounts are gone."""

from __future__ import annotations

import os
import pathlib
import shutil
import subprocess
from collections.abc import Callable, Iterable

SIZE = "256m"
FILLER = ".chaos-disk-full"  # a file: kraft's log dir scan skips whatever is not a dir
FAILED_DIR = "failed while"  # kraft's log line when a log dir goes offline

Runner = Callable[[list[str]], subprocess.CompletedProcess]


class DiskError(RuntimeError):
    """A mount could not be made or removed; the message names the command."""


def _run(cmd: list[str]) -> subprocess.CompletedProcess:
    return subprocess.run(cmd, capture_output=True, text=True, timeout=60)


def mounted(path: pathlib.Path) -> bool:
    return os.path.ismount(path)


def fill(directory: pathlib.Path) -> int:
    """Take every free byte of the filesystem under `directory`; returns the bytes taken."""
    path = directory / FILLER
    taken = 0
    with open(path, "ab") as f:
        while True:
            free = os.statvfs(directory).f_bavail * os.statvfs(directory).f_frsize
            if free <= 0:
                return taken
            try:
                os.posix_fallocate(f.fileno(), taken, free)
                taken += free
            except OSError:
                # Another writer took some meanwhile; take what is left in smaller steps.
                step = max(4096, free // 2)
                try:
                    os.posix_fallocate(f.fileno(), taken, step)
                    taken += step
                except OSError:
                    if step == 4096:
                        return taken


def empty(directory: pathlib.Path) -> None:
    (directory / FILLER).unlink(missing_ok=True)


def free_bytes(directory: pathlib.Path) -> int:
    st = os.statvfs(directory)
    return st.f_bavail * st.f_frsize


class DiskFaults:
    """Each node's data dir, its own tmpfs from `mount_all` until `unmount_all`."""

    def __init__(
        self,
        data_dirs: dict[int, pathlib.Path],
        size: str = SIZE,
        log_of: Callable[[int], pathlib.Path] | None = None,
        run: Runner = _run,
    ) -> None:
        self.data_dirs, self.size, self._run = dict(data_dirs), size, run
        self.log_of = log_of
        self.full: dict[int, int] = {}  # node -> its log's size when the disk filled

    def mount_all(self) -> None:
        for node_id, d in sorted(self.data_dirs.items()):
            d.mkdir(parents=True, exist_ok=True)
            if mounted(d):
                continue
            if any(d.iterdir()):
                raise DiskError(f"{d} is not empty: a tmpfs mounted on it would hide its files")
            done = self._run(
                [
                    "mount",
                    "-t",
                    "tmpfs",
                    "-o",
                    f"size={self.size},mode=0755",
                    f"kraft-disk-{node_id}",
                    str(d),
                ]
            )
            if done.returncode != 0:
                raise DiskError(f"mount tmpfs on {d} failed: {done.stderr.strip()}")

    def fill(self, node_id: int) -> int:
        log = self.log_of(node_id) if self.log_of else None
        self.full[node_id] = log.stat().st_size if log and log.exists() else 0
        return fill(self.data_dirs[node_id])

    def empty(self, node_id: int) -> bool:
        """Free the disk; True when the node took its log dir offline meanwhile (it needs a
        restart to use it again)."""
        empty(self.data_dirs[node_id])
        since = self.full.pop(node_id, None)
        if since is None or self.log_of is None:
            return False
        with open(self.log_of(node_id), "rb") as f:
            f.seek(since)
            return FAILED_DIR.encode() in f.read()

    def empty_all(self) -> list[int]:
        return [n for n in sorted(self.full) if self.empty(n)]

    def unmount_all(self) -> list[str]:
        """Copy each mount's files into a plain dir of the same name, then unmount; safe to
        repeat. The nodes must be stopped. Returns a line per mount removed."""
        lines = []
        for _node_id, d in sorted(self.data_dirs.items()):
            if not mounted(d):
                continue
            empty(d)
            keep = d.with_name(d.name + ".copy")
            shutil.rmtree(keep, ignore_errors=True)
            shutil.copytree(d, keep, symlinks=True)
            done = self._run(["umount", str(d)])
            if done.returncode != 0:
                done = self._run(["umount", "-l", str(d)])  # a straggler holds it: detach
            if done.returncode != 0:
                lines.append(f"umount {d} failed: {done.stderr.strip()}")
                continue
            d.rmdir()
            keep.rename(d)
            lines.append(f"tmpfs on {d} (its files copied back)")
        return lines


def leftover_mounts(under: Iterable[pathlib.Path]) -> list[pathlib.Path]:
    """Our tmpfs mounts still under these dirs (for a test's cleanup check)."""
    roots = [str(pathlib.Path(u).resolve()) for u in under]
    out = []
    for line in pathlib.Path("/proc/mounts").read_text().splitlines():
        source, target = line.split()[:2]
        if source.startswith("kraft-disk-") and any(target.startswith(r) for r in roots):
            out.append(pathlib.Path(target))
    return out
