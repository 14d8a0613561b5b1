"""Programs some tests need that a fresh machine may lack (a JVM for Spark, debootstrap for the
Docker image, kcat for the Kafka listener's tests): such a test skips, naming the program and the command that installs it."""

from __future__ import annotations

import os
import shutil
import subprocess

import pytest

# tool -> the command that installs it (Debian's packages, as .ci/run installs them).
INSTALL = {
    "java": "apt-get install -y default-jre-headless",
    "debootstrap": "apt-get install -y debootstrap",
    "kcat": "apt-get install -y kcat",
}
# The power nemesis' FUSE filesystem: pyfuse3 builds against libfuse3 (the `power` extra).
INSTALL_POWER = "apt-get install -y fuse3 libfuse3-dev pkg-config && pip install -e '.[power]'"
# The Dockerfile's base image: docker/build-images.sh builds it with debootstrap when it is
# neither present nor pullable (no registry reachable).
DOCKER_BASE_IMAGE = "python:3.11-slim"


def missing_tool(tool: str) -> str | None:
    """Why `tool` cannot be run here (None when it can): the skip reason, with its install
    command."""
    if (
        tool == "java"
        and os.environ.get("JAVA_HOME")
        and os.access(os.path.join(os.environ["JAVA_HOME"], "bin", "java"), os.X_OK)
    ):
        return None  # PySpark finds the JVM through JAVA_HOME as well as PATH
    if shutil.which(tool) is not None:
        return None
    return f"{tool} is not installed; install it with: {INSTALL[tool]}"


def require_tool(tool: str, capsys=None) -> None:
    """Skip the calling test unless `tool` can be run. With `capsys` the reason is printed too:
    pytest shows skip reasons only with -rs, and some skips should be read in any log."""
    reason = missing_tool(tool)
    if reason is None:
        return
    if capsys is not None:
        with capsys.disabled():
            print(f"\nSKIPPED: {reason}", flush=True)
    pytest.skip(reason)


def requires_tool(tool: str) -> pytest.MarkDecorator:
    """The same as a marker: `@requires_tool("java")` or `pytestmark = [requires_tool("java")]`."""
    return pytest.mark.skipif(missing_tool(tool) is not None, reason=missing_tool(tool) or "")


def require_docker_image_tools(capsys=None) -> None:
    """docker/build-images.sh needs debootstrap unless the base image is already here (a Docker
    engine is checked by the caller)."""
    present = (
        subprocess.run(
            ["docker", "image", "inspect", DOCKER_BASE_IMAGE], capture_output=True, timeout=60
        ).returncode
        == 0
    )
    if not present:
        require_tool("debootstrap", capsys)
