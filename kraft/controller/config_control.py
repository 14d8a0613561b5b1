"""Topic configs: describing a topic's effective configs with where each value comes from,
incremental alters validated as a whole, and the per-topic settings other commands read."""

from __future__ import annotations

from collections.abc import Mapping

from clients.errors import ErrorCode
from clients.topics import INTERNAL_TOPICS
from kraft.controller.controller_config import ControllerConfig
from kraft.controller.messages import (
    AlterConfigOpType,
    AlterConfigsResult,
    ConfigEntry,
    DescribeConfigsRequest,
    DescribeConfigsResponse,
    DescribeConfigsResult,
    IncrementalAlterConfigsRequest,
    IncrementalAlterConfigsResponse,
)
from kraft.controller.partition_change import partition_change
from kraft.controller.result import ControllerResult, PendingRecords
from kraft.log.log_config import TOPIC_CONFIGS, ConfigError, LogConfig
from kraft.metadata.image import TOPIC_RESOURCE, MetadataImage
from kraft.metadata.records import ConfigRecord


def unknown_topic_message(name: str) -> str:
    return f"topic '{name}' does not exist; create it with: kraft topic create {name}"


def internal_topic_problem(name: str, action: str) -> str | None:
    """Internal topics are the cluster's own state (every committed offset, the metadata log):
    no client may delete, reconfigure or resize them, whatever its ACLs say."""
    if name not in INTERNAL_TOPICS:
        return None
    return (
        f"topic '{name}' is internal to kraft and cannot be {action} by a client; "
        f"its brokers manage it"
    )


