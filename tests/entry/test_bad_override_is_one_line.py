"""A bad --override stops `kraft dev` / `kraft node` (real processes) with one line naming the key,
the value and what is allowed, exit code 1 and no traceback."""

from __future__ import annotations

import pathlib
import subprocess
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]


@pytest.mark.slow  # a real kraft process per case
@pytest.mark.parametrize(
    "override, expected",
    [
        (
            "log.retention.ms=-5",
            "log.retention.ms: '-5' is not valid (a long in ms, -1 for unlimited)",
        ),
        (
            "log.segment.bytes=10",
            "log.segment.bytes: '10' is not valid (an int in bytes, at least 14)",
        ),
        (
            "message.max.bytes=abc",
            "message.max.bytes: 'abc' is not a number (an int in bytes, at least 0)",
        ),
    ],
)
@pytest.mark.parametrize("command", ["dev", "node"])
def test_bad_override_is_one_line_naming_key_value_and_range(tmp_path, command, override, expected):
    config = tmp_path / "server.properties"
    config.write_text(f"log.dirs={tmp_path / 'data'}\nlisteners=PLAINTEXT://127.0.0.1:0\n")
    where = (
        ["--data", str(tmp_path / "data"), "--port", "0"]
        if command == "dev"
        else ["--config", str(config)]
    )
    result = subprocess.run(
        [sys.executable, "-m", "entry.main", command, *where, "--override", override],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 1
    assert result.stderr.splitlines() == [f"kraft {command}: {expected}"], result.stderr
