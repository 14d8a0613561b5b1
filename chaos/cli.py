"""`kraft audit`: the command line of the PySpark consistency audit. entry/commands.py registers it
(clients must not import chaos); Spark is imported only when the command runs."""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Callable
from pathlib import Path

EXAMPLES = """examples:
  kraft audit --data run/nodes --history run/history.jsonl --faults run/faults.jsonl --out run
                                 # what `chaos/run.sh --out run` runs after its drain
  kraft audit --data /tmp/c1 --history run/history.jsonl --faults run/faults.jsonl --out run/audit
  kraft audit --data /tmp/c1/node-4/data /tmp/c1/node-5/data      # segment files only
  kraft audit --data /tmp/c1 --history h.jsonl --master spark://host:7077 --format json

exit status: 0 no violation, 1 violations (each names its check, partition, offsets, replicas
and values), 2 input that cannot be read. Reports: OUT/report.json and OUT/report.html."""


def register(
    subparsers: argparse._SubParsersAction, add_common: Callable[[argparse.ArgumentParser], None]
) -> None:
    """audit reads files, not a cluster: its own --format and --debug, no add_common."""
    p = subparsers.add_parser(
        "audit",
        help="check replica logs, metadata logs and a chaos history for consistency",
        description="Check every replica's segment files, every controller's metadata log and a\n"
        "Jepsen-style history (chaos/history.py) with a PySpark job.",
        epilog=EXAMPLES,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument(
        "--data",
        nargs="+",
        action="extend",
        default=[],
        metavar="DIR",
        help="node data dirs, or dirs holding them (e.g. a `kraft dev --data` dir)",
    )
    p.add_argument("--history", metavar="FILE", help="the workload's history.jsonl")
    p.add_argument(
        "--txn-history",
        metavar="FILE",
        help="the transactional workload's txn_history.jsonl (exactly-once checks)",
    )
    p.add_argument(
        "--faults", metavar="FILE", help="the nemesis' faults.jsonl (shaded in report.html)"
    )
    p.add_argument(
        "--out",
        default="kraft-audit",
        metavar="DIR",
        help="where report.json and report.html go (default ./kraft-audit)",
    )
    p.add_argument(
        "--master",
        default="local[*]",
        help="Spark master (default local[*]; e.g. spark://host:7077)",
    )
    p.add_argument(
        "--format",
        choices=("table", "json"),
        default="table",
        help="table: a readable summary (default); json: report.json on stdout",
    )
    p.add_argument("--debug", action="store_true", help="show tracebacks of failures")
    p.set_defaults(func=run)


class _Progress:
    def __init__(self) -> None:
        self.started = time.monotonic()

    def __call__(self, line: str) -> None:
        print(
            f"kraft audit [{time.monotonic() - self.started:5.1f}s]: {line}",
            file=sys.stderr,
            flush=True,
        )


def run(args: argparse.Namespace) -> int:
    from chaos.audit.inputs import AuditInputError
    from chaos.history import HistoryError

    try:
        return _run(args)
    except (AuditInputError, HistoryError) as exc:
        if args.debug:
            raise
        print(f"kraft audit: {exc}", file=sys.stderr)
        return 2


def _load_inputs(args):
    from chaos.audit.inputs import AuditInputError, find_node_dirs
    from chaos.history import read_faults

    if not args.data and not args.history and not args.txn_history:
        raise AuditInputError(
            "nothing to audit: give --data DIR... and/or --history FILE and/or --txn-history FILE"
        )
    if args.data:
        find_node_dirs(args.data)  # fails fast, before Spark starts
    for name in ("history", "txn_history", "faults"):
        path = getattr(args, name)
        if path and not Path(path).is_file():
            raise AuditInputError(f"--{name.replace('_', '-')} {path}: no such file")
    faults = read_faults(args.faults) if args.faults else []
    return args.history, faults  # the history is read by Spark's executors


def _session(args, progress):
    """The active session if there is one (it is not ours to stop), else a new one."""
    try:
        from pyspark.sql import SparkSession
    except ImportError:
        raise RuntimeError(
            "PySpark is not installed; install the audit extra with: "
            "pip install 'kraft[audit]' (it also needs Java 17)"
        ) from None
    active = SparkSession.getActiveSession()
    if active is not None:
        return active, False
    from chaos.audit.job import create_session

    progress(f"starting Spark ({args.master})")
    try:
        return create_session(args.master), True
    except Exception as exc:  # noqa: BLE001 - py4j and pyspark raise many types for one cause
        raise RuntimeError(
            f"cannot start Spark with master {args.master}: "
            f"{' '.join(str(exc).split())[:300]}; check that Java 17 is installed "
            f"(java -version) and the master is reachable"
        ) from None


def _run(args) -> int:
    progress = _Progress()
    history, faults = _load_inputs(args)
    try:
        spark, owned = _session(args, progress)
    except RuntimeError as exc:
        if args.debug:
            raise
        print(f"kraft audit: {exc}", file=sys.stderr)
        return 2
    try:
        from chaos.audit.job import run_audit
        from chaos.audit.report import summary_text, write_reports

        result = run_audit(spark, args.data or None, history, progress, args.txn_history)
    finally:
        if owned:
            spark.stop()
    result.fault_costs = fault_costs(faults)
    result.notices += torn_tail_notices(faults, result.stats.get("torn_replicas", ()))
    inputs = {
        "data": args.data,
        "history": args.history,
        "txn_history": args.txn_history,
        "faults": args.faults,
        "master": args.master,
    }
    json_path, html_path = write_reports(result, Path(args.out), inputs, faults)
    if args.format == "json":
        print(json.dumps(json.loads(json_path.read_text()), indent=1))
    else:
        print(summary_text(result))
        print(f"  reports: {json_path}, {html_path}")
    return 0 if result.ok else 1


def fault_costs(faults) -> list[str]:
    """What the run's faults may cost (chaos.audit.fault_costs), a line per nemesis."""
    from chaos.audit.fault_costs import notices

    return notices(faults)


def torn_tail_notices(faults, torn_replicas) -> list[str]:
    """A torn tail that no fault which crashes a node or fills its disk explains."""
    from chaos.audit.fault_costs import crashed_replicas

    unexplained = sorted(set(torn_replicas) - crashed_replicas(faults))
    if not faults or not unexplained:
        return []
    return [
        f"replicas {unexplained} have a torn tail though no kill, corrupt or disk-full fault "
        f"hit them: look for a SIGKILL at the end of the run (nemesis.log) or a crash in "
        f"their node.log"
    ]
