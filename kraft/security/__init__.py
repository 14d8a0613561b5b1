"""Authorization: ACL bindings as Kafka defines them and the authorizer that decides on them
(pure code; brokers feed it their metadata image and each request's principal)."""
