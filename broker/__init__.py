"""The broker side: partitions, the gRPC servicers and the node process (roles: controller,
broker or both). Imports kraft and clients, never the other way round."""
