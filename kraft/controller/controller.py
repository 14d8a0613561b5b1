"""QuorumController: the façade the controller's Raft driver calls. Commands read the state
and return ControllerResult(records, response); only replay() changes the state."""

from __future__ import annotations

import random

from kraft.controller import acl_control, cluster_control, replication_control, scram_control
from kraft.controller.cluster_control import BrokerSessions
from kraft.controller.config_control import TopicConfigs
from kraft.controller.controller_config import ControllerConfig
from kraft.controller.messages import (
    AllocateProducerIdsRequest,
    AllocateProducerIdsResponse,
    AlterPartitionRequest,
    AlterPartitionResponse,
    BrokerHeartbeatRequest,
    BrokerHeartbeatResponse,
    CreateAclsRequest,
    CreateAclsResponse,
    CreatePartitionsRequest,
    CreatePartitionsResponse,
    CreateTopicsRequest,
    CreateTopicsResponse,
    DeleteAclsRequest,
    DeleteAclsResponse,
    DeleteTopicsRequest,
    DeleteTopicsResponse,
    DescribeAclsRequest,
    DescribeAclsResponse,
    DescribeConfigsRequest,
    DescribeConfigsResponse,
    ElectLeadersRequest,
    ElectLeadersResponse,
    IncrementalAlterConfigsRequest,
    IncrementalAlterConfigsResponse,
    RegisterBrokerRequest,
    RegisterBrokerResponse,
)
from kraft.controller.producer_id_control import allocate_producer_ids
from kraft.controller.result import ControllerResult
from kraft.metadata.delta import MetadataDelta
from kraft.metadata.image import EMPTY_IMAGE, MetadataImage
from kraft.metadata.records import RegisterBrokerRecord


