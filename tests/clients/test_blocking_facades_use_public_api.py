"""The blocking Producer and Consumer are built on the async classes' public methods: neither
reads nor replaces a private attribute of the object it wraps (they used to patch its wake-ups
and read its fetcher's and group's internals, which broke silently when those changed)."""

from __future__ import annotations

import ast
import pathlib

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("path", ["clients/consumer/blocking.py", "clients/producer/blocking.py"])
def test_a_facade_touches_only_public_attributes_of_what_it_wraps(path):
    tree = ast.parse((ROOT / path).read_text())
    wrapped = set()  # names bound to the async object: self._async, and aliases of it
    reached = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign) and _is_self_async(node.value):
            wrapped |= {t.id for t in node.targets if isinstance(t, ast.Name)}
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and node.attr.startswith("_"):
            base = node.value
            if _is_self_async(base) or (isinstance(base, ast.Name) and base.id in wrapped):
                reached.append(f"{path}:{node.lineno} .{node.attr}")
    assert not reached, "private attributes reached into:\n" + "\n".join(reached)


def _is_self_async(node) -> bool:
    return (
        isinstance(node, ast.Attribute)
        and node.attr == "_async"
        and isinstance(node.value, ast.Name)
        and node.value.id == "self"
    )
