"""The broker's seat on the metadata log: the Raft quorum driver (voter or observer), the Quorum
gRPC service, and the publisher that applies each metadata delta to the partitions."""
