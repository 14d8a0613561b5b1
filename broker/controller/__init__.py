"""The active controller seat around kraft.controller's pure state machine: the driver that
proposes its records to the Raft quorum, the channel brokers use to reach it, and its service."""
