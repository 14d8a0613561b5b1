"""kraft: the log engine, Raft, the metadata image and the quorum controller.
Imports `clients` only; never `broker` (see DESIGN.md 2)."""
