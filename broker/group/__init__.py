"""The group coordinator: the `__consumer_offsets` records, a pure state machine per offsets
partition (coordinator.py), its trio driver, the per-broker set of drivers, and the Group service."""
