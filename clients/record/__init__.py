"""Kafka's record batch format v2 (magic 2): the header, the full codec, compression, CRC32C."""
