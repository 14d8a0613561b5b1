"""A user pointing a client at the wrong kind of listener (a controller's port as a broker) is
told which it is and what to use; a broker's port as a controller still describes the quorum
(brokers forward DescribeQuorum); `kraft --version` answers."""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.e2e


def test_a_controller_port_is_named_as_such_for_every_client_command(node, kraft):
    controller = node.controller_address
    assert controller, "kraft dev printed no controller address"
    for args, stdin in (
        (("topic", "list"), None),
        (("produce", "t"), "hello\n"),
        (("consume", "t", "--max-messages", "1", "--timeout-ms", "2000"), None),
        (("group", "list"), None),
    ):
        result = kraft(*args, "--bootstrap-server", controller, input=stdin)
        assert result.returncode == 1, result
        assert "Method not found" not in result.stderr and "Traceback" not in result.stderr
        assert f"{controller} is a controller listener, not a broker" in result.stderr
        assert "--bootstrap-server" in result.stderr and "listening on" in result.stderr


def test_a_broker_port_given_as_controller_answers_through_the_broker(node, kraft):
    # Brokers serve DescribeQuorum (asking the controllers), as Kafka's do.
    result = kraft("quorum", "describe", "--bootstrap-controller", node.address)
    assert result.returncode == 0, result.stderr
    assert "LeaderId" in result.stdout and "Method not found" not in result.stderr


def test_version_comes_from_the_package_metadata(kraft):
    from importlib import metadata

    from clients import __version__

    result = kraft("--version")
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith(f"kraft {metadata.version('kraft')} ")
    assert __version__ == metadata.version("kraft")
