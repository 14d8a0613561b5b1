"""A node locks its data dir (a second node on it refuses with one line naming the dir and the
holder) and raises its open-file soft limit to the hard limit (real processes)."""

from __future__ import annotations

import resource

from processes import NodeProcess


def test_a_second_node_on_the_same_data_dir_refuses_naming_the_dir_and_holder(node, kraft):
    second = kraft("dev", "--data", str(node.data_dir), "--port", "0", timeout=60)
    assert second.returncode == 1, second.stderr
    lines = [line for line in second.stderr.splitlines() if line.startswith("kraft dev:")]
    assert len(lines) == 1, second.stderr
    assert str(node.data_dir) in lines[0] and f"pid {node.proc.pid}" in lines[0]
    assert "Traceback" not in second.stderr
    # The first node is untouched and still the only writer.
    assert node.proc.poll() is None


def test_the_lock_is_released_by_a_kill9_so_a_restart_starts(tmp_path):
    first = NodeProcess(tmp_path / "n").start()
    first.kill9()
    again = NodeProcess(tmp_path / "n").start()
    try:
        assert again.proc.poll() is None
    finally:
        again.stop()


def test_the_open_file_soft_limit_is_raised_to_the_hard_limit(tmp_path):
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    low = min(256, hard)

    def lower() -> None:
        resource.setrlimit(resource.RLIMIT_NOFILE, (low, hard))

    n = NodeProcess(tmp_path / "n", preexec_fn=lower).start()
    try:
        limits = open(f"/proc/{n.proc.pid}/limits").read()
        row = next(line for line in limits.splitlines() if line.startswith("Max open files"))
        assert row.split()[3:5] == [str(hard), str(hard)], row
    finally:
        n.stop()
