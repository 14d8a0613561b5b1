"""The nemeses beyond kill, pause and partition (chaos/nemesis.py): one module each, with what it
does to a node and how it undoes it."""
