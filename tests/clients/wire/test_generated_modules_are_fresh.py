"""The committed clients/wire modules match what protoc makes from proto/*.proto today."""

from clients.wire import generate


def test_committed_generated_modules_match_the_protos():
    assert generate.stale_files() == [], "run: python -m clients.wire.generate"


def test_a_changed_proto_is_detected(tmp_path, monkeypatch):
    proto = tmp_path / "proto"
    proto.mkdir()
    for src in generate.PROTO_DIR.glob("*.proto"):
        (proto / src.name).write_text(src.read_text())
    (proto / "broker.proto").write_text(
        (proto / "broker.proto").read_text() + "\nmessage Extra { int32 x = 1; }\n"
    )
    monkeypatch.setattr(generate, "PROTO_DIR", proto)
    assert "broker_pb2.py" in generate.stale_files()
