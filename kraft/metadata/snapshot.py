"""Snapshots of the metadata log: an image written as the records that rebuild it, and read
back by replaying those records onto an empty image."""

from __future__ import annotations

import msgpack

from kraft.metadata import records as r
from kraft.metadata.acl_records import acl_to_record
from kraft.metadata.delta import replay_all
from kraft.metadata.image import EMPTY_IMAGE, MetadataImage


def image_to_records(image: MetadataImage) -> list[r.MetadataRecord]:
    """Records that rebuild `image` from nothing, in an order replay accepts: brokers, then
    each topic before its partitions and configs, then other configs, then producer ids, then
    ACLs."""
    out: list[r.MetadataRecord] = []
    for broker_id, b in sorted(image.brokers.items()):
        out.append(
            r.RegisterBrokerRecord(
                broker_id,
                b.incarnation_id,
                b.broker_epoch,
                b.host,
                b.port,
                b.rack,
                b.fenced,
                b.listeners,
            )
        )
        if b.offline_replicas:
            out.append(
                r.BrokerRegistrationChangeRecord(
                    broker_id, b.broker_epoch, b.fenced, tuple(sorted(b.offline_replicas))
                )
            )
    for name, topic in sorted(image.topics_by_name.items()):
        out.append(r.TopicRecord(name, topic.topic_id))
        for p, reg in sorted(topic.partitions.items()):
            out.append(
                r.PartitionRecord(
                    topic.topic_id,
                    p,
                    reg.replicas,
                    reg.isr,
                    reg.leader,
                    reg.leader_epoch,
                    reg.partition_epoch,
                )
            )
    for (resource_type, resource_name), values in sorted(image.configs.items()):
        for key, value in sorted(values.items()):
            out.append(r.ConfigRecord(resource_type, resource_name, key, value))
    for (name, mechanism), c in sorted(image.scram_credentials.items()):
        out.append(
            r.UserScramCredentialRecord(
                name, mechanism, c.salt, c.stored_key, c.server_key, c.iterations
            )
        )
    if image.next_producer_id:
        # Only the next free id matters; which broker took the last block does not.
        out.append(r.ProducerIdsRecord(-1, -1, image.next_producer_id))
    for acl_id, binding in sorted(image.acls.items()):
        out.append(acl_to_record(acl_id, binding))
    return out


def records_to_image(records, offset: int, epoch: int) -> MetadataImage:
    """The image a snapshot at `offset`/`epoch` holds."""
    return replay_all(EMPTY_IMAGE, records, last_offset=offset, epoch=epoch)


def encode_snapshot(image: MetadataImage) -> list[bytes]:
    return r.encode_batch(image_to_records(image))


def decode_snapshot(values: list[bytes], offset: int, epoch: int) -> MetadataImage:
    return records_to_image(r.decode_batch(values), offset, epoch)


def snapshot_to_bytes(image: MetadataImage) -> bytes:
    """One snapshot file's contents: the rebuilding records as a msgpack array."""
    return msgpack.packb(encode_snapshot(image), use_bin_type=True)


def snapshot_from_bytes(data: bytes, end_offset: int, epoch: int) -> MetadataImage:
    """The image a snapshot with id (`end_offset`, `epoch`) holds; its last record sat at
    end_offset - 1 (a snapshot id's offset is exclusive)."""
    try:
        values = msgpack.unpackb(data, raw=False)
    except Exception as exc:  # msgpack raises several unrelated types for bad input
        raise r.MetadataRecordError(f"metadata snapshot is not valid msgpack: {exc}") from None
    if not isinstance(values, list) or not all(isinstance(v, bytes) for v in values):
        raise r.MetadataRecordError("metadata snapshot is not a list of records")
    return decode_snapshot(values, end_offset - 1, epoch)
