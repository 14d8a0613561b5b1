"""Generated protobuf and gRPC modules for proto/*.proto (committed; regenerate with
`python -m clients.wire.generate`). Imported as clients.wire.<name>_pb2, never as top-level `proto`."""
