"""A test that needs a program the machine lacks skips, naming it and its install command."""

import pytest
from system_tools import INSTALL, missing_tool, require_tool


def test_a_missing_program_is_named_with_its_install_command(monkeypatch, tmp_path):
    monkeypatch.setenv("PATH", str(tmp_path))  # nothing to run in there
    monkeypatch.delenv("JAVA_HOME", raising=False)
    for tool in ("java", "debootstrap"):
        assert missing_tool(tool) == f"{tool} is not installed; install it with: {INSTALL[tool]}"
    with pytest.raises(pytest.skip.Exception, match="apt-get install -y debootstrap"):
        require_tool("debootstrap")


def test_a_program_on_the_path_is_not_missing(monkeypatch, tmp_path):
    program = tmp_path / "debootstrap"
    program.write_text("#!/bin/sh\n")
    program.chmod(0o755)
    monkeypatch.setenv("PATH", str(tmp_path))
    assert missing_tool("debootstrap") is None
    require_tool("debootstrap")


def test_java_is_found_through_java_home(monkeypatch, tmp_path):
    (tmp_path / "bin").mkdir()
    java = tmp_path / "bin" / "java"
    java.write_text("#!/bin/sh\n")
    java.chmod(0o755)
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    monkeypatch.setenv("JAVA_HOME", str(tmp_path))
    assert missing_tool("java") is None
