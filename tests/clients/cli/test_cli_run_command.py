"""run_command turns a failure into one line of help and exit 1 (traceback only with --debug),
Ctrl-C into 130, and passes a command's own exit code through."""

from __future__ import annotations

import argparse

from clients.cli import run_command
from clients.errors import ErrorCode, KraftError


def _args(func, **extra) -> argparse.Namespace:
    return argparse.Namespace(func=func, debug=False, bootstrap_server="h:9092", **extra)


def _raise(exc):
    def func(args):
        raise exc

    return func


def test_kraft_error_is_one_line_and_exit_1(capsys):
    code = run_command(_args(_raise(KraftError(ErrorCode.INVALID_CONFIG, "bad\nvalue"))))
    err = capsys.readouterr().err
    assert code == 1
    assert err == "error: INVALID_CONFIG: bad value\n"
    assert "Traceback" not in err


def test_debug_adds_the_traceback(capsys):
    args = _args(_raise(KraftError(ErrorCode.INVALID_CONFIG, "bad")))
    args.debug = True
    assert run_command(args) == 1
    err = capsys.readouterr().err
    assert "Traceback (most recent call last)" in err
    assert err.rstrip().splitlines()[-1] == "error: INVALID_CONFIG: bad"


def test_unreachable_cluster_says_how_to_get_one(capsys):
    code = run_command(_args(_raise(KraftError(ErrorCode.NETWORK_EXCEPTION, "node unreachable"))))
    err = capsys.readouterr().err
    assert code == 1 and len(err.splitlines()) == 1
    assert "cannot reach the cluster at h:9092" in err and "kraft dev" in err


def test_os_and_value_errors_are_one_line(capsys):
    assert run_command(_args(_raise(ConnectionRefusedError(111, "Connection refused")))) == 1
    assert run_command(_args(_raise(ValueError("retention.ms must be a number")))) == 1
    lines = capsys.readouterr().err.splitlines()
    assert len(lines) == 2 and "cannot reach" in lines[0]
    assert lines[1] == "error: retention.ms must be a number"


def test_ctrl_c_exits_130(capsys):
    assert run_command(_args(_raise(KeyboardInterrupt()))) == 130
    assert "Traceback" not in capsys.readouterr().err


def test_exit_code_passes_through():
    assert run_command(_args(lambda args: 3)) == 3
    assert run_command(_args(lambda args: None)) == 0


def test_bugs_are_not_hidden():
    # A programming error is not a user's mistake: it keeps its traceback.
    try:
        run_command(_args(_raise(AttributeError("oops"))))
    except AttributeError:
        return
    raise AssertionError("AttributeError was swallowed")
