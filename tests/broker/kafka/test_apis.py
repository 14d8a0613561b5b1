"""The API table against kio's schemas (Kafka's own JSON files): each served version exists,
and its flexibility (which decides the header versions) is Kafka's."""

from __future__ import annotations

import importlib

import pytest

from broker.kafka.apis import APIS, MIN_PRODUCE_SERVED, PRODUCE, header_versions


def _served():
    for api in APIS.values():
        low = MIN_PRODUCE_SERVED if api.key == PRODUCE else api.min_version
        for version in range(low, api.max_version + 1):
            yield api, version


@pytest.mark.parametrize("api, version", list(_served()), ids=lambda x: str(x))
def test_flexible_versions_are_kafkas(api, version):
    module = importlib.import_module(f"kio.schema.{api.name}.v{version}.request")
    request = next(
        v
        for v in vars(module).values()
        if getattr(v, "__type__", None) is not None and getattr(v.__type__, "name", "") == "request"
    )
    assert request.__api_key__ == api.key
    assert request.__flexible__ == (version >= api.first_flexible)


def test_api_versions_answers_with_header_v0_even_when_flexible():
    assert header_versions(18, 3) == (2, 0)
    assert header_versions(3, 12) == (2, 1)
    assert header_versions(3, 8) == (1, 0)


def test_a_null_where_a_version_has_none_is_the_types_zero():
    from broker.kafka.codec import encode_response

    v5 = encode_response(11, 5, {"protocol_name": None, "protocol_type": None, "leader": "l"})
    v7 = encode_response(11, 7, {"protocol_name": None, "protocol_type": None, "leader": "l"})
    assert b"\x00\x00\x00\x01l" in v5  # an empty protocol name, then the leader "l"
    assert v7.endswith(b"\x00\x00\x02l\x01\x01\x00")  # v7: compact nulls
