"""What a client knows about the cluster: bootstrap addresses, one gRPC channel per node, and the
metadata cache (brokers, topics -> partitions -> leader/epoch/replicas/isr) refreshed by Metadata."""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field

import grpc

from clients import bridge
from clients.errors import ErrorCode, KraftError
from clients.security import ClientSecurity
from clients.wire import broker_pb2, broker_pb2_grpc, controller_pb2_grpc

_PRODUCE_METHOD = f"/{broker_pb2.DESCRIPTOR.services_by_name['Broker'].full_name}/Produce"


def _serialized(request) -> bytes:
    return request if isinstance(request, bytes) else request.SerializeToString()


DEFAULT_PORT = 9092


def parse_bootstrap(servers: str | list[str]) -> list[str]:
    """ "h:p[,h:p]" (or a list) to ["h:p", ...]; a bare host gets port 9092."""
    items = servers.split(",") if isinstance(servers, str) else list(servers)
    out = []
    for item in items:
        item = item.strip()
        if not item:
            continue
        host, sep, port = item.rpartition(":")
        if not sep or not host:
            host, port = item, str(DEFAULT_PORT)
        if not port.isdigit():
            raise ValueError(f"bad bootstrap server {item!r}: expected host:port")
        out.append(f"{host}:{int(port)}")
    if not out:
        raise ValueError(f"no bootstrap servers in {servers!r}; expected host:port[,host:port]")
    return out


@dataclass(frozen=True)
class BrokerInfo:
    node_id: int
    host: str
    port: int
    rack: str = ""

    @property
    def address(self) -> str:
        return f"{self.host}:{self.port}"


@dataclass(frozen=True)
class PartitionState:
    partition: int
    leader: int
    leader_epoch: int
    replicas: tuple[int, ...] = ()
    isr: tuple[int, ...] = ()
    error_code: int = 0


@dataclass
class TopicState:
    name: str
    error_code: int = 0
    error_message: str = ""
    is_internal: bool = False
    topic_id: str = ""
    partitions: dict[int, PartitionState] = field(default_factory=dict)


class MetadataCache:
    """The last Metadata answers, merged: a refresh for some topics keeps the others."""

    def __init__(self) -> None:
        self.brokers: dict[int, BrokerInfo] = {}
        self.topics: dict[str, TopicState] = {}
        self.cluster_id = ""
        self.controller_id = -1
        # (topic, partition) -> leader node id, the producer's and fetcher's hot lookup
        self.leaders: dict[tuple, int] = {}

    def update(self, resp: broker_pb2.MetadataResponse, all_topics: bool = False) -> None:
        if resp.brokers:
            self.brokers = {
                b.node_id: BrokerInfo(b.node_id, b.host, b.port, b.rack) for b in resp.brokers
            }
        self.cluster_id = resp.cluster_id
        self.controller_id = resp.controller_id
        if all_topics:
            for name in list(self.topics):
                self._drop(name)
        for t in resp.topics:
            old = self.topics.get(t.name)
            self._drop(t.name)
            state = TopicState(t.name, t.error_code, t.error_message, t.is_internal, t.topic_id)
            if t.error_code == 0:
                for p in t.partitions:
                    part = PartitionState(
                        p.partition,
                        p.leader,
                        p.leader_epoch,
                        tuple(p.replicas),
                        tuple(p.isr),
                        p.error_code,
                    )
                    known = (
                        old.partitions.get(p.partition)
                        if old is not None and old.topic_id == t.topic_id
                        else None
                    )
                    if known is not None and known.leader_epoch > part.leader_epoch:
                        # A broker whose image lags (one just back from a pause) still names the
                        # old leader: keep the newer view (KIP-320), or a consumer would fetch
                        # from a deposed leader and reset its position on its shorter log.
                        part = known
                    state.partitions[p.partition] = part
                    if part.leader >= 0:
                        self.leaders[(t.name, p.partition)] = part.leader
            self.topics[t.name] = state

    def _drop(self, name: str) -> None:
        old = self.topics.pop(name, None)
        if old is not None:
            for p in old.partitions:
                self.leaders.pop((name, p), None)

    def leader_for(self, tp: tuple) -> int | None:
        return self.leaders.get(tp)

    def leader_epoch(self, tp: tuple) -> int:
        """The leader epoch this cache knows for `tp`, -1 if none: fetches carry it so a
        deposed leader refuses them (FENCED / UNKNOWN_LEADER_EPOCH) instead of serving."""
        topic = self.topics.get(tp[0])
        part = topic.partitions.get(tp[1]) if topic is not None else None
        return part.leader_epoch if part is not None else -1

    def partitions_for(self, topic: str) -> list[int] | None:
        state = self.topics.get(topic)
        if state is None or state.error_code:
            return None
        return sorted(state.partitions)

    def invalidate_leader(self, tp: tuple) -> None:
        self.leaders.pop(tp, None)


