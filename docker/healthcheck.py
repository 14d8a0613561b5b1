"""The compose healthcheck: a controller is healthy when `kraft quorum describe` on it names a
leader, a broker when `kraft cluster info` on it lists its own node id.

    kraft-healthcheck controller HOST:PORT
    kraft-healthcheck broker HOST:PORT NODE_ID
    kraft-healthcheck cluster CONTROLLERS BROKERS COUNT   # a leader and COUNT brokers registered

It runs the same client commands as `kraft`, with their JSON output, but builds only the client
part of the command tree (entry/commands.py imports a command's module only when it is asked
for): it runs every few seconds on every node, and importing the node code too would double its
CPU time.
"""

from __future__ import annotations

import contextlib
import io
import json
import sys

from clients import cli
from entry.commands import build_parser


def run_json(argv: list[str]) -> dict:
    parser = build_parser(packages=("clients",))
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        code = cli.run_command(parser.parse_args([*argv, "--format", "json"]))
    if code != 0:
        raise SystemExit(f"kraft {' '.join(argv)} exited with {code}")
    return json.loads(out.getvalue())


def main(argv: list[str]) -> int:
    if len(argv) == 2 and argv[0] == "controller":
        doc = run_json(["quorum", "describe", "--bootstrap-controller", argv[1]])
        leader = doc.get("leader_id")
        if leader is None or leader < 0:
            print(f"no leader yet (epoch {doc.get('leader_epoch')})")
            return 1
        print(f"leader {leader}, epoch {doc.get('leader_epoch')}, this node is {doc.get('role')}")
        return 0
    if len(argv) == 3 and argv[0] == "broker":
        doc = run_json(["cluster", "info", "--bootstrap-server", argv[1]])
        ids = sorted(b["id"] for b in doc.get("brokers", []))
        if int(argv[2]) not in ids:
            print(f"node {argv[2]} is not among the registered brokers {ids}")
            return 1
        print(f"node {argv[2]} registered; brokers {ids}")
        return 0
    if len(argv) == 4 and argv[0] == "cluster":
        quorum = run_json(["quorum", "describe", "--bootstrap-controller", argv[1]])
        leader = quorum.get("leader_id")
        ids = sorted(
            b["id"]
            for b in run_json(["cluster", "info", "--bootstrap-server", argv[2]]).get("brokers", [])
        )
        if leader is None or leader < 0 or len(ids) < int(argv[3]):
            print(f"not ready: leader {leader}, brokers {ids} of {argv[3]}")
            return 1
        print(
            f"ready: controller {leader} leads the quorum (epoch {quorum.get('leader_epoch')}), "
            f"brokers {ids} registered"
        )
        return 0
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
