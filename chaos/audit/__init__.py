"""The consistency audit: a PySpark job (job.py) that reads every replica's segment files, the
metadata logs and the chaos history, runs the checks listed in checks.py and writes a report."""
