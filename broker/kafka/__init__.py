"""Kafka's own wire protocol beside kraft's gRPC: framing and connections (framing.py,
connection.py, listener.py), the codec (codec.py, kio for cold messages, hand-written hot ones),
one handler module per Kafka API (handlers/), and the one adapter into the broker (backend.py)."""
