"""The gRPC services of a node's listeners: each translates protobuf to the wire-neutral
handlers (broker/handlers/) and their answers back, and decides nothing itself."""
