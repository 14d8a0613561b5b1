"""The transaction coordinator: the `__transaction_state` records, a pure state machine per
transaction state partition (partition_coordinator.py), its trio driver with the marker sender,
the broker's registry of those drivers (coordinator_registry.py), and the Transaction service."""
