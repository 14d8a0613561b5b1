"""kraft: the log engine, Raft, the metadata image and the quorum controller; and the clients'
public face (`from kraft import Producer, Consumer, Admin, TopicPartition`).
Imports `clients` only; never `broker` (tests/test_layering.py holds that).

The broker imports kraft.log and kraft.raft, so this file stays cheap: a client name is looked
up (PEP 562) and its module imported only when first asked for."""

from __future__ import annotations

import importlib

# Each public name and the module it lives in, as `from clients... import name` reads.
_PUBLIC = {
    "Producer": "clients.producer",
    "AsyncProducer": "clients.producer",
    "RecordMetadata": "clients.producer",
    "RecordFuture": "clients.producer",
    "BufferFull": "clients.producer",
    "Consumer": "clients.consumer",
    "AsyncConsumer": "clients.consumer",
    "ConsumerRebalanceListener": "clients.consumer",
    "ConsumerRecord": "clients.consumer",
    "Admin": "clients.admin",
    "AsyncAdmin": "clients.admin",
    "NewTopic": "clients.admin",
    "TopicPartition": "clients.types",
    "OffsetAndTimestamp": "clients.types",
    "ConsumerGroupMetadata": "clients.types",
    "KraftError": "clients.errors",
    "RecordTooLarge": "clients.errors",
    "ErrorCode": "clients.errors",
    "SecurityConfigError": "clients.security",
    "__version__": "clients",
}

# Spelled out for tools that read __all__ without running it; a test checks it against _PUBLIC.
__all__ = [
    "Admin",
    "AsyncAdmin",
    "AsyncConsumer",
    "AsyncProducer",
    "BufferFull",
    "Consumer",
    "ConsumerGroupMetadata",
    "ConsumerRebalanceListener",
    "ConsumerRecord",
    "ErrorCode",
    "KraftError",
    "NewTopic",
    "OffsetAndTimestamp",
    "Producer",
    "RecordFuture",
    "RecordMetadata",
    "RecordTooLarge",
    "SecurityConfigError",
    "TopicPartition",
]


def __getattr__(name: str):
    module = _PUBLIC.get(name)
    if module is None:
        # Also how `from kraft import log` falls back to importing the submodule.
        raise AttributeError(f"module 'kraft' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value  # asked once; later lookups skip this function
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_PUBLIC))
