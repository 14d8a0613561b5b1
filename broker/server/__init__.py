"""The node process: its configuration, the Broker gRPC service (Metadata, Produce, Fetch,
ListOffsets), the broker's registration lifecycle, and the wiring of every room into one node."""
