"""Idempotent producers on the broker: producer-id blocks from the controller, and each
partition's producer state (last sequences per producer) with its snapshot files."""
