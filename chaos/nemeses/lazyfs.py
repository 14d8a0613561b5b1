"""The `power` nemesis' FUSE filesystem (pyfuse3): a node's data dir mounted over a backing
directory that receives only what was synced (chaos/nemeses/lazy_tree.py), as Jepsen's lazyfs
does. A power cut is this process killed (SIGKILL): whatever it held in memory is gone, and the
next mount over the same backing dir shows what a disk would after the cut. SIGTERM is a clean
unmount: everything is synced first.

    python -m chaos.nemeses.lazyfs BACKING MOUNTPOINT
"""

from __future__ import annotations

import errno
import os
import signal
import stat
import sys

try:
    import pyfuse3
    import trio
except ImportError:  # the optional extra `power`; chaos.nemeses.power says what to install
    pyfuse3 = None

from chaos.nemeses.lazy_tree import Inode, Tree, TreeError

TIMEOUT_S = 60.0  # the kernel may cache names and attributes: nothing but us changes them


def _errors(fn):
    """Our OSErrors as FUSE's replies (the errno reaches the caller)."""

    async def wrapped(*args, **kwargs):
        try:
            return await fn(*args, **kwargs)
        except OSError as e:
            raise pyfuse3.FUSEError(e.errno or errno.EIO) from None

    wrapped.__name__ = fn.__name__
    return wrapped


