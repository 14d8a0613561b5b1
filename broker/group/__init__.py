"""The group coordinator: the `__consumer_offsets` records, a pure state machine per offsets
partition (partition_coordinator.py, with rebalance.py and offset_commits.py), its trio driver,
the broker's registry of those drivers (coordinator_registry.py), and the Group service."""
