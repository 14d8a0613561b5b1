"""The import direction is one-way: clients <- kraft <- broker, and chaos beside broker (it reads
kraft's logs and talks through clients); only entry (the `kraft` command) sits above both. A
lower layer naming a higher one (even inside a function) fails here, with the file and line."""
import pathlib
import re

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[1]
FORBIDDEN = {
    "clients": ("kraft", "broker", "chaos", "entry"),
    "kraft": ("broker", "chaos", "entry"),
    "broker": ("chaos", "entry"),
    "chaos": ("broker", "entry"),
}


@pytest.mark.parametrize("package", sorted(FORBIDDEN))
def test_lower_layers_never_import_higher_ones(package):
    pattern = re.compile(r"^\s*(from|import)\s+(%s)\b" % "|".join(FORBIDDEN[package]))
    offenders = [f"{path.relative_to(ROOT)}:{n}: {line.strip()}"
                 for path in sorted((ROOT / package).rglob("*.py"))
                 for n, line in enumerate(path.read_text().splitlines(), 1) if pattern.match(line)]
    assert offenders == []


def test_the_pattern_catches_an_upward_import_inside_a_function():
    pattern = re.compile(r"^\s*(from|import)\s+(%s)\b" % "|".join(FORBIDDEN["chaos"]))
    assert pattern.match("        from entry.dev import broker_views")
    assert not pattern.match("from chaos.node_logs import ROOT")
