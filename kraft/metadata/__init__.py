"""The metadata log's records, the immutable MetadataImage they build, the MetadataDelta that
replays them, and snapshots (an image written back as the records that rebuild it)."""
