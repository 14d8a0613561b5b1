"""The power nemesis' model without FUSE (runs anywhere): the backing dir holds exactly what was
synced, and a new tree over it (the disk after a cut) shows that. kraft's own patterns: a
partition dir renamed for deletion, a segment appended across pages and truncated, a file
written at an offset past its end."""

from __future__ import annotations

import errno
import stat

import pytest

from chaos.nemeses.lazy_tree import PAGE, ROOT, Tree, TreeError


def new_file(tree, parent, name):
    return tree.create(parent, name, stat.S_IFREG | 0o644, 0, 0)


def new_dir(tree, parent, name):
    return tree.create(parent, name, stat.S_IFDIR | 0o755, 0, 0)


def after_cut(tree):
    return Tree(tree.backing)


def test_a_partition_dir_renamed_for_deletion_comes_back_unless_its_parent_was_synced(tmp_path):
    tree = Tree(tmp_path)
    part = new_dir(tree, ROOT, b"chaos-0")
    seg = new_file(tree, part.ino, b"00000000000000000000.log")
    tree.write(seg, 0, b"batch")
    tree.fsync(seg)
    tree.fsync_dir(part)
    tree.fsync_dir(tree.get(ROOT))
    tree.rename(ROOT, b"chaos-0", ROOT, b"chaos-0.abc-delete", 0)

    back = after_cut(tree)
    seg_back = back.lookup(back.lookup(ROOT, b"chaos-0").ino, b"00000000000000000000.log")
    assert back.read(seg_back, 0, 100) == b"batch"

    tree.fsync_dir(tree.get(ROOT))
    back = after_cut(tree)
    assert sorted(back.get(ROOT).children) == [b"chaos-0.abc-delete"]
    doomed = back.lookup(ROOT, b"chaos-0.abc-delete")
    assert back.read(back.lookup(doomed.ino, b"00000000000000000000.log"), 0, 9) == b"batch"


def test_appends_across_pages_keep_only_what_was_synced(tmp_path):
    tree = Tree(tmp_path)
    seg = new_file(tree, ROOT, b"seg")
    tree.fsync_dir(tree.get(ROOT))
    first = bytes(range(256)) * (PAGE // 256) + b"tail"  # a page and a bit
    tree.write(seg, 0, first)
    tree.fsync(seg)
    tree.write(seg, len(first), b"unsynced" * 1000)
    assert tree.read(seg, PAGE - 2, 8) == first[PAGE - 2 :] + b"un"
    back = after_cut(tree)
    seg_back = back.lookup(ROOT, b"seg")
    assert seg_back.size == len(first) and back.read(seg_back, 0, 10**6) == first


def test_a_write_past_the_end_leaves_zeros_and_truncate_then_extend_hides_old_bytes(tmp_path):
    tree = Tree(tmp_path)
    f = new_file(tree, ROOT, b"index")
    tree.write(f, 0, b"x" * 100)
    tree.fsync(f)
    tree.truncate(f, 10)
    tree.write(f, 50, b"y")
    assert tree.read(f, 0, 100) == b"x" * 10 + bytes(40) + b"y"
    tree.fsync(f)
    tree.fsync_dir(tree.get(ROOT))
    back = after_cut(tree)
    assert back.read(back.lookup(ROOT, b"index"), 0, 100) == b"x" * 10 + bytes(40) + b"y"


def test_a_cross_dir_rename_becomes_durable_with_the_target_dir(tmp_path):
    tree = Tree(tmp_path)
    a, b = new_dir(tree, ROOT, b"a"), new_dir(tree, ROOT, b"b")
    f = new_file(tree, a.ino, b"f")
    tree.write(f, 0, b"data")
    tree.sync_all()
    tree.rename(a.ino, b"f", b.ino, b"g", 0)
    tree.fsync_dir(b)
    back = after_cut(tree)
    assert back.get(back.lookup(ROOT, b"a").ino).children == {}
    assert back.read(back.lookup(back.lookup(ROOT, b"b").ino, b"g"), 0, 9) == b"data"


def test_bad_namespace_operations_fail_with_their_errno(tmp_path):
    tree = Tree(tmp_path)
    d = new_dir(tree, ROOT, b"d")
    new_file(tree, d.ino, b"f")
    cases = [
        (lambda: new_file(tree, ROOT, b"d"), errno.EEXIST),
        (lambda: tree.unlink(ROOT, b"d", want_dir=True), errno.ENOTEMPTY),
        (lambda: tree.unlink(ROOT, b"d", want_dir=False), errno.EISDIR),
        (lambda: tree.lookup(ROOT, b"nope"), errno.ENOENT),
        (lambda: tree.rename(ROOT, b"d", ROOT, b"e", 2), errno.EINVAL),  # RENAME_EXCHANGE
    ]
    for call, code in cases:
        with pytest.raises(TreeError) as caught:
            call()
        assert caught.value.errno == code
