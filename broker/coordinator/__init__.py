"""What the group and the transaction coordinators share (Kafka's coordinator runtime): a driver
per led partition of their internal topic (runtime.py: load, acks=all appends, ticks, parked
requests, FindCoordinator's leader and topic creation) and which partition holds a key
(placement.py). Below group/ and transaction/, above replication/ and metadata/."""
