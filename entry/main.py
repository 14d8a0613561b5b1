"""The `kraft` command: parses argv with the one command tree (entry/commands.py) and runs the
chosen command, the node commands their way (entry/node_commands.py), the others the clients'."""

from __future__ import annotations

import os
import sys

# grpc's C core logs its own lines (e.g. a failed bind) to stderr; users get ours instead, one
# line each. It reads this once, at import, so it is set before grpc is first imported.
if "--debug" not in sys.argv:
    os.environ.setdefault("GRPC_VERBOSITY", "NONE")

from clients.cli import run_command  # noqa: E402
from entry.commands import build_parser  # noqa: E402

__all__ = ["build_parser", "main"]


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    return getattr(args, "runner", run_command)(args)


if __name__ == "__main__":
    sys.exit(main())
