"""One module per Kafka API, each with `API_KEY`, `ORDERED` (whether part of it must run
before the next request is read: a Produce's append) and `async handle(ctx, request, started)`
returning an Answer (None: no answer, acks=0). The Dispatcher decodes and routes a frame."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

import trio

from broker.kafka import apis, codec
from broker.kafka.answer import Answer
from broker.kafka.backend import Backend
from broker.kafka.connection import CloseConnection
from broker.kafka.framing import RequestHeader
from broker.kafka.handlers import (
    add_offsets_to_txn,
    add_partitions_to_txn,
    api_versions,
    create_partitions,
    create_topics,
    delete_groups,
    delete_topics,
    describe_configs,
    describe_groups,
    end_txn,
    fetch,
    find_coordinator,
    heartbeat,
    init_producer_id,
    join_group,
    leave_group,
    list_groups,
    list_offsets,
    metadata,
    offset_commit,
    offset_fetch,
    produce,
    sync_group,
    txn_offset_commit,
)
from clients.grpc_server import ANONYMOUS, RequestContext

MODULES = (
    api_versions,
    metadata,
    produce,
    fetch,
    list_offsets,
    find_coordinator,
    join_group,
    sync_group,
    heartbeat,
    leave_group,
    offset_commit,
    offset_fetch,
    init_producer_id,
    create_topics,
    delete_topics,
    add_partitions_to_txn,
    add_offsets_to_txn,
    end_txn,
    txn_offset_commit,
    list_groups,
    describe_groups,
    describe_configs,
    create_partitions,
    delete_groups,
)
THREAD_DECODE_BYTES = 64 * 1024


@dataclasses.dataclass(frozen=True)
class Context:
    """What a handler knows of its request beyond the message."""

    backend: Backend
    header: RequestHeader
    listener: str
    peer: str
    served: tuple = ()  # (api key, min, max) of every API served
    who: RequestContext = ANONYMOUS  # the sender, for authorization

    @property
    def version(self) -> int:
        return self.header.api_version


class Dispatcher:
    def __init__(self, backend: Backend, modules=MODULES) -> None:
        self.backend = backend
        self.handlers = {m.API_KEY: m for m in modules}
        self.handled = frozenset(self.handlers)
        self.ranges = tuple(self.served_ranges())

    def served_ranges(self) -> list[tuple[int, int, int]]:
        """(api key, min, max) of every API served: what ApiVersions advertises."""
        return [
            (k, apis.APIS[k].min_version, apis.APIS[k].max_version) for k in sorted(self.handled)
        ]

    def common_versions(self) -> list[tuple[int, int]]:
        return [
            (k, v)
            for k, lo, hi in self.served_ranges()
            for v in range(lo, hi + 1)
            if k != apis.PRODUCE or v >= apis.MIN_PRODUCE_SERVED
        ]

    async def dispatch(
        self, header: RequestHeader, body, connection, started: Callable[[], None]
    ) -> Answer | None:
        key, version = header.api_key, header.api_version
        if not apis.served(key, version, self.handled):
            if key == apis.API_VERSIONS:
                # KIP-511: a version too new gets v0's answer with the ranges served.
                started()
                return Answer.of(api_versions.unsupported(self.served_ranges()))
            raise CloseConnection(f"API key {key} version {version} is not served")
        if key == apis.PRODUCE and version < apis.MIN_PRODUCE_SERVED:
            # Advertised, as Kafka 4 does, and refused as it does: message format v0/v1.
            raise CloseConnection(
                f"Produce v{version} (message format v0/v1) is not served; "
                f"v{apis.MIN_PRODUCE_SERVED}+ is"
            )
        module = self.handlers[key]
        if len(body) > THREAD_DECODE_BYTES:
            # A large request's check and decode would hold the node's loop for milliseconds.
            request = await trio.to_thread.run_sync(codec.decode_request, key, version, body)
        else:
            request = codec.decode_request(key, version, body)
        if not module.ORDERED:
            started()
        # Authorization and every address handed out depend on who asks, on which listener.
        who = RequestContext(
            host=connection.peer, listener=connection.listener, security_protocol="PLAINTEXT"
        )
        ctx = Context(self.backend, header, connection.listener, connection.peer, self.ranges, who)
        return await module.handle(ctx, request, started)
