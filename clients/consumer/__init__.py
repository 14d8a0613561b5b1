"""The kraft consumer: AsyncConsumer for trio code, Consumer for blocking scripts; manual
assignment or consumer groups (subscribe, commits, rebalance listeners); poll returns
ConsumerRecord tuples from a prefetch buffer."""

from clients.consumer.blocking import Consumer
from clients.consumer.consumer import AsyncConsumer
from clients.consumer.coordinator import ConsumerRebalanceListener
from clients.consumer.fetcher import ConsumerRecord

__all__ = ["AsyncConsumer", "Consumer", "ConsumerRebalanceListener", "ConsumerRecord"]
