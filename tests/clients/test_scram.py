"""The SCRAM core: RFC 7677's SCRAM-SHA-256 example byte for byte, both mechanisms end to end,
and a wrong password, an unknown user or a tampered message failing with Kafka's error names."""

from __future__ import annotations

import pytest

from clients.scram import ScramClient, ScramError, ScramServer, new_credential


def test_rfc7677_example():
    client = ScramClient("SCRAM-SHA-256", "user", "pencil", nonce="rOprNGfwEbeRWgbNEkqO")
    assert client.first() == b"n,,n=user,r=rOprNGfwEbeRWgbNEkqO"
    server_first = (
        b"r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096"
    )
    assert client.final(server_first) == (
        b"c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,"
        b"p=dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ="
    )
    client.verify(b"v=6rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4=")
    with pytest.raises(ScramError):
        client.verify(b"v=AAAATRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4=")


def _exchange(mechanism, stored_password, password, user="alice", known=True):
    credential = new_credential(mechanism, stored_password)
    server = ScramServer(
        mechanism, lambda name: credential if known and name == user else None, b"k" * 32
    )
    client = ScramClient(mechanism, user, password)
    server_final = server.final(client.final(server.first(client.first())))
    client.verify(server_final)
    return server.username


@pytest.mark.parametrize("mechanism", ["SCRAM-SHA-256", "SCRAM-SHA-512"])
def test_both_mechanisms_and_what_fails(mechanism):
    assert _exchange(mechanism, "s3cret", "s3cret", user="a,b=c") == "a,b=c"
    for password, known in (("wrong", True), ("s3cret", False)):
        with pytest.raises(ScramError) as info:
            _exchange(mechanism, "s3cret", password, known=known)
        assert info.value.error_name == "SASL_AUTHENTICATION_FAILED"


def test_an_unknown_user_looks_like_a_known_one():
    server = ScramServer("SCRAM-SHA-256", lambda name: None, b"k" * 32)
    first = server.first(b"n,,n=nobody,r=abc").decode()
    again = ScramServer("SCRAM-SHA-256", lambda name: None, b"k" * 32).first(b"n,,n=nobody,r=x")
    assert ",s=" in first and ",i=4096" in first
    assert first.split(",")[1] == again.decode().split(",")[1]  # the same salt every time


def test_bad_messages_are_illegal_state():
    server = ScramServer("SCRAM-SHA-256", lambda name: None, b"k" * 32)
    with pytest.raises(ScramError) as info:
        server.final(b"c=biws,r=x,p=AAAA")
    assert info.value.error_name == "ILLEGAL_SASL_STATE"
    with pytest.raises(ScramError) as info:
        server.first(b"p=tls-unique,,n=a,r=b")
    assert info.value.error_name == "ILLEGAL_SASL_STATE"
    with pytest.raises(ScramError) as info:
        ScramServer("PLAIN", lambda name: None, b"")
    assert info.value.error_name == "UNSUPPORTED_SASL_MECHANISM"
