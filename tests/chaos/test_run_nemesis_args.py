"""`--nemesis` takes any mix of the nemeses or `all`, refuses a name it does not know, and
`--docker` refuses the nemeses only the netns cluster runs, before anything is set up."""

from __future__ import annotations

import argparse

import pytest

from chaos import run
from chaos.nemesis import NEMESES


def test_all_stands_for_every_nemesis_once():
    assert run.nemesis_list("all") == list(NEMESES)
    assert run.nemesis_list("net, all") == ["net"] + [n for n in NEMESES if n != "net"]
    assert run.nemesis_list("clock,corrupt") == ["clock", "corrupt"]


def test_an_unknown_nemesis_is_refused_with_the_choices():
    with pytest.raises(argparse.ArgumentTypeError, match="choose from kill.*or all"):
        run.nemesis_list("kill,flood")


def test_docker_refuses_what_only_the_netns_cluster_runs(capsys):
    assert run.main(["--docker", "--nemesis", "kill,disk-full", "--duration", "1s"]) == 2
    assert "only the netns cluster runs disk-full" in capsys.readouterr().err
