"""The active controller seat around kraft.controller's pure state machine: the driver that
proposes its records to the Raft quorum, and its service (brokers reach it through
broker/edge/controller_channel.py)."""
