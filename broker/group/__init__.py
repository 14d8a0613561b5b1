"""The group coordinator (DESIGN.md 5, Group service): the `__consumer_offsets` records and a pure
state machine per offsets partition; the trio driver and servicer sit outside this package."""