class Cluster:
    """Channels and stubs per node plus the metadata cache. Admin requests go to any bootstrap
    node for now (the single node answers Controller RPCs itself)."""

    def __init__(
        self,
        bootstrap_servers: str,
        *,
        request_timeout_ms: int = 30000,
        security: ClientSecurity | None = None,
    ) -> None:
        self.bootstrap = parse_bootstrap(bootstrap_servers)
        self.security = security  # TLS / SCRAM for every channel (clients/security.py)
        self.timeout = request_timeout_ms / 1000
        self.metadata = MetadataCache()
        self._channels: dict[str, grpc.Channel] = {}
        self._broker_stubs: dict[str, broker_pb2_grpc.BrokerStub] = {}
        self._controller_stubs: dict[str, controller_pb2_grpc.ControllerStub] = {}
        self._rotation = itertools.count()
        self._closed = False

    def _channel(self, address: str) -> grpc.Channel:
        if self._closed:
            raise KraftError(ErrorCode.NETWORK_EXCEPTION, "client is closed")
        ch = self._channels.get(address)
        if ch is None:
            ch = self._channels[address] = bridge.open_channel(address, self.security)
        return ch

    def broker_stub_at(self, address: str) -> broker_pb2_grpc.BrokerStub:
        stub = self._broker_stubs.get(address)
        if stub is None:
            channel = self._channel(address)
            stub = self._broker_stubs[address] = broker_pb2_grpc.BrokerStub(channel)
            # Produce also takes a request already serialized (the producer builds it around
            # its batches without protobuf's copies: clients/producer/produce_request.py).
            stub.Produce = channel.unary_unary(
                _PRODUCE_METHOD,
                request_serializer=_serialized,
                response_deserializer=broker_pb2.ProduceResponse.FromString,
            )
        return stub

    def controller_stub_at(self, address: str) -> controller_pb2_grpc.ControllerStub:
        stub = self._controller_stubs.get(address)
        if stub is None:
            stub = self._controller_stubs[address] = controller_pb2_grpc.ControllerStub(
                self._channel(address)
            )
        return stub

    def node_address(self, node_id: int) -> str:
        broker = self.metadata.brokers.get(node_id)
        if broker is None:
            raise KraftError(
                ErrorCode.BROKER_NOT_AVAILABLE, f"node {node_id} is not in the cluster metadata"
            )
        return broker.address

    def broker_stub(self, node_id: int) -> broker_pb2_grpc.BrokerStub:
        return self.broker_stub_at(self.node_address(node_id))

    def _candidates(self) -> list[str]:
        """Known brokers then bootstrap addresses, starting at a rotating point so a dead node
        is not always asked first."""
        known = [b.address for b in self.metadata.brokers.values()]
        seen: list[str] = []
        for a in known + self.bootstrap:
            if a not in seen:
                seen.append(a)
        start = next(self._rotation) % len(seen)
        return seen[start:] + seen[:start]

    async def call_any(self, method_name: str, request, *, controller: bool = False):
        """Send to the first node that answers (bootstrap nodes for admin requests)."""
        last: KraftError | None = None
        addresses = list(self.bootstrap) if controller else self._candidates()
        for address in addresses:
            stub = self.controller_stub_at(address) if controller else self.broker_stub_at(address)
            try:
                return await bridge.call(getattr(stub, method_name), request, self.timeout)
            except KraftError as exc:
                if bridge.is_unimplemented(exc):
                    raise wrong_listener(address, controller) from None
                if exc.code != ErrorCode.NETWORK_EXCEPTION:
                    raise
                last = exc
        raise KraftError(
            ErrorCode.NETWORK_EXCEPTION,
            f"no node answered {method_name} (tried {', '.join(addresses)}): "
            f"{last.message if last else ''}; is the broker running?",
        )

    async def refresh(
        self, topics: list[str] | None = None, *, allow_auto_create: bool = False
    ) -> broker_pb2.MetadataResponse:
        """Ask any node for metadata of `topics` (None: every topic) and merge it in."""
        req = broker_pb2.MetadataRequest(
            topics=topics or [],
            all_topics=topics is None,
            allow_auto_topic_creation=allow_auto_create,
        )
        resp = await self.call_any("Metadata", req)
        self.metadata.update(resp, all_topics=topics is None)
        return resp

    def close(self) -> None:
        self._closed = True
        for ch in self._channels.values():
            ch.close()
        self._channels.clear()
        self._broker_stubs.clear()
        self._controller_stubs.clear()


def wrong_listener(address: str, controller: bool) -> KraftError:
    """A broker request sent to a controller's listener (or the reverse): say which it is and
    what to use instead of grpc's bare 'Method not found!'."""
    if controller:
        return KraftError(
            ErrorCode.UNSUPPORTED_VERSION,
            f"{address} does not take controller requests: it is not a "
            "controller's or a combined node's listener; point the client at a "
            "node that runs the controller (process.roles with 'controller')",
        )
    return KraftError(
        ErrorCode.UNSUPPORTED_VERSION,
        f"{address} is a controller listener, not a broker: point "
        "--bootstrap-server (env KRAFT_BOOTSTRAP; bootstrap_servers in Python) at a "
        "broker's listener, the address a broker prints as 'listening on' "
        "(`kraft dev`: 127.0.0.1:9092); a controller answers only `kraft quorum "
        f"describe --bootstrap-controller {address}`",
    )
