"""DescribeQuorum's answer as a value (as Kafka keeps DescribeQuorumResponseData in its clients):
the Raft core produces it, the Quorum service and `kraft quorum describe` carry and read it."""

from __future__ import annotations

from dataclasses import dataclass

from clients.wire import quorum_pb2 as pb


@dataclass(frozen=True)
class ReplicaInfo:
    replica_id: int
    log_end_offset: int
    # On the wire and in `kraft quorum describe`: ms since the leader last got a fetch from this
    # replica (an age: Kafka's LastFetchTimestamp is a wall-clock time instead), 0 for the leader
    # itself, None if it never fetched in this epoch. Inside the Raft core (RaftCore.describe) it is
    # still the fetch's time on the leader's monotonic clock; RaftDriver.describe makes it an age.
    last_fetch_ms: int | None


@dataclass(frozen=True)
class QuorumInfo:
    """DescribeQuorum as this node sees it; replica lists are filled in only on the leader."""

    node_id: int
    role: str
    leader_id: int | None
    leader_epoch: int
    high_watermark: int
    log_end_offset: int
    voters: tuple[ReplicaInfo, ...]
    observers: tuple[ReplicaInfo, ...]


def quorum_info_to_proto(info: QuorumInfo) -> pb.DescribeQuorumResponse:
    def replica(r: ReplicaInfo) -> pb.ReplicaInfo:
        out = pb.ReplicaInfo(replica_id=r.replica_id, log_end_offset=r.log_end_offset)
        if r.last_fetch_ms is not None:
            out.last_fetch_ms = r.last_fetch_ms
        return out

    out = pb.DescribeQuorumResponse(
        node_id=info.node_id,
        role=info.role,
        leader_epoch=info.leader_epoch,
        high_watermark=info.high_watermark,
        log_end_offset=info.log_end_offset,
        voters=[replica(r) for r in info.voters],
        observers=[replica(r) for r in info.observers],
    )
    if info.leader_id is not None:
        out.leader_id = info.leader_id
    return out


def quorum_info_from_proto(proto: pb.DescribeQuorumResponse) -> QuorumInfo:
    def replica(r: pb.ReplicaInfo) -> ReplicaInfo:
        return ReplicaInfo(
            r.replica_id, r.log_end_offset, r.last_fetch_ms if r.HasField("last_fetch_ms") else None
        )

    return QuorumInfo(
        proto.node_id,
        proto.role,
        proto.leader_id if proto.HasField("leader_id") else None,
        proto.leader_epoch,
        proto.high_watermark,
        proto.log_end_offset,
        tuple(map(replica, proto.voters)),
        tuple(map(replica, proto.observers)),
    )


async def ask_quorum(addresses: list[str], timeout: float, open_channel=None) -> QuorumInfo:
    """DescribeQuorum asked of each address in turn (controllers, or brokers, which ask the
    controllers): the first leader's answer, else the first answer (it names the leader it
    knows of but has no replica states). `open_channel(address)`: plaintext by default. Raises
    KraftError when none answered."""
    from clients.bridge import call
    from clients.bridge import open_channel as plaintext
    from clients.errors import ErrorCode, KraftError
    from clients.wire import quorum_pb2_grpc

    first, errors = None, []
    for address in addresses:
        channel = (open_channel or plaintext)(address)
        try:
            stub = quorum_pb2_grpc.QuorumStub(channel)
            answer = await call(stub.DescribeQuorum, pb.DescribeQuorumRequest(), timeout)
            if answer.error_code:
                raise KraftError(
                    answer.error_code,
                    answer.error_message or f"DescribeQuorum refused (error {answer.error_code})",
                )
            info = quorum_info_from_proto(answer)
        except KraftError as exc:
            errors.append(f"{address}: {exc.message}")
            continue
        finally:
            channel.close()
        if info.role == "Leader":
            return info
        first = first or info
    if first is None:
        raise KraftError(ErrorCode.NETWORK_EXCEPTION, f"no node answered ({'; '.join(errors)})")
    return first
