"""The one `kraft` command tree: --help lists every command under its group, every parser in the
tree (command and subcommand) shows a `kraft ...` example in its --help, every command module
registers the same way, and the client commands alone load no broker code."""

from __future__ import annotations

import argparse
import importlib
import inspect
import subprocess
import sys

import pytest

from entry.commands import TREE, build_parser


def _children(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return dict(action.choices)
    return {}


def _walk(parser, path=()):
    yield path, parser
    for name, child in _children(parser).items():
        yield from _walk(child, path + (name,))


ALL = [path for path, _p in _walk(build_parser()) if path]


def test_top_level_help_lists_every_command_under_a_group(capsys):
    with pytest.raises(SystemExit) as exit_:
        build_parser().parse_args(["--help"])
    assert exit_.value.code == 0
    text = capsys.readouterr().out
    for title, _modules in TREE:
        assert f"\n{title}:\n" in text
    groups = text[: text.index("\noptions:")]
    listed = [
        line.split()[0]
        for line in groups.splitlines()
        if line.startswith("  ") and not line.startswith("   ")
    ]
    assert sorted(listed) == sorted(_children(build_parser()))


@pytest.mark.parametrize("path", ALL, ids=" ".join)
def test_every_help_shows_an_example_of_itself(path, capsys):
    with pytest.raises(SystemExit):
        build_parser().parse_args([*path, "--help"])
    text = capsys.readouterr().out
    assert "example" in text, text
    after = text[text.index("example") :]
    assert any(line.strip().startswith("kraft " + " ".join(path)) for line in after.splitlines()), (
        text
    )


def test_no_two_modules_register_one_name():
    parser = build_parser()
    action = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    assert len(action._choices_actions) == len(action.choices)


@pytest.mark.parametrize("module", [m for _t, modules in TREE for m in modules])
def test_every_command_module_registers_the_same_way(module):
    params = list(inspect.signature(importlib.import_module(module).register).parameters)
    assert len(params) == 2, params


def test_every_leaf_has_a_function():
    for path, parser in _walk(build_parser()):
        if path and not _children(parser):
            assert callable(parser.get_default("func")), path


def test_the_client_commands_alone_load_no_broker_and_no_chaos():
    probe = (
        "import sys; from entry.commands import build_parser; "
        "p = build_parser(packages=('clients',)); "
        "print(sorted({m.split('.')[0] for m in sys.modules} & {'broker', 'chaos'}))"
    )
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "[]"
