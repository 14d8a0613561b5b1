"""NodeReady: what a node that serves tells `kraft dev` (cluster.json) and the operator (its
one start line)."""

from __future__ import annotations

import dataclasses


@dataclasses.dataclass(frozen=True)
class NodeReady:
    """A node that serves: what `kraft dev` records in cluster.json and the start line says."""

    node_id: int
    roles: tuple[str, ...]
    addresses: tuple[str, ...]  # the client-facing listener first, then the controller's
    cluster_id: str
    log_dirs: tuple[str, ...]
    metrics_address: str | None = None  # host:port of GET /metrics, if metrics.listener is set
    kafka_address: str | None = None  # where Kafka's own clients connect, if anywhere

    def describe(self) -> str:
        what = f"listening on {self.addresses[0]}" if self.addresses else "running (no listener)"
        if len(self.addresses) > 1:
            what += f", controller on {self.addresses[1]}"
        if self.kafka_address:
            what += f", Kafka clients on {self.kafka_address}"
        if self.metrics_address:
            what += f", metrics on http://{self.metrics_address}/metrics"
        return (
            f"kraft node {self.node_id} ({','.join(self.roles)}) {what}, cluster "
            f"{self.cluster_id}, data in {', '.join(self.log_dirs)}"
        )
