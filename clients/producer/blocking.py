"""Producer: the blocking facade of AsyncProducer for scripts. `send` never enters the trio
thread (AsyncProducer.send_from_thread); flush and close run in it through a SyncRunner."""

from __future__ import annotations

from clients._sync import SyncRunner
from clients.errors import KraftError
from clients.producer.future import RecordFuture, RecordsFuture
from clients.producer.producer import AsyncProducer
from clients.types import ConsumerGroupMetadata


class Producer:
    """The blocking producer for scripts: same arguments as AsyncProducer. `send` wakes the
    sender only when a batch opens or fills, and blocks up to max_block_ms while the buffer is
    full."""

    def __init__(self, bootstrap_servers: str = "127.0.0.1:9092", **kwargs) -> None:
        self._async = AsyncProducer(bootstrap_servers, **kwargs)
        self._runner = SyncRunner("kraft-producer")
        self._runner.start_service(self._async.serve)
        self._closed = False

    def send(
        self,
        topic: str,
        value: bytes | None,
        key: bytes | None = None,
        *,
        partition: int | None = None,
        headers=None,
        timestamp_ms: int | None = None,
    ) -> RecordFuture:
        return self._async.send_from_thread(
            topic, value, key, partition=partition, headers=headers, timestamp_ms=timestamp_ms
        )

    def send_batch(
        self,
        topic: str,
        values,
        keys=None,
        *,
        partition: int | None = None,
        timestamp_ms: int | None = None,
        on_delivery=None,
    ) -> RecordsFuture:
        """Many records in one call, without a future each (AsyncProducer.send_batch)."""
        return self._async.send_batch_from_thread(
            topic,
            values,
            keys,
            partition=partition,
            timestamp_ms=timestamp_ms,
            on_delivery=on_delivery,
        )

    def flush(self, timeout: float | None = None) -> None:
        self._runner.run(self._async.flush, timeout=timeout)

    # --- transactions (AsyncProducer's; timeouts in seconds) ----------------------------------

    def init_transactions(self, timeout: float | None = None) -> None:
        self._runner.run(self._async.init_transactions, timeout)

    def begin_transaction(self) -> None:
        self._async.begin_transaction()

    def send_offsets_to_transaction(
        self, offsets: dict, group_metadata: ConsumerGroupMetadata, timeout: float | None = None
    ) -> None:
        self._runner.run(self._async.send_offsets_to_transaction, offsets, group_metadata, timeout)

    def commit_transaction(self, timeout: float | None = None) -> None:
        self._runner.run(self._async.commit_transaction, timeout)

    def abort_transaction(self, timeout: float | None = None) -> None:
        self._runner.run(self._async.abort_transaction, timeout)

    def partitions_for(self, topic: str) -> list[int]:
        return self._runner.run(self._async.partitions_for, topic)

    def close(self, timeout: float | None = None) -> None:
        """Flush (waiting up to `timeout` seconds), then stop; records still unsent after the
        timeout fail with NETWORK_EXCEPTION."""
        if self._closed:
            return
        self._closed = True
        try:
            self._runner.run(self._async.aclose, timeout)
        except KraftError:
            pass
        finally:
            self._runner.close()

    def __enter__(self) -> Producer:
        return self

    def __exit__(self, *exc_info) -> None:
        self.close()