class LazyOps(pyfuse3.Operations if pyfuse3 else object):
    def __init__(self, tree: Tree) -> None:
        super().__init__()
        self.tree = tree

    def _attr(self, node: Inode):
        a = pyfuse3.EntryAttributes()
        a.st_ino = node.ino
        a.st_mode = node.mode
        a.st_nlink = max(node.links, 0) + (1 if node.is_dir else 0)
        a.st_uid, a.st_gid = node.uid, node.gid
        a.st_size = 4096 if node.is_dir else node.size
        a.st_blksize = 4096
        a.st_blocks = (a.st_size + 511) // 512
        a.st_atime_ns = a.st_mtime_ns = a.st_ctime_ns = node.mtime_ns
        a.entry_timeout = a.attr_timeout = TIMEOUT_S
        return a

    @_errors
    async def lookup(self, parent_inode, name, ctx=None):
        if name == b".":
            return self._attr(self.tree.dir(parent_inode))
        return self._attr(self.tree.lookup(parent_inode, name))

    @_errors
    async def getattr(self, inode, ctx=None):
        return self._attr(self.tree.get(inode))

    @_errors
    async def setattr(self, inode, attr, fields, fh, ctx):
        node = self.tree.get(inode)
        if fields.update_size:
            if node.is_dir:
                raise TreeError(errno.EISDIR)
            self.tree.truncate(node, attr.st_size)
        if fields.update_mode:
            node.mode = stat.S_IFMT(node.mode) | stat.S_IMODE(attr.st_mode)
        if fields.update_uid:
            node.uid = attr.st_uid
        if fields.update_gid:
            node.gid = attr.st_gid
        if fields.update_mtime:
            node.mtime_ns = attr.st_mtime_ns
        return self._attr(node)

    @_errors
    async def mkdir(self, parent_inode, name, mode, ctx):
        node = self.tree.create(parent_inode, name, stat.S_IFDIR | mode, ctx.uid, ctx.gid)
        return self._attr(node)

    @_errors
    async def create(self, parent_inode, name, mode, flags, ctx):
        node = self.tree.create(parent_inode, name, stat.S_IFREG | mode, ctx.uid, ctx.gid)
        node.opens += 1
        return pyfuse3.FileInfo(fh=node.ino, keep_cache=True), self._attr(node)

    @_errors
    async def mknod(self, parent_inode, name, mode, rdev, ctx):
        if not stat.S_ISREG(mode):
            raise TreeError(errno.EPERM)  # only plain files: kraft makes nothing else
        return self._attr(self.tree.create(parent_inode, name, mode, ctx.uid, ctx.gid))

    @_errors
    async def unlink(self, parent_inode, name, ctx):
        self.tree.unlink(parent_inode, name, want_dir=False)

    @_errors
    async def rmdir(self, parent_inode, name, ctx):
        self.tree.unlink(parent_inode, name, want_dir=True)

    @_errors
    async def rename(self, parent_inode_old, name_old, parent_inode_new, name_new, flags, ctx):
        self.tree.rename(parent_inode_old, name_old, parent_inode_new, name_new, flags)

    @_errors
    async def open(self, inode, flags, ctx):
        node = self.tree.get(inode)
        if flags & os.O_TRUNC:
            self.tree.truncate(node, 0)
        node.opens += 1
        return pyfuse3.FileInfo(fh=inode, keep_cache=True)

    @_errors
    async def read(self, fh, off, size):
        return self.tree.read(self.tree.get(fh), off, size)

    @_errors
    async def write(self, fh, off, buf):
        return self.tree.write(self.tree.get(fh), off, buf)

    async def flush(self, fh):
        pass  # close(2) makes nothing durable, as on a disk

    @_errors
    async def release(self, fh):
        self.tree.release(self.tree.get(fh))

    @_errors
    async def fsync(self, fh, datasync):
        self.tree.fsync(self.tree.get(fh))

    @_errors
    async def opendir(self, inode, ctx):
        self.tree.dir(inode)
        return inode

    @_errors
    async def readdir(self, fh, start_id, token):
        # Entries in name order, each's position its index + 1: stable enough for a listing
        # that nothing renames meanwhile (kraft lists its dirs at startup and on log moves).
        d = self.tree.dir(fh)
        names = sorted(d.children)
        for i in range(start_id, len(names)):
            node = self.tree.nodes[d.children[names[i]]]
            if not pyfuse3.readdir_reply(token, names[i], self._attr(node), i + 1):
                break

    async def releasedir(self, fh):
        pass

    @_errors
    async def fsyncdir(self, fh, datasync):
        self.tree.fsync_dir(self.tree.dir(fh))

    @_errors
    async def statfs(self, ctx):
        st = os.statvfs(self.tree.backing)
        out = pyfuse3.StatvfsData()
        held = self.tree.dirty_bytes // st.f_frsize  # unsynced pages will take room too
        out.f_bsize, out.f_frsize = st.f_bsize, st.f_frsize
        out.f_blocks, out.f_files, out.f_ffree, out.f_favail = (
            st.f_blocks,
            st.f_files,
            st.f_ffree,
            st.f_favail,
        )
        out.f_bfree = max(0, st.f_bfree - held)
        out.f_bavail = max(0, st.f_bavail - held)
        out.f_namemax = st.f_namemax
        return out


async def _serve(tree: Tree) -> None:
    async with trio.open_nursery() as nursery:

        async def on_term():
            with trio.open_signal_receiver(signal.SIGTERM, signal.SIGINT) as signals:
                async for _ in signals:
                    tree.sync_all()  # a clean unmount loses nothing
                    pyfuse3.terminate()
                    return

        nursery.start_soon(on_term)
        await pyfuse3.main()
        nursery.cancel_scope.cancel()


def main(argv: list[str]) -> int:
    if len(argv) != 2:
        print(__doc__.strip().splitlines()[-1].strip(), file=sys.stderr)
        return 2
    if pyfuse3 is None:
        print("lazyfs: pyfuse3 is not installed (pip install 'kraft[power]')", file=sys.stderr)
        return 2
    backing, mountpoint = argv
    tree = Tree(backing)
    options = set(pyfuse3.default_options)
    options.add(f"fsname=kraft-power:{os.path.abspath(backing)}")
    options.discard("default_permissions")  # root runs the nodes; nothing to check
    pyfuse3.init(LazyOps(tree), mountpoint, options)
    try:
        trio.run(_serve, tree)
    finally:
        pyfuse3.close(unmount=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
