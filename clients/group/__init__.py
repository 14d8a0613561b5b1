"""Consumer-group pieces the client owns (Kafka's consumer jar): the "consumer" protocol's
subscription and assignment codec, and the assignors a group's leader member runs."""
