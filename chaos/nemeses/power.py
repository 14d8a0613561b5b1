"""The `power` nemesis: each node's data dir is a FUSE mount of chaos/nemeses/lazyfs.py over a
backing dir beside it (`data.backing`) that holds only what the node synced. The fault kills the
node (kill -9) and then its filesystem process (kill -9): every write not fsynced, and every
create, rename or unlink not followed by an fsync of its directory, is gone. A new filesystem
process over the same backing dir is the disk as it comes back; the heal restarts the node on it.

At the end `unmount_all` stops each filesystem cleanly (it syncs everything first) and
`restore` moves each backing dir into the data dir's place, so the audit reads plain files."""

from __future__ import annotations

import os
import pathlib
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterable

from chaos.nemeses.lazy_tree import ORPHANS

ROOT = pathlib.Path(__file__).resolve().parents[2]
INSTALL = "apt-get install -y fuse3 libfuse3-dev pkg-config && pip install 'kraft[power]'"
FSNAME = "kraft-power:"  # /proc/mounts' source of our mounts


class PowerError(RuntimeError):
    """A mount could not be made or removed; the message says which and why."""


def unavailable() -> str | None:
    """Why the power nemesis cannot run here (None when it can)."""
    try:
        import pyfuse3  # noqa: F401
    except ImportError:
        return f"pyfuse3 is not installed; install it with: {INSTALL}"
    if not os.path.exists("/dev/fuse"):
        return "/dev/fuse is missing (a container needs --device /dev/fuse)"
    if os.geteuid() != 0:
        return "mounting FUSE for the nodes needs root"
    return None


def backing_of(data_dir: pathlib.Path) -> pathlib.Path:
    return data_dir.with_name(data_dir.name + ".backing")


def _mounted(path: pathlib.Path) -> bool:
    """From /proc/mounts: a dead FUSE mount fails stat(), so os.path.ismount says False."""
    return path.resolve() in leftover_mounts([path])


def _umount(path: pathlib.Path) -> None:
    for cmd in (["fusermount3", "-u", "-z", str(path)], ["umount", "-l", str(path)]):
        if not _mounted(path):
            return
        subprocess.run(cmd, capture_output=True, timeout=30)


class PowerFaults:
    """Each node's data dir on its own lazyfs from `mount_all` until `unmount_all`."""

    def __init__(self, data_dirs: dict[int, pathlib.Path], python: str = sys.executable) -> None:
        self.data_dirs, self.python = dict(data_dirs), python
        self.procs: dict[int, subprocess.Popen] = {}

    def backing(self, node_id: int) -> pathlib.Path:
        return backing_of(self.data_dirs[node_id])

    def mount(self, node_id: int) -> None:
        d, backing = self.data_dirs[node_id], self.backing(node_id)
        d.mkdir(parents=True, exist_ok=True)
        backing.mkdir(parents=True, exist_ok=True)
        if _mounted(d):
            raise PowerError(f"{d} is already a mount")
        if any(d.iterdir()):
            raise PowerError(f"{d} is not empty: a mount on it would hide its files")
        log = open(d.with_name(d.name + ".lazyfs.log"), "ab")
        proc = subprocess.Popen(
            [self.python, "-m", "chaos.nemeses.lazyfs", str(backing), str(d)],
            cwd=ROOT,
            env={**os.environ, "PYTHONPATH": str(ROOT)},
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,  # the runner's Ctrl-C must not cut the nodes' disks
        )
        log.close()
        deadline = time.monotonic() + 30
        while not os.path.ismount(d):
            if proc.poll() is not None or time.monotonic() > deadline:
                proc.kill()
                proc.wait()
                tail = d.with_name(d.name + ".lazyfs.log").read_text(errors="replace")[-500:]
                raise PowerError(f"lazyfs on {d} did not mount: {tail.strip()}")
            time.sleep(0.02)
        self.procs[node_id] = proc

    def mount_all(self) -> None:
        for node_id in sorted(self.data_dirs):
            self.mount(node_id)

    def cut(self, node_id: int) -> str:
        """The power cut (the node must be dead already): the filesystem process dies with
        what it held, the mount goes, a new one shows what was synced. Says what it lost."""
        lost = unsynced(self.data_dirs[node_id], self.backing(node_id))
        proc = self.procs.pop(node_id)
        proc.send_signal(signal.SIGKILL)
        proc.wait(10)
        _umount(self.data_dirs[node_id])
        orphans = sum(1 for _ in (self.backing(node_id) / os.fsdecode(ORPHANS)).iterdir())
        self.mount(node_id)
        return f"unsynced writes dropped ({lost}, {orphans} nameless files reclaimed)"

    def unmount_all(self) -> list[str]:
        """Each filesystem synced and unmounted (the nodes must be stopped); safe to repeat."""
        lines = []
        for node_id, proc in sorted(self.procs.items()):
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(60)
            except subprocess.TimeoutExpired:
                proc.kill()  # what it held is lost; the backing dir is as of a power cut
                proc.wait()
                lines.append(f"lazyfs on {self.data_dirs[node_id]} hung; killed")
            _umount(self.data_dirs[node_id])
            lines.append(f"lazyfs on {self.data_dirs[node_id]} (synced and unmounted)")
        self.procs.clear()
        return lines

    def restore(self) -> list[str]:
        """Each backing dir becomes its plain data dir again (after unmount_all)."""
        lines = []
        for _node_id, d in sorted(self.data_dirs.items()):
            backing = backing_of(d)
            if not backing.is_dir() or _mounted(d):
                continue
            shutil.rmtree(backing / os.fsdecode(ORPHANS), ignore_errors=True)
            if d.exists():
                d.rmdir()  # the empty mountpoint
            backing.rename(d)
            lines.append(f"{backing} (moved back to {d.name}/)")
        return lines


def _sizes(root: pathlib.Path) -> dict[str, int]:
    out = {}
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = [d for d in dirnames if d != os.fsdecode(ORPHANS)]
        out.update((os.path.relpath(os.path.join(dirpath, d), root) + "/", 0) for d in dirnames)
        for name in filenames:
            path = os.path.join(dirpath, name)
            out[os.path.relpath(path, root)] = os.stat(path).st_size
    return out


def unsynced(mounted: pathlib.Path, backing: pathlib.Path) -> str:
    """What a cut now would lose, by comparing what the mount shows with what its backing dir
    holds: names not durable, and bytes by which durable files differ in size."""
    shown, kept = _sizes(mounted), _sizes(backing)
    names = len(shown.keys() ^ kept.keys())
    changed = sum(abs(size - kept[p]) for p, size in shown.items() if p in kept)
    return f"{changed} bytes of sizes and {names} names undone"


def leftover_mounts(under: Iterable[pathlib.Path]) -> list[pathlib.Path]:
    """Our FUSE mounts still under these dirs (for a test's cleanup check)."""
    roots = [str(pathlib.Path(u).resolve()) for u in under]
    out = []
    for line in pathlib.Path("/proc/mounts").read_text().splitlines():
        source, target = line.split()[:2]
        if source.startswith(FSNAME) and any(target.startswith(r) for r in roots):
            out.append(pathlib.Path(target))
    return out
