"""kraft: the log engine, Raft, the metadata image and the quorum controller.
Imports `clients` only; never `broker` (tests/test_layering.py holds that)."""
