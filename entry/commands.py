"""The `kraft` command tree, in one place: every command module, grouped as `kraft --help` lists
them. Each module has register(subparsers, add_common) and is imported only when the tree is
built, so a tree of the client commands alone (the docker healthcheck) loads no broker code."""

from __future__ import annotations

import argparse
import importlib
import textwrap

from clients.cli import add_common_options, version_line

# (title, modules) in the order --help shows them; a module may register several commands.
TREE = (
    ("run a cluster", ("entry.node_commands",)),
    ("topics and records", ("clients.cli.topic", "clients.cli.produce", "clients.cli.consume")),
    ("consumer groups and transactions", ("clients.cli.group", "clients.cli.transactions")),
    (
        "the cluster",
        ("clients.cli.cluster", "clients.cli.quorum", "clients.cli.doctor", "clients.cli.top"),
    ),
    ("security", ("clients.cli.acl", "clients.cli.user", "entry.secure_files")),
    ("measure and check", ("clients.cli.bench", "chaos.cli")),
)

EXAMPLES = """examples:
  kraft dev                                  # a local broker: Kafka clients on 127.0.0.1:9092, kraft's on 9095
  kraft topic create orders -p 3
  printf 'k1:hello\\nk2:world\\n' | kraft produce orders --key-separator :
  kraft consume orders --from-beginning --max-messages 2
  kraft bench produce --num-records 1000000 --record-size 100

`kraft COMMAND --help` shows a command's options and examples."""


def build_parser(packages: tuple[str, ...] | None = None) -> argparse.ArgumentParser:
    """The whole tree, or only the commands whose module lies in one of `packages` (e.g.
    ("clients",)). A leaf's set_defaults holds func(args) -> exit code, and runner(args) when the
    command is not run the clients' way (entry/main.py)."""
    parser = argparse.ArgumentParser(
        prog="kraft",
        usage="kraft [-h] [--version] COMMAND ...",
        description="A Kafka-style distributed log.",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--version", action="version", version=version_line())
    # The commands are listed by group in the description below, not in argparse's one block.
    sub = parser.add_subparsers(
        dest="command", metavar="COMMAND", required=True, prog="kraft", help=argparse.SUPPRESS
    )
    listing = []
    for title, modules in TREE:
        first = len(sub._choices_actions)
        for name in modules:
            if packages is None or name.split(".")[0] in packages:
                importlib.import_module(name).register(sub, add_common_options)
        if sub._choices_actions[first:]:
            listing.append((title, [(a.dest, a.help) for a in sub._choices_actions[first:]]))
    width = max(len(name) for _t, commands in listing for name, _h in commands)
    parser.description += "\n" + "".join(
        f"\n{title}:\n" + "".join(_listed(name, help, width) for name, help in commands)
        for title, commands in listing
    )
    parser.epilog = EXAMPLES
    return parser


def _listed(name: str, help: str, width: int) -> str:
    """'  topic   create, list, ...' wrapped at 100 columns under its help's first column."""
    return (
        textwrap.fill(
            help, 100, initial_indent=f"  {name:<{width}}  ", subsequent_indent=" " * (width + 4)
        )
        + "\n"
    )