class QuorumController:
    """One controller's view of the metadata, active or standby.

    The driver, on the active controller: run a command, propose its records to Raft, send the
    response once they commit. Every controller replays every committed record, in log order,
    with its offset. Records the active controller proposes should be replayed as soon as they
    are proposed (Kafka does this, and rebuilds from the last committed image if leadership is
    lost), so the next command sees them; otherwise run one command at a time.

    Besides the image the state holds two things no record carries directly: where each
    broker's registration landed in the log (to tell when it has caught up), rebuilt by replay;
    and broker sessions, soft state the active controller keeps from heartbeats."""

    def __init__(
        self,
        config: ControllerConfig | None = None,
        image: MetadataImage = EMPTY_IMAGE,
        rng: random.Random | None = None,
    ) -> None:
        self.config = config or ControllerConfig()
        self.topic_configs = TopicConfigs(self.config)
        self.rng = rng or random.Random(0)
        self.sessions = BrokerSessions(self.config.broker_session_timeout_ms)
        self._image = image
        self._registration_offsets: dict[int, int] = {}
        self.load_image(image)

    @property
    def image(self) -> MetadataImage:
        return self._image

    # -- state changes
    def load_image(self, image: MetadataImage) -> None:
        """Start from a snapshot: brokers in it registered at or before its offset."""
        self._image = image
        self._registration_offsets = {b: image.offset for b in image.brokers}

    def replay(self, record, offset: int | None = None, epoch: int | None = None) -> None:
        delta = MetadataDelta(self._image)
        delta.replay(record, offset, epoch)
        self._image = delta.apply()
        if isinstance(record, RegisterBrokerRecord):
            self._registration_offsets[record.broker_id] = self._image.offset

    def replay_batch(self, records, base_offset: int, epoch: int) -> None:
        """Replay consecutive records, the first at `base_offset`, with one delta."""
        delta = MetadataDelta(self._image)
        for i, record in enumerate(records):
            delta.replay(record, base_offset + i, epoch)
            if isinstance(record, RegisterBrokerRecord):
                self._registration_offsets[record.broker_id] = base_offset + i
        self._image = delta.apply()

    def become_active(self, now_ms: int) -> None:
        """Give every registered broker a full session from now (heartbeats went to the
        previous active controller)."""
        self.sessions.reset(self._image.brokers, now_ms)

    # -- brokers
    def _unclean(self, image: MetadataImage | None = None):
        return self.topic_configs.unclean_policy(image or self._image)

    def handle_register_broker(
        self, req: RegisterBrokerRequest, now_ms: int
    ) -> ControllerResult[RegisterBrokerResponse]:
        return cluster_control.register_broker(
            self._image, self.sessions, req, now_ms, self._unclean()
        )

    def handle_broker_heartbeat(
        self, req: BrokerHeartbeatRequest, now_ms: int
    ) -> ControllerResult[BrokerHeartbeatResponse]:
        return cluster_control.broker_heartbeat(
            self._image, self.sessions, self._registration_offsets, req, now_ms, self._unclean()
        )

    def maybe_fence_stale_brokers(self, now_ms: int) -> ControllerResult[tuple[int, ...]]:
        return cluster_control.maybe_fence_stale_brokers(
            self._image, self.sessions, now_ms, self._unclean()
        )

    def fence_dead_broker(self, broker_id: int, broker_epoch: int) -> ControllerResult[bool]:
        """A broker found not listening (cluster_control.fence_dead_broker)."""
        return cluster_control.fence_dead_broker(
            self._image, self.sessions, broker_id, broker_epoch, self._unclean()
        )

    def credit_stall(self, stalled_ms: int) -> None:
        """This controller was stalled (a pause of its process, a starved CPU): see
        BrokerSessions.credit_stall."""
        self.sessions.credit_stall(stalled_ms)

    def next_deadline_ms(self) -> int | None:
        """When maybe_fence_stale_brokers may next have something to do."""
        return self.sessions.next_deadline_ms(self._image)

    # -- topics and partitions
    def handle_create_topics(
        self, req: CreateTopicsRequest, now_ms: int
    ) -> ControllerResult[CreateTopicsResponse]:
        return replication_control.create_topics(self._image, self.topic_configs, req, self.rng)

    def handle_delete_topics(
        self, req: DeleteTopicsRequest, now_ms: int
    ) -> ControllerResult[DeleteTopicsResponse]:
        return replication_control.delete_topics(self._image, self.topic_configs, req)

    def handle_create_partitions(
        self, req: CreatePartitionsRequest, now_ms: int
    ) -> ControllerResult[CreatePartitionsResponse]:
        return replication_control.create_partitions(self._image, self.topic_configs, req, self.rng)

    def handle_alter_partition(
        self, req: AlterPartitionRequest, now_ms: int
    ) -> ControllerResult[AlterPartitionResponse]:
        return replication_control.alter_partition(self._image, req)

    def handle_elect_leaders(
        self, req: ElectLeadersRequest, now_ms: int
    ) -> ControllerResult[ElectLeadersResponse]:
        return replication_control.elect_leaders(self._image, req, self._unclean())

    # -- configs and producer ids
    def handle_describe_configs(
        self, req: DescribeConfigsRequest
    ) -> ControllerResult[DescribeConfigsResponse]:
        return self.topic_configs.describe(self._image, req)

    def handle_incremental_alter_configs(
        self, req: IncrementalAlterConfigsRequest, now_ms: int
    ) -> ControllerResult[IncrementalAlterConfigsResponse]:
        return self.topic_configs.incremental_alter(self._image, req)

    # -- SCRAM users
    def handle_alter_user_scram_credentials(self, req, now_ms: int):
        return scram_control.alter_user_scram_credentials(self._image, req)

    def handle_describe_user_scram_credentials(self, req):
        return scram_control.describe_user_scram_credentials(self._image, req)

    def handle_allocate_producer_ids(
        self, req: AllocateProducerIdsRequest, now_ms: int
    ) -> ControllerResult[AllocateProducerIdsResponse]:
        return allocate_producer_ids(self._image, req)

    # -- ACLs
    def handle_create_acls(
        self, req: CreateAclsRequest, now_ms: int
    ) -> ControllerResult[CreateAclsResponse]:
        return acl_control.create_acls(self._image, req, self.rng)

    def handle_delete_acls(
        self, req: DeleteAclsRequest, now_ms: int
    ) -> ControllerResult[DeleteAclsResponse]:
        return acl_control.delete_acls(self._image, req)

    def handle_describe_acls(
        self, req: DescribeAclsRequest, now_ms: int
    ) -> ControllerResult[DescribeAclsResponse]:
        return acl_control.describe_acls(self._image, req)
