"""The broker side, one folder per room: replication/, group/, controller/, metadata/,
idempotence/ and server/ (the node). Imports kraft and clients, never the other way round."""
