"""What every client command shares: the error a user can act on, the client factories that tests
swap for fakes, and parsers for the small value formats of the flags (key=value, acks)."""

from __future__ import annotations

import argparse
from collections.abc import Callable
from typing import Any

from clients.errors import ErrorCode, KraftError


class CliError(Exception):
    """A mistake the user can fix; the message says what happened and what to do."""


def topic_missing(topic: str) -> CliError:
    return CliError(f"topic '{topic}' does not exist; create it with: kraft topic create {topic}")


def is_unknown_topic(exc: BaseException) -> bool:
    return isinstance(exc, KraftError) and exc.code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION


# The client classes are imported when first used, not at import time: `kraft --help` must work
# even if a client module is broken, and tests replace these three names with fakes.
def topic_partitions(admin: Any, topic: str) -> list[int]:
    """The partition numbers of `topic`, sorted; a missing topic is the CLI's clear error."""
    try:
        found = [t for t in admin.describe_topics([topic]) if t.name == topic]
    except KraftError as exc:
        if is_unknown_topic(exc):
            raise topic_missing(topic) from None
        raise
    if not found:
        raise topic_missing(topic)
    return sorted(p.partition for p in found[0].partitions)


# kafka-python's security keyword arguments from --command-config, for every client made here.
_security: dict[str, Any] = {}


def use_command_config(path: str | None) -> None:
    """Read --command-config (a Kafka client properties file); PLAINTEXT without one."""
    from clients.security import SecurityConfigError, load_command_config, security_options

    try:
        _security.clear()
        _security.update(security_options(load_command_config(path)))
    except SecurityConfigError as exc:
        raise CliError(str(exc)) from None


def command_security() -> Any:
    """The ClientSecurity of --command-config (None: PLAINTEXT), for channels opened by hand."""
    from clients.security import client_security

    return client_security(**_security)


def _producer(bootstrap: str, **kwargs: Any) -> Any:
    from clients.producer import Producer

    return Producer(bootstrap, **kwargs, **_security)


def _consumer(bootstrap: str, **kwargs: Any) -> Any:
    from clients.consumer import Consumer

    return Consumer(bootstrap, **kwargs, **_security)


def _admin(bootstrap: str) -> Any:
    from clients.admin import Admin

    return Admin(bootstrap, **_security)


make_producer: Callable[..., Any] = _producer
make_consumer: Callable[..., Any] = _consumer
make_admin: Callable[[str], Any] = _admin


def new_topic(
    name: str,
    partitions: int = -1,
    replication_factor: int = -1,
    configs: dict[str, str] | None = None,
) -> Any:
    from clients.admin import NewTopic

    return NewTopic(
        name,
        num_partitions=partitions,
        replication_factor=replication_factor,
        configs=configs or {},
    )


def topic_partition(topic: str, partition: int) -> Any:
    from clients.types import TopicPartition

    return TopicPartition(topic, partition)


def key_value(text: str) -> tuple[str, str]:
    """argparse type for `key=value`; the value may itself contain '='."""
    key, sep, value = text.partition("=")
    if not sep or not key:
        raise argparse.ArgumentTypeError(f"expected key=value, got {text!r}")
    return key, value


def acks(text: str) -> int:
    if text == "all":
        return -1
    if text in ("0", "1", "-1"):
        return int(text)
    raise argparse.ArgumentTypeError(f"acks must be 0, 1, -1 or all, got {text!r}")


def positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}") from None
    if value <= 0:
        raise argparse.ArgumentTypeError(f"expected a number above 0, got {text}")
    return value


def non_negative_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"expected 0 or more, got {text}")
    return value


COMPRESSION_TYPES = ("none", "gzip", "lz4", "zstd")


def add_leaf(
    subparsers: argparse._SubParsersAction,
    name: str,
    *,
    help: str,
    examples: str,
    func: Callable[[argparse.Namespace], int],
    add_common: Callable[[argparse.ArgumentParser], None],
) -> argparse.ArgumentParser:
    """A leaf command whose --help ends with examples (kept verbatim), with the common options."""
    parser = subparsers.add_parser(
        name,
        help=help,
        description=help,
        epilog="examples:\n" + "\n".join(f"  {line}" for line in examples.strip().splitlines()),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.set_defaults(func=func)
    add_common(parser)
    return parser
