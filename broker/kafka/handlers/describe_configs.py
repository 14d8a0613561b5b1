"""DescribeConfigs 1-4: the admin handler's, for topics (Kafka's resource type 2); other
resource types get INVALID_REQUEST from the controller, in Kafka's answer."""

from __future__ import annotations

from broker.kafka import codec
from broker.kafka.answer import Answer
from kraft.controller import messages as c
from kraft.log.log_config import TOPIC_CONFIGS

API_KEY = 32
ORDERED = False

# Kafka's resource type numbers and kraft's names for them.
RESOURCE_TYPES = {2: "topic", 4: "broker", 8: "broker_logger"}
NAMES = {v: k for k, v in RESOURCE_TYPES.items()}
# Kafka's ConfigType numbers (DescribeConfigs v3+), from each topic key's type.
CONFIG_TYPES = {
    "boolean": 1,
    "string": 2,
    "int": 3,
    "short": 4,
    "long": 5,
    "double": 6,
    "list": 7,
    "class": 8,
    "password": 9,
}
# Kafka's ConfigSource numbers (DescribeConfigsResponse.config_source).
SOURCES = {
    "DYNAMIC_TOPIC_CONFIG": 1,
    "DYNAMIC_BROKER_CONFIG": 2,
    "DYNAMIC_DEFAULT_BROKER_CONFIG": 3,
    "STATIC_BROKER_CONFIG": 4,
    "DEFAULT_CONFIG": 5,
}


async def handle(ctx, request, started):
    resources = tuple(
        c.ConfigResource(
            RESOURCE_TYPES.get(r.resource_type, str(r.resource_type)),
            r.resource_name,
            None if r.configuration_keys is None else tuple(r.configuration_keys),
        )
        for r in request.resources
    )
    documented = getattr(request, "include_documentation", False)
    r = await ctx.backend.admin(c.DescribeConfigsRequest(resources), ctx.who)
    results = list(r.results)
    if r.error_code:  # NOT_CONTROLLER and the like: every resource's answer
        results = [
            c.DescribeConfigsResult(x.resource_type, x.resource_name, r.error_code, r.error_message)
            for x in resources
        ]
    return Answer.of(
        codec.encode_response(
            API_KEY,
            ctx.version,
            {
                "throttle_time": 0,
                "results": [
                    {
                        "error_code": x.error_code,
                        "error_message": x.error_message or None,
                        "resource_type": NAMES.get(x.resource_type, 0),
                        "resource_name": x.resource_name,
                        "configs": [
                            {
                                "name": e.name,
                                "value": e.value,
                                "read_only": False,
                                "config_source": SOURCES.get(e.source, 5),
                                "is_sensitive": False,
                                "synonyms": [],
                                "config_type": config_type(e.name),
                                "documentation": _doc(e.name) if documented else None,
                            }
                            for e in x.configs
                        ],
                    }
                    for x in results
                ],
            },
        )
    )


def config_type(name: str) -> int:
    known = TOPIC_CONFIGS.get(name)
    return CONFIG_TYPES.get(known.type, 0) if known else 0  # 0: UNKNOWN


def _doc(name: str) -> str | None:
    known = TOPIC_CONFIGS.get(name)
    return known.doc if known else None
