"""Where this checkout lives and how to read a node's log from a byte offset: shared by the
chaos cluster launchers and `kraft dev`, which both start `kraft node` processes."""

from __future__ import annotations

import pathlib

ROOT = pathlib.Path(__file__).resolve().parents[1]


def log_since(path: pathlib.Path, offset: int) -> str:
    try:
        with open(path, "rb") as f:
            f.seek(offset)
            return f.read().decode(errors="replace")
    except FileNotFoundError:
        return ""


def log_tail(path: pathlib.Path, offset: int, lines: int = 3) -> str:
    last = [line for line in log_since(path, offset).splitlines() if line.strip()][-lines:]
    return "".join(f"\n  | {line}" for line in last)
