"""Chaos testing of a kraft cluster: the Jepsen-style history format (history.py) and the PySpark
consistency audit (audit/) that checks every replica log, the metadata logs and the history."""
