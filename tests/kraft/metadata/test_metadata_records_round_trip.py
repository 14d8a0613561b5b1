"""Every metadata record survives encode/decode unchanged, is stored as a msgpack map with its
type and version, and bytes this kraft cannot read are refused with a clear error."""

import dataclasses

import msgpack
import pytest
from hypothesis import given
from hypothesis import strategies as st

from kraft.metadata import records as r

ids = st.integers(-1, 2**31 - 1)
longs = st.integers(-1, 2**63 - 1)
text = st.text(max_size=20)
brokers = st.lists(st.integers(0, 100), max_size=5).map(tuple)

RECORDS = st.one_of(
    st.builds(
        r.RegisterBrokerRecord,
        ids,
        text,
        longs,
        text,
        st.integers(0, 65535),
        st.none() | text,
        st.booleans(),
    ),
    st.builds(r.BrokerRegistrationChangeRecord, ids, longs, st.booleans()),
    st.builds(r.UnregisterBrokerRecord, ids, longs),
    st.builds(r.TopicRecord, text, text),
    st.builds(r.PartitionRecord, text, ids, brokers, brokers, ids, ids, ids),
    st.builds(
        r.PartitionChangeRecord,
        text,
        ids,
        st.none() | brokers,
        st.none() | ids,
        st.none() | brokers,
    ),
    st.builds(r.RemoveTopicRecord, text),
    st.builds(r.ConfigRecord, st.sampled_from(["topic", "broker"]), text, text, st.none() | text),
    st.builds(r.ProducerIdsRecord, ids, longs, longs),
    st.builds(r.AccessControlEntryRecord, text, ids, text, ids, text, text, ids, ids),
    st.builds(r.RemoveAccessControlEntryRecord, text),
    st.builds(
        r.UserScramCredentialRecord,
        text,
        text,
        st.binary(max_size=32),
        st.binary(max_size=64),
        st.binary(max_size=64),
        ids,
    ),
    st.builds(r.RemoveUserScramCredentialRecord, text, text),
    st.builds(r.LeaderChangeRecord, ids, ids, brokers),
    st.just(r.NoOpRecord()),
)


@given(RECORDS)
def test_every_record_round_trips(record):
    assert r.decode(r.encode(record)) == record


@given(st.lists(RECORDS, max_size=10))
def test_a_batch_is_a_list_of_encoded_values(batch):
    values = r.encode_batch(batch)
    assert len(values) == len(batch) and all(isinstance(v, bytes) for v in values)
    assert r.decode_batch(values) == batch


def test_the_stored_value_is_a_map_with_type_version_and_fields():
    record = r.PartitionRecord("t1", 0, (1, 2), (1,), 1, 3, 4)
    body = msgpack.unpackb(r.encode(record))
    assert body == {
        "type": "Partition",
        "version": 0,
        "topic_id": "t1",
        "partition": 0,
        "replicas": [1, 2],
        "isr": [1],
        "leader": 1,
        "leader_epoch": 3,
        "partition_epoch": 4,
    }


def test_every_record_type_has_a_distinct_name():
    classes = list(r.RECORD_TYPES.values())
    assert len({c.TYPE for c in classes}) == len(classes) == 15


@pytest.mark.parametrize(
    "body, fragment",
    [
        ({"type": "Teleport", "version": 0}, "unknown metadata record type 'Teleport'"),
        ({"version": 0}, "unknown metadata record type None"),
        (
            {"type": "Topic", "version": 7, "name": "a", "topic_id": "b"},
            "Topic record version 7 is not supported",
        ),
        ({"type": "Topic", "name": "a", "topic_id": "b"}, "version None is not supported"),
        ({"type": "Topic", "version": 0, "name": "a"}, "lacks fields ['topic_id']"),
        (
            {"type": "Topic", "version": 0, "name": "a", "topic_id": "b", "colour": 1},
            "unknown fields ['colour']",
        ),
    ],
)
def test_unreadable_records_are_refused_with_a_clear_error(body, fragment):
    with pytest.raises(r.MetadataRecordError, match=None) as info:
        r.decode(msgpack.packb(body))
    assert fragment in str(info.value)


def test_a_newer_version_tells_the_operator_to_upgrade():
    with pytest.raises(r.MetadataRecordError, match="upgrade this node"):
        r.decode(msgpack.packb({"type": "NoOp", "version": 1}))


@pytest.mark.parametrize("data", [b"", b"\xc1", msgpack.packb([1, 2]), msgpack.packb("x")])
def test_bytes_that_are_not_a_record_map_are_refused(data):
    with pytest.raises(r.MetadataRecordError):
        r.decode(data)


def test_only_metadata_records_can_be_encoded():
    @dataclasses.dataclass(frozen=True)
    class Impostor:
        TYPE = "Topic"
        VERSION = 0

    with pytest.raises(r.MetadataRecordError, match="not a metadata record type"):
        r.encode(Impostor())


def test_optional_fields_may_be_left_out_and_take_their_defaults():
    data = msgpack.packb({"type": "PartitionChange", "version": 0, "topic_id": "t", "partition": 2})
    assert r.decode(data) == r.PartitionChangeRecord("t", 2)
