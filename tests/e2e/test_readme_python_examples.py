"""The README's Python examples, run as written against a real `kraft dev` node, so they cannot
drift from the library. A block right after `<!-- readme-test: compile only ... -->` is only
compiled (it runs until stopped)."""
from __future__ import annotations

import os
import re
import subprocess
import sys

import pytest

from processes import ROOT, run_kraft

pytestmark = pytest.mark.e2e

COMPILE_ONLY = "<!-- readme-test: compile only"
# Blocks another test runs in the setting they need (the Spark pipeline: its own topics).
RUN_ELSEWHERE = ("<!-- pipeline-example -->",)
README_ADDRESS = "127.0.0.1:9095"


def python_blocks(text: str) -> list[tuple[int, str, bool]]:
    """(line number, code, runnable) of each ```python fence."""
    blocks = []
    for m in re.finditer(r"^```python\n(.*?)^```$", text, flags=re.S | re.M):
        line = text.count("\n", 0, m.start()) + 1
        before = text[:m.start()].rstrip("\n").rsplit("\n", 1)[-1]
        blocks.append((line, m.group(1),
                       not before.startswith(COMPILE_ONLY) and before not in RUN_ELSEWHERE))
    return blocks


def test_the_readme_has_python_examples_and_each_compiles():
    blocks = python_blocks((ROOT / "README.md").read_text())
    assert len(blocks) >= 2 and any(runnable for _l, _c, runnable in blocks)
    for line, code, _runnable in blocks:
        compile(code, f"README.md:{line}", "exec")


def test_the_runnable_examples_run_against_a_real_node(node, tmp_path):
    # The README's shell block before them created the topic they use.
    created = run_kraft("topic", "create", "orders", "-p", "3", "--bootstrap-server", node.address)
    assert created.returncode == 0, created.stderr
    runnable = [(l, c) for l, c, ok in python_blocks((ROOT / "README.md").read_text()) if ok]
    outputs = {}
    for line, code in runnable:
        assert README_ADDRESS in code, f"README.md:{line} does not use {README_ADDRESS}"
        script = tmp_path / f"readme_{line}.py"
        script.write_text(code.replace(README_ADDRESS, node.address))
        done = subprocess.run([sys.executable, str(script)], cwd=tmp_path, capture_output=True,
                              text=True, timeout=60,
                              env={**os.environ, "PYTHONPATH": str(ROOT)})
        assert done.returncode == 0, f"README.md:{line} failed:\n{done.stderr}"
        outputs[line] = done.stdout
    # The first example sends key k1 and reads it back from the partition the key chose.
    first = outputs[min(outputs)]
    assert first.startswith("RecordMetadata(topic='orders', partition="), first
    assert re.search(r"^\d+ 0 b'k1' b'hello'$", first, flags=re.M), first
