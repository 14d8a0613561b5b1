"""The broker side, one folder per room, in floors (tests/test_layering.py holds the order): edge/
and security/ on the ground, then idempotence/, replication/, metadata/, controller/,
coordinator/, transaction/, group/, and server/ (the node) on top. Imports kraft and clients,
never the other way round."""
