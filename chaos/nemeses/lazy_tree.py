"""The `power` nemesis' filesystem model, apart from FUSE: a tree of inodes over a backing
directory that holds only what was synced. Written data stays in memory (pages) until the
file's fsync; a create, unlink, mkdir, rmdir or rename changes only the visible tree until its
directory's fsync. So the backing directory is, at every moment, what a disk would hold after a
power cut: a new tree built over it (`Tree(backing)` after the old one died) is the node's data
dir as it comes back.

An inode's durable place is (parent inode, name) in the backing tree, or a file of its own in
ORPHANS (a file fsynced before its name was, or one renamed away from a synced name before the
new name was synced): such a file has its bytes on disk but no durable name, as after a crash
an inode reached by no directory entry, and a new tree deletes them (what fsck reclaims).
"""

from __future__ import annotations

import dataclasses
import errno
import os
import shutil
import stat
import time

PAGE = 64 * 1024  # bytes held per page of unsynced data
ORPHANS = b".power-orphans"  # in the backing root; never shown through the mount
ROOT = 1


class TreeError(OSError):
    """An operation's errno, for FUSE to return."""

    def __init__(self, code: int) -> None:
        super().__init__(code, os.strerror(code))


@dataclasses.dataclass(eq=False)
class Inode:
    ino: int
    mode: int
    uid: int = 0
    gid: int = 0
    mtime_ns: int = 0
    links: int = 1  # visible names (a dir: 1 while it has its name)
    opens: int = 0  # open handles: an unlinked file lives on while it has any
    durable: tuple[int, bytes] | None = None  # (parent inode or 0 for ORPHANS, name)
    # a directory: the visible entries, and those its backing dir holds
    children: dict[bytes, int] | None = None
    synced: dict[bytes, int] | None = None
    # a file: its visible size; the backing file's bytes still visible (below every truncation
    # since its last sync); pages written since; the backing file, open from the first use.
    size: int = 0
    durable_valid: int = 0
    pages: dict[int, bytearray] = dataclasses.field(default_factory=dict)
    fd: int | None = None

    @property
    def is_dir(self) -> bool:
        return stat.S_ISDIR(self.mode)


