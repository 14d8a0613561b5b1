"""Only group coordinators write `__consumer_offsets`: a producer's batch there is refused whole,
since every future coordinator would replay its bytes as group state."""

from broker.group.records import OFFSETS_TOPIC
from broker.replication.replica_manager import ReplicaManager
from broker.services.broker_servicer import BrokerServicer
from clients.errors import ErrorCode
from clients.record.codec import encode_batch
from clients.wire import broker_pb2 as pb
from kraft.log.log_config import LogConfig
from kraft.log.log_manager import LogManager
from kraft.metadata.image import PartitionRegistration


async def test_a_produce_to_the_offsets_topic_is_refused_and_appends_nothing(tmp_path):
    replicas = ReplicaManager(LogManager([tmp_path], LogConfig(), now_ms=0), node_id=1)
    replicas.apply_registration(
        OFFSETS_TOPIC,
        0,
        "id",
        LogConfig(cleanup_policy="compact"),
        PartitionRegistration(replicas=(1,), isr=(1,), leader=1, leader_epoch=1, partition_epoch=1),
    )
    servicer = BrokerServicer(
        replicas, metadata=None, channel=None, cluster_id="c", clock_ms=lambda: 0
    )
    batch = encode_batch([(b"key", b"forged group state", (), 1000)])
    response = await servicer.Produce(
        pb.ProduceRequest(
            acks=1,
            topics=[
                pb.TopicProduceData(
                    name=OFFSETS_TOPIC,
                    partitions=[pb.PartitionProduceData(partition=0, records=batch)],
                )
            ],
        )
    )
    [answer] = response.topics[0].partitions
    assert answer.error_code == ErrorCode.INVALID_TOPIC_EXCEPTION
    assert "internal" in answer.error_message
    assert replicas.get(OFFSETS_TOPIC, 0).log.log_end_offset == 0
