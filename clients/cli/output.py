"""How commands print: aligned tables and key/value summaries for people, one-line JSON for scripts,
and progress lines on stderr (rewritten in place on a terminal, one per line in a log)."""

from __future__ import annotations

import json
import sys
from collections.abc import Iterable, Sequence
from typing import Any, TextIO


def cell(value: Any) -> str:
    if value is None:
        return "-"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return f"{value:.2f}"
    if isinstance(value, (list, tuple)):
        return ",".join(cell(v) for v in value) if value else "-"
    return str(value)


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def format_table(headers: Sequence[str], rows: Iterable[Sequence[Any]]) -> str:
    """Columns as wide as their widest cell, two spaces apart; a column whose cells are all
    numbers is right-aligned so digits line up. No trailing spaces."""
    rows = [list(r) for r in rows]
    texts = [[cell(v) for v in r] for r in rows]
    widths = [len(h) for h in headers]
    for r in texts:
        for i, t in enumerate(r):
            widths[i] = max(widths[i], len(t))
    numeric = [
        bool(rows) and all(_is_number(r[i]) or r[i] is None for r in rows)
        for i in range(len(headers))
    ]
    lines = []
    for r in [list(headers)] + texts:
        parts = [t.rjust(widths[i]) if numeric[i] else t.ljust(widths[i]) for i, t in enumerate(r)]
        lines.append("  ".join(parts).rstrip())
    return "\n".join(lines)


def print_table(
    headers: Sequence[str], rows: Iterable[Sequence[Any]], file: TextIO | None = None
) -> None:
    print(format_table(headers, rows), file=file or sys.stdout)


def format_summary(pairs: Sequence[tuple[str, Any]]) -> str:
    """`KEY  value` lines with the keys padded to one width (like rpk's describe summary)."""
    width = max((len(k) for k, _ in pairs), default=0)
    return "\n".join(f"{k.ljust(width)}  {cell(v)}".rstrip() for k, v in pairs)


def dumps(obj: Any) -> str:
    # One line per document so that record streams are JSON lines and `jq` reads everything.
    return json.dumps(obj, sort_keys=False, ensure_ascii=False)


def print_json(obj: Any, file: TextIO | None = None) -> None:
    print(dumps(obj), file=file or sys.stdout)


def plural(count: int, noun: str) -> str:
    return f"{count} {noun}" if count == 1 else f"{count} {noun}s"


def info(message: str) -> None:
    print(message, file=sys.stderr)


class Progress:
    """Progress lines on stderr: rewritten in place on a terminal, appended when redirected."""

    def __init__(self, enabled: bool = True, stream: TextIO | None = None) -> None:
        self.stream = stream or sys.stderr
        self.enabled = enabled
        self.tty = _isatty(self.stream)
        self._open = False

    def update(self, line: str) -> None:
        if not self.enabled:
            return
        if self.tty:
            self.stream.write("\r\x1b[K" + line)
            self._open = True
        else:
            self.stream.write(line + "\n")
        self.stream.flush()

    def done(self) -> None:
        if self._open:
            self.stream.write("\n")
            self.stream.flush()
            self._open = False


def _isatty(stream: TextIO) -> bool:
    try:
        return stream.isatty()
    except (AttributeError, ValueError):
        return False
