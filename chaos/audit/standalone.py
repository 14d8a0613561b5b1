"""A Spark standalone cluster on this machine from the installed PySpark's own jars (no
download): a master and N one-core workers, for the audit's cluster test and its benchmark.
`with standalone_cluster(workdir, workers=2) as url: ...` gives "spark://127.0.0.1:PORT"."""

from __future__ import annotations

import contextlib
import os
import pathlib
import signal
import socket
import subprocess
import sys
import time


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _wait_for(path: pathlib.Path, text: str, count: int, procs, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if path.exists() and path.read_text(errors="replace").count(text) >= count:
            return
        if any(p.poll() is not None for p in procs):
            break
        time.sleep(0.2)
    raise RuntimeError(
        f"no {count} x {text!r} in {path}:\n{path.read_text(errors='replace')[-3000:]}"
    )


@contextlib.contextmanager
def standalone_cluster(workdir: pathlib.Path, workers: int = 2, worker_memory: str = "1g"):
    """The master's URL while a master and `workers` one-core workers run. Each JVM is started
    in a process group of its own, which the executors it forks join: the groups are killed
    on the way out, whatever happens."""
    import pyspark

    home = pathlib.Path(pyspark.__file__).parent
    workdir.mkdir(parents=True, exist_ok=True)
    # A worker builds its executors' command line with Spark's launcher, which needs the Scala
    # version (spark-class finds it; here it is read off the bundled scala-library jar).
    scala = next(home.glob("jars/scala-library-*.jar")).name.split("-")[2].rsplit(".", 2)[0]
    env = {
        **os.environ,
        "SPARK_HOME": str(home),
        "SPARK_LOCAL_IP": "127.0.0.1",
        "PYSPARK_PYTHON": sys.executable,
        "SPARK_SCALA_VERSION": scala,
    }
    java = ["java", "-Xmx512m", "-cp", f"{home}/jars/*"]
    port = _free_port()
    url = f"spark://127.0.0.1:{port}"
    procs: list[subprocess.Popen] = []

    def start(name: str, args: list[str]) -> pathlib.Path:
        log = workdir / f"{name}.log"
        procs.append(
            subprocess.Popen(
                java + args,
                env=env,
                cwd=workdir,
                stdout=open(log, "wb"),
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        )
        return log

    try:
        master_log = start(
            "master",
            [
                "org.apache.spark.deploy.master.Master",
                "--host",
                "127.0.0.1",
                "--port",
                str(port),
                "--webui-port",
                "0",
            ],
        )
        _wait_for(master_log, "I have been elected leader", 1, procs)
        for i in range(1, workers + 1):
            start(
                f"worker{i}",
                [
                    "org.apache.spark.deploy.worker.Worker",
                    url,
                    "--host",
                    "127.0.0.1",
                    "--cores",
                    "1",
                    "--memory",
                    worker_memory,
                    "--webui-port",
                    "0",
                    "--work-dir",
                    str(workdir / f"work{i}"),
                ],
            )
        _wait_for(master_log, "Registering worker", workers, procs)
        yield url
    finally:
        for p in procs:
            try:
                os.killpg(p.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            p.wait(10)
