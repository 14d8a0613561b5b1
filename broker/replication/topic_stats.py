"""Per-topic traffic counted where it passes (Kafka's BrokerTopicMetrics: BytesInPerSec,
MessagesInPerSec, BytesOutPerSec, ReplicationBytesOutPerSec) and the leader's ISR changes
(IsrShrinksPerSec, IsrExpandsPerSec): plain counters the metrics endpoint reads at scrape."""

from __future__ import annotations


class TopicStats:
    """Updated on the node's trio loop only; read there too (the metrics endpoint is a task of
    the same loop), so no lock. A dict update per append or fetch is all it costs."""

    def __init__(self) -> None:
        self.bytes_in: dict[str, int] = {}
        self.messages_in: dict[str, int] = {}
        self.bytes_out: dict[str, int] = {}
        self.replication_bytes_out: dict[str, int] = {}
        self.isr_shrinks = 0
        self.isr_expands = 0
        # (topic, partition) -> (leader epoch, ISR) last seen as leader: a change within one
        # epoch is the leader's own shrink or expand, a new epoch only a new leader's start.
        self._isr_seen: dict[tuple[str, int], tuple[int, frozenset[int]]] = {}

    def appended(self, topic: str, size: int, records: int) -> None:
        self.bytes_in[topic] = self.bytes_in.get(topic, 0) + size
        self.messages_in[topic] = self.messages_in.get(topic, 0) + records

    def read(self, topic: str, size: int, *, follower: bool = False) -> None:
        counts = self.replication_bytes_out if follower else self.bytes_out
        counts[topic] = counts.get(topic, 0) + size

    def isr_changed(
        self, topic: str, partition: int, leader_epoch: int, isr, is_leader: bool
    ) -> None:
        key = (topic, partition)
        if not is_leader:
            self._isr_seen.pop(key, None)
            return
        now = frozenset(isr)
        seen = self._isr_seen.get(key)
        self._isr_seen[key] = (leader_epoch, now)
        if seen is None or seen[0] != leader_epoch or seen[1] == now:
            return
        if now - seen[1]:
            self.isr_expands += 1
        if seen[1] - now:
            self.isr_shrinks += 1

    def forget(self, topic: str, partition: int) -> None:
        self._isr_seen.pop((topic, partition), None)
