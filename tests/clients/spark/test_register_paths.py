"""The Spark source's one register function, under its three names, and importing any of them
loads no PySpark (kraft works where PySpark is not installed)."""

import subprocess
import sys


def test_the_old_and_the_short_path_are_the_clients_register():
    import chaos.spark_source
    import clients.spark
    import kraft.spark

    assert chaos.spark_source.register is clients.spark.register is kraft.spark.register


def test_importing_the_source_loads_no_pyspark():
    probe = (
        "import sys, kraft.spark, chaos.spark_source; "
        "print(sorted(m for m in sys.modules if m.split('.')[0] in ('pyspark', 'pyarrow')))"
    )
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "[]"
