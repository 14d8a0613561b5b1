"""The log engine: segment files, offset and time indexes, recovery, retention and checkpoints in
Kafka's on-disk layout. Data partitions and the Raft metadata log both sit on `Log`."""
