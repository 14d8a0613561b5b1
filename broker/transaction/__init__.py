"""The transaction coordinator: the `__transaction_state` records, a pure state machine per
transaction state partition (coordinator.py), its trio driver with the marker sender, the
per-broker set of drivers, and the Transaction service."""
