"""Regenerate clients/wire/*_pb2*.py from proto/*.proto (needs grpcio-tools, a test extra).

python -m clients.wire.generate           # rewrite the committed modules
python -m clients.wire.generate --check   # exit 1 if they are stale
"""

from __future__ import annotations

import filecmp
import pathlib
import re
import sys
import tempfile

ROOT = pathlib.Path(__file__).resolve().parents[2]
PROTO_DIR = ROOT / "proto"
WIRE_DIR = ROOT / "clients" / "wire"
_SIBLING_IMPORT = re.compile(r"^import (\w+_pb2) as ", re.MULTILINE)


def generate(out_dir: pathlib.Path) -> list[pathlib.Path]:
    from grpc_tools import protoc  # only developers and the staleness test need it

    protos = sorted(PROTO_DIR.glob("*.proto"))
    args = [
        "protoc",
        f"-I{PROTO_DIR}",
        f"--python_out={out_dir}",
        f"--pyi_out={out_dir}",
        f"--grpc_python_out={out_dir}",
        *map(str, protos),
    ]
    if protoc.main(args) != 0:
        raise SystemExit("protoc failed")
    written = sorted(p for p in out_dir.iterdir() if "_pb2" in p.name)
    for path in written:
        # protoc writes `import x_pb2`, which only works with the folder on sys.path.
        text = _SIBLING_IMPORT.sub(r"from clients.wire import \1 as ", path.read_text())
        path.write_text(text)
    return written


def stale_files() -> list[str]:
    with tempfile.TemporaryDirectory() as tmp:
        fresh = generate(pathlib.Path(tmp))
        names = {p.name for p in fresh} | {p.name for p in WIRE_DIR.glob("*_pb2*.py*")}
        return sorted(
            n
            for n in names
            if not (WIRE_DIR / n).exists()
            or not (pathlib.Path(tmp) / n).exists()
            or not filecmp.cmp(WIRE_DIR / n, pathlib.Path(tmp) / n, shallow=False)
        )


def main() -> None:
    if "--check" in sys.argv[1:]:
        stale = stale_files()
        if stale:
            print(
                "stale generated modules: "
                + ", ".join(stale)
                + "\nregenerate with: python -m clients.wire.generate",
                file=sys.stderr,
            )
            raise SystemExit(1)
        print("generated modules are up to date")
        return
    for old in WIRE_DIR.glob("*_pb2*.py*"):
        old.unlink()
    for path in generate(WIRE_DIR):
        print(f"wrote {path.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
