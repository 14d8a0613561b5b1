"""kraft's client side: the record-batch format, codecs, error codes, the trio<->gRPC bridge,
the generated wire modules, the Producer / Consumer / Admin and the command-line tools."""
