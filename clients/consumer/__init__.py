"""The kraft consumer: AsyncConsumer for trio code, Consumer for blocking scripts; manual
assignment, seeks and offset lookups; poll returns ConsumerRecord tuples from a prefetch buffer."""
from clients.consumer.consumer import AsyncConsumer, Consumer
from clients.consumer.fetcher import ConsumerRecord

__all__ = ["AsyncConsumer", "Consumer", "ConsumerRecord"]
