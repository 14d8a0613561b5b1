"""The kraft producer: AsyncProducer for trio code, Producer for blocking scripts; both return a
RecordFuture per record that resolves to RecordMetadata(topic, partition, offset, timestamp)."""

from clients.producer.blocking import Producer
from clients.producer.future import RecordFuture, RecordMetadata, RecordsFuture
from clients.producer.producer import AsyncProducer, BufferFull

__all__ = [
    "AsyncProducer",
    "BufferFull",
    "Producer",
    "RecordFuture",
    "RecordMetadata",
    "RecordsFuture",
]