class TopicConfigs:
    """Topic configs as seen through the broker-level defaults of one ControllerConfig."""

    def __init__(self, config: ControllerConfig) -> None:
        self.config = config
        try:
            self.defaults = LogConfig.from_props(config.topic_defaults)
        except ConfigError as exc:
            raise ValueError(f"broker topic defaults: {exc}") from None

    def validate(self, overrides: Mapping[str, str]) -> LogConfig:
        """The effective config; raises ConfigError naming the bad key."""
        return LogConfig.from_props(overrides, defaults=self.defaults)

    def effective(self, image: MetadataImage, topic: str) -> LogConfig:
        try:
            return self.validate(image.topic_configs(topic))
        except ConfigError:
            # Overrides are validated before they are logged; should defaults change under
            # them, the defaults win rather than breaking elections.
            return self.defaults

    def unclean_policy(self, image: MetadataImage):
        return lambda topic: self.effective(image, topic).unclean_leader_election_enable

    def _source(self, overrides: Mapping[str, str], key: str) -> str:
        if key in overrides:
            return "DYNAMIC_TOPIC_CONFIG"
        if key in self.config.topic_defaults:
            return "STATIC_BROKER_CONFIG"
        return "DEFAULT_CONFIG"

    def describe(
        self, image: MetadataImage, req: DescribeConfigsRequest
    ) -> ControllerResult[DescribeConfigsResponse]:
        return ControllerResult(
            [],
            DescribeConfigsResponse(tuple(self._describe_one(image, res) for res in req.resources)),
        )

    def _describe_one(self, image, res) -> DescribeConfigsResult:
        def fail(code, message):
            return DescribeConfigsResult(res.resource_type, res.resource_name, code, message)

        if res.resource_type != TOPIC_RESOURCE:
            return fail(
                ErrorCode.INVALID_REQUEST,
                f"resource type '{res.resource_type}' is not supported; use 'topic'",
            )
        if image.topic(res.resource_name) is None:
            return fail(
                ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, unknown_topic_message(res.resource_name)
            )
        overrides = image.topic_configs(res.resource_name)
        effective = self.effective(image, res.resource_name).to_props()
        keys = list(res.keys) if res.keys else sorted(effective)
        unknown = [k for k in keys if k not in effective]
        if unknown:
            return fail(ErrorCode.INVALID_CONFIG, f"unknown topic config {', '.join(unknown)}")
        entries = []
        for key in keys:
            source = self._source(overrides, key)
            entries.append(ConfigEntry(key, effective[key], source == "DEFAULT_CONFIG", source))
        return DescribeConfigsResult(res.resource_type, res.resource_name, configs=tuple(entries))

    def incremental_alter(
        self, image: MetadataImage, req: IncrementalAlterConfigsRequest
    ) -> ControllerResult[IncrementalAlterConfigsResponse]:
        pending, results = PendingRecords(image), []
        for res in req.resources:
            code, message, changes = self._alter_one(pending.image, res)
            results.append(AlterConfigsResult(res.resource_type, res.resource_name, code, message))
            if not code and not req.validate_only and changes:
                pending.extend(changes)
                self._maybe_elect_unclean(pending, res.resource_name)
        return ControllerResult(pending.records, IncrementalAlterConfigsResponse(tuple(results)))

    def _maybe_elect_unclean(self, pending: PendingRecords, topic_name: str) -> None:
        # Turning unclean.leader.election.enable on is how an operator revives a partition
        # whose ISR is gone, so leaderless partitions get a leader right away.
        image = pending.image
        if not self.effective(image, topic_name).unclean_leader_election_enable:
            return
        topic = image.topic(topic_name)
        for p, reg in sorted(topic.partitions.items()):
            if not reg.has_leader:
                record = partition_change(image, topic.topic_id, p, reg, unclean=True)
                if record is not None:
                    pending.append(record)

    def _alter_one(self, image, res) -> tuple[int, str, list[ConfigRecord]]:
        if res.resource_type != TOPIC_RESOURCE:
            return (
                ErrorCode.INVALID_REQUEST,
                f"resource type '{res.resource_type}' is not supported; use 'topic'",
                [],
            )
        name = res.resource_name
        internal = internal_topic_problem(name, "reconfigured")
        if internal:
            return ErrorCode.POLICY_VIOLATION, internal, []
        if image.topic(name) is None:
            return ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, unknown_topic_message(name), []
        keys = [op.name for op in res.ops]
        dupes = sorted({k for k in keys if keys.count(k) > 1})
        if dupes:
            return ErrorCode.INVALID_REQUEST, f"config {', '.join(dupes)} is altered twice", []
        old = dict(image.topic_configs(name))
        new = dict(old)
        effective = self.effective(image, name).to_props()
        for op in res.ops:
            definition = TOPIC_CONFIGS.get(op.name)
            if definition is None:
                try:
                    self.validate({op.name: ""})
                except ConfigError as exc:  # names the key and suggests the closest one
                    return ErrorCode.INVALID_CONFIG, str(exc), []
            if op.op == AlterConfigOpType.DELETE:
                new.pop(op.name, None)
                continue
            if op.value is None:
                return ErrorCode.INVALID_CONFIG, f"{op.name}: {op.op.name} needs a value", []
            if op.op == AlterConfigOpType.SET:
                new[op.name] = op.value
                continue
            if definition.type != "list":
                return (
                    ErrorCode.INVALID_CONFIG,
                    f"{op.name}: {op.op.name} works on list configs only; use SET",
                    [],
                )
            items = [i for i in effective[op.name].split(",") if i]
            given = [i.strip() for i in op.value.split(",") if i.strip()]
            if op.op == AlterConfigOpType.APPEND:
                items += [i for i in given if i not in items]
            else:
                items = [i for i in items if i not in given]
            new[op.name] = ",".join(items)
        try:
            self.validate(new)
        except ConfigError as exc:
            return ErrorCode.INVALID_CONFIG, str(exc), []
        changes = [
            ConfigRecord(TOPIC_RESOURCE, name, k, new.get(k))
            for k in sorted(old.keys() | new.keys())
            if old.get(k) != new.get(k)
        ]
        return ErrorCode.NONE, "", changes