class Tree:
    """The visible tree and its durable part. All methods are synchronous: the FUSE layer calls
    them one at a time."""

    def __init__(self, backing: str | bytes) -> None:
        self.backing = os.fsencode(backing)
        orphans = os.path.join(self.backing, ORPHANS)
        shutil.rmtree(orphans, ignore_errors=True)  # a cut's undurable inodes: gone
        os.mkdir(orphans)
        self.nodes: dict[int, Inode] = {}
        self._next = ROOT
        st = os.stat(self.backing)
        root = self._add(st.st_mode, st, None)
        self._scan(root, self.backing)
        self.dirty_bytes = 0  # bytes held in pages (a page counts whole)

    # --- building ---------------------------------------------------------------------------

    def _add(self, mode: int, st: os.stat_result | None, durable) -> Inode:
        node = Inode(self._next, mode, durable=durable)
        self._next += 1
        if st is not None:
            node.uid, node.gid, node.mtime_ns = st.st_uid, st.st_gid, st.st_mtime_ns
        else:
            node.mtime_ns = time.time_ns()
        if node.is_dir:
            node.children, node.synced = {}, {}
        self.nodes[node.ino] = node
        return node

    def _scan(self, parent: Inode, path: bytes) -> None:
        for entry in os.scandir(path):
            if parent.ino == ROOT and entry.name == ORPHANS:
                continue
            st = entry.stat(follow_symlinks=False)
            if not (stat.S_ISDIR(st.st_mode) or stat.S_ISREG(st.st_mode)):
                continue  # kraft writes neither links nor devices
            node = self._add(st.st_mode, st, (parent.ino, entry.name))
            parent.children[entry.name] = parent.synced[entry.name] = node.ino
            if node.is_dir:
                self._scan(node, entry.path)
            else:
                node.size = node.durable_valid = st.st_size

    # --- paths and lookups ------------------------------------------------------------------

    def path(self, node: Inode) -> bytes:
        if node.ino == ROOT:
            return self.backing
        parent, name = node.durable
        if parent == 0:
            return os.path.join(self.backing, ORPHANS, name)
        return os.path.join(self.path(self.nodes[parent]), name)

    def get(self, ino: int) -> Inode:
        node = self.nodes.get(ino)
        if node is None:
            raise TreeError(errno.ENOENT)
        return node

    def dir(self, ino: int) -> Inode:
        node = self.get(ino)
        if not node.is_dir:
            raise TreeError(errno.ENOTDIR)
        return node

    def lookup(self, parent: int, name: bytes) -> Inode:
        ino = self.dir(parent).children.get(name)
        if ino is None:
            raise TreeError(errno.ENOENT)
        return self.nodes[ino]

    # --- the namespace (visible only, until the directory's fsync) --------------------------

    def create(self, parent: int, name: bytes, mode: int, uid: int, gid: int) -> Inode:
        d = self.dir(parent)
        if name in d.children:
            raise TreeError(errno.EEXIST)
        node = self._add(mode, None, None)
        node.uid, node.gid = uid, gid
        d.children[name] = node.ino
        d.mtime_ns = time.time_ns()
        return node

    def unlink(self, parent: int, name: bytes, want_dir: bool) -> None:
        node = self.lookup(parent, name)
        if want_dir and not node.is_dir:
            raise TreeError(errno.ENOTDIR)
        if not want_dir and node.is_dir:
            raise TreeError(errno.EISDIR)
        if node.is_dir and node.children:
            raise TreeError(errno.ENOTEMPTY)
        del self.nodes[parent].children[name]
        node.links -= 1
        self.nodes[parent].mtime_ns = time.time_ns()

    def rename(self, old_parent: int, old: bytes, new_parent: int, new: bytes, flags: int):
        if flags & ~1:  # RENAME_EXCHANGE and RENAME_WHITEOUT: kraft uses neither
            raise TreeError(errno.EINVAL)
        node = self.lookup(old_parent, old)
        target = self.dir(new_parent).children.get(new)
        if target == node.ino:
            return
        if target is not None:
            if flags & 1:  # RENAME_NOREPLACE
                raise TreeError(errno.EEXIST)
            replaced = self.nodes[target]
            if replaced.is_dir != node.is_dir:
                raise TreeError(errno.EISDIR if replaced.is_dir else errno.ENOTDIR)
            if replaced.is_dir and replaced.children:
                raise TreeError(errno.ENOTEMPTY)
            replaced.links -= 1
        del self.nodes[old_parent].children[old]
        self.nodes[new_parent].children[new] = node.ino

    # --- file data (pages, until the file's fsync) ------------------------------------------

    def _fd(self, node: Inode) -> int | None:
        if node.fd is None and node.durable is not None:
            node.fd = os.open(self.path(node), os.O_RDWR)
        return node.fd

    def _durable(self, node: Inode, offset: int, size: int) -> bytes:
        """The backing file's bytes at [offset, offset + size), zeros past durable_valid."""
        end = min(offset + size, node.durable_valid)
        fd = self._fd(node)
        data = os.pread(fd, end - offset, offset) if fd is not None and end > offset else b""
        return data + bytes(size - len(data))

    def read(self, node: Inode, offset: int, size: int) -> bytes:
        size = max(0, min(size, node.size - offset))
        out, at = [], offset
        while at < offset + size:
            index, skip = divmod(at, PAGE)
            n = min(PAGE - skip, offset + size - at)
            page = node.pages.get(index)
            out.append(bytes(page[skip : skip + n]) if page else self._durable(node, at, n))
            at += n
        return b"".join(out)

    def write(self, node: Inode, offset: int, data: bytes) -> int:
        at, view = offset, memoryview(data)
        while view:
            index, skip = divmod(at, PAGE)
            page = node.pages.get(index)
            if page is None:
                page = node.pages[index] = bytearray(self._durable(node, index * PAGE, PAGE))
                self.dirty_bytes += PAGE
            n = min(PAGE - skip, len(view))
            page[skip : skip + n] = view[:n]
            view, at = view[n:], at + n
        node.size = max(node.size, offset + len(data))
        node.mtime_ns = time.time_ns()
        return len(data)

    def truncate(self, node: Inode, size: int) -> None:
        for index in [i for i in node.pages if i * PAGE >= size]:
            del node.pages[index]
            self.dirty_bytes -= PAGE
        page = node.pages.get(size // PAGE)
        if page is not None:
            page[size % PAGE :] = bytes(PAGE - size % PAGE)
        node.durable_valid = min(node.durable_valid, size)
        node.size = size
        node.mtime_ns = time.time_ns()

    # --- fsync: what reaches the backing directory ------------------------------------------

    def fsync(self, node: Inode) -> None:
        if node.is_dir:
            return self.fsync_dir(node)
        if node.durable is None:  # bytes on disk before any name is: an orphan until then
            node.durable = (0, str(node.ino).encode())
            node.fd = os.open(self.path(node), os.O_RDWR | os.O_CREAT, 0o644)
        fd = self._fd(node)
        for index, page in sorted(node.pages.items()):
            n = min(PAGE, node.size - index * PAGE)
            if n > 0:
                os.pwrite(fd, page[:n], index * PAGE)
        os.ftruncate(fd, node.size)
        self.dirty_bytes -= PAGE * len(node.pages)
        node.pages.clear()
        node.durable_valid = node.size
        # No fsync of the backing file: the cut this simulates is this layer's, and the host's
        # own page cache outlives it.

    def fsync_dir(self, d: Inode) -> None:
        """The backing dir's entries become the visible ones."""
        if d.durable is None and d.ino != ROOT:  # a new dir: its entries on disk, it nameless
            d.durable = (0, str(d.ino).encode())
            os.mkdir(self.path(d), stat.S_IMODE(d.mode))
        for name, ino in list(d.synced.items()):
            if d.children.get(name) == ino:
                continue
            node = self.nodes.get(ino)
            del d.synced[name]
            if node is not None and (node.links > 0 or node.opens > 0):
                orphan = str(node.ino).encode()  # alive elsewhere (renamed) or still open
                os.rename(os.path.join(self.path(d), name), self._orphan(orphan))
                node.durable = (0, orphan)
            else:
                self._drop(os.path.join(self.path(d), name), node)
        for name, ino in d.children.items():
            if d.synced.get(name) == ino:
                continue
            node = self.nodes[ino]
            target = os.path.join(self.path(d), name)
            if node.durable is not None:
                old_parent, old_name = node.durable
                os.rename(self.path(node), target)
                if old_parent:  # it moved out of another dir's durable entries
                    self.nodes[old_parent].synced.pop(old_name, None)
            elif node.is_dir:
                os.mkdir(target, stat.S_IMODE(node.mode))
            else:
                os.close(os.open(target, os.O_CREAT | os.O_WRONLY, stat.S_IMODE(node.mode)))
            node.durable = (d.ino, name)
            d.synced[name] = ino

    def _orphan(self, name: bytes) -> bytes:
        return os.path.join(self.backing, ORPHANS, name)

    def _drop(self, path: bytes, node: Inode | None) -> None:
        """A durable entry whose inode is gone: its backing file (or tree) goes too."""
        if node is not None and node.is_dir:
            for child in list(node.synced.values()):
                self._forget_durable(self.nodes.get(child))
            shutil.rmtree(path, ignore_errors=True)
        else:
            os.unlink(path)
        self._forget_durable(node)

    def _forget_durable(self, node: Inode | None) -> None:
        if node is None:
            return
        if node.is_dir:
            for child in node.synced.values():
                self._forget_durable(self.nodes.get(child))
            node.synced = {}
        if node.fd is not None:
            os.close(node.fd)
            node.fd = None
        node.durable = None

    def release(self, node: Inode) -> None:
        """The last handle of an unlinked file closed: it is gone, its orphan file too."""
        node.opens -= 1
        if node.links > 0 or node.opens > 0 or node.is_dir:
            return
        self.dirty_bytes -= PAGE * len(node.pages)
        if node.durable is not None and node.durable[0] == 0:
            os.unlink(self.path(node))
        if node.fd is not None:
            os.close(node.fd)
        del self.nodes[node.ino]

    def sync_all(self) -> None:
        """Everything visible becomes durable (a clean unmount), parents before children."""
        for node in list(self.nodes.values()):
            if not node.is_dir and node.links > 0 and (node.pages or node.durable is None):
                self.fsync(node)
        todo = [self.nodes[ROOT]]
        while todo:
            d = todo.pop()
            self.fsync_dir(d)
            todo.extend(self.nodes[i] for i in d.children.values() if self.nodes[i].is_dir)
