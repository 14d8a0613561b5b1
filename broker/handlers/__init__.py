"""Wire-neutral request handlers: each Kafka request's decisions (authorization, the request's
own rules, the waits) made once, from frozen dataclasses to frozen dataclasses with Kafka's error
codes, so that every wire (the gRPC servicers, a Kafka-protocol listener) calls the same code.

A handler never reads protobuf or a grpc context: the sender comes in as a RequestContext
(`who`), and a wire translates its own messages to and from the dataclasses of the module."""
