"""What security costs: produce and consume throughput over SASL_SSL against PLAINTEXT (two
`kraft dev` clusters of one controller and one broker, runs alternated), and how long a client's
first call takes to set up a connection: plaintext, TLS, and SCRAM over TLS (with and without
the salted-password cache, i.e. the PBKDF2).

    python bench/security_overhead.py --records 300000 --rounds 3
"""

from __future__ import annotations

import argparse
import json
import pathlib
import statistics
import sys
import tempfile
import time

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))

from bench.dev_cluster import DevCluster, kraft  # noqa: E402


def _bench(kind: str, bootstrap: str, topic: str, records: int, config: list[str]) -> float:
    args = [
        "bench",
        kind,
        "--bootstrap-server",
        bootstrap,
        "--topic",
        topic,
        "--format",
        "json",
        "-q",
        "--num-records",
        str(records),
        *config,
    ]
    if kind == "produce":
        args += ["--record-size", "100", "--acks", "1"]
    return json.loads(kraft(*args, timeout=600).stdout)["records_per_sec"]


def _first_call_ms(address: str, security: dict, repeats: int, clear_cache: bool) -> float:
    from clients import sasl_client
    from clients.admin import Admin

    times = []
    for _ in range(repeats):
        if clear_cache:
            sasl_client._SALTED.clear()
        started = time.perf_counter()
        with Admin(address, **security) as admin:
            admin.describe_cluster()
        times.append((time.perf_counter() - started) * 1000)
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=300_000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--connects", type=int, default=20)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        plain = DevCluster(pathlib.Path(tmp) / "plain")
        secure = DevCluster(pathlib.Path(tmp) / "secure")
        kraft(
            "dev",
            "--controllers",
            "1",
            "--brokers",
            "1",
            "--port",
            "0",
            "--detach",
            "--data",
            str(plain.data),
            timeout=180,
        )
        kraft(
            "dev",
            "--secure",
            "--controllers",
            "1",
            "--brokers",
            "1",
            "--port",
            "0",
            "--detach",
            "--data",
            str(secure.data),
            timeout=180,
        )
        try:
            config = ["--command-config", str(secure.data / "client.properties")]
            rows = []
            for i in range(args.rounds):
                row = {}
                for name, cluster, extra in (
                    ("plaintext", plain, []),
                    ("sasl_ssl", secure, config),
                ):
                    topic = f"bench-{i}"
                    row[f"{name} produce"] = _bench(
                        "produce", cluster.bootstrap, topic, args.records, extra
                    )
                    row[f"{name} consume"] = _bench(
                        "consume", cluster.bootstrap, topic, args.records, extra
                    )
                rows.append(row)
                print(json.dumps(row), flush=True)
            for kind in ("produce", "consume"):
                p = statistics.mean(r[f"plaintext {kind}"] for r in rows)
                s = statistics.mean(r[f"sasl_ssl {kind}"] for r in rows)
                print(
                    f"{kind}: plaintext {p:,.0f} rec/s, SASL_SSL {s:,.0f} rec/s, ratio {s / p:.2f}x"
                )

            from clients.security import load_command_config, security_options

            scram = security_options(load_command_config(str(secure.data / "client.properties")))
            internal = [
                line.split("INTERNAL://", 1)[1].split(",")[0].strip()
                for line in (secure.data / "node-2" / "server.properties").read_text().splitlines()
                if line.startswith("listeners=")
            ][0]
            tls = {
                "security_protocol": "SSL",
                "ssl_cafile": scram["ssl_cafile"],
                "ssl_certfile": str(secure.data / "pki" / "admin.pem"),
            }
            n = args.connects
            print(
                f"first call on a new client, median of {n}: "
                f"plaintext {_first_call_ms(plain.bootstrap, {}, n, False):.1f} ms, "
                f"TLS {_first_call_ms(internal, tls, n, False):.1f} ms, "
                f"SCRAM over TLS {_first_call_ms(secure.bootstrap, scram, n, True):.1f} ms "
                f"(PBKDF2 included), "
                f"{_first_call_ms(secure.bootstrap, scram, n, False):.1f} ms (salted password "
                f"cached)"
            )
        finally:
            for cluster in (plain, secure):
                kraft("dev", "--stop", "--data", str(cluster.data))


if __name__ == "__main__":
    main()
