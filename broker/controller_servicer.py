"""The Controller gRPC service as a single node answers it: topic create/delete, partitions,
configs. Each topic or resource gets its own error code, as in Kafka's admin protocol."""
from __future__ import annotations

from broker.topic_admin import TopicAdmin
from clients.errors import ErrorCode, KraftError
from clients.wire import controller_pb2 as pb

METHODS = ["CreateTopics", "DeleteTopics", "CreatePartitions", "DescribeConfigs", "AlterConfigs"]


def _topic_only(resource) -> None:
    if resource.resource_type != pb.TOPIC:
        raise KraftError(ErrorCode.INVALID_REQUEST,
                         f"only topic configs can be described or altered here, not resource type "
                         f"{resource.resource_type}")


class ControllerServicer:
    def __init__(self, admin: TopicAdmin) -> None:
        self.admin = admin

    async def CreateTopics(self, request: pb.CreateTopicsRequest) -> pb.CreateTopicsResponse:
        results = []
        for topic in request.topics:
            try:
                info = self.admin.create_topic(topic.name, topic.num_partitions, topic.replication_factor,
                                               dict(topic.configs), request.validate_only)
                results.append(pb.CreateTopicsResult(name=topic.name, num_partitions=info.num_partitions,
                                                     replication_factor=1))
            except KraftError as exc:
                results.append(pb.CreateTopicsResult(name=topic.name, error_code=exc.code,
                                                     error_message=exc.message))
        return pb.CreateTopicsResponse(topics=results)

    async def DeleteTopics(self, request: pb.DeleteTopicsRequest) -> pb.DeleteTopicsResponse:
        results = []
        for name in request.names:
            try:
                self.admin.delete_topic(name)
                results.append(pb.DeleteTopicsResult(name=name))
            except KraftError as exc:
                results.append(pb.DeleteTopicsResult(name=name, error_code=exc.code, error_message=exc.message))
        return pb.DeleteTopicsResponse(topics=results)

    async def CreatePartitions(self, request: pb.CreatePartitionsRequest) -> pb.CreatePartitionsResponse:
        results = []
        for topic in request.topics:
            try:
                self.admin.create_partitions(topic.name, topic.count, request.validate_only)
                results.append(pb.CreatePartitionsResult(name=topic.name))
            except KraftError as exc:
                results.append(pb.CreatePartitionsResult(name=topic.name, error_code=exc.code,
                                                         error_message=exc.message))
        return pb.CreatePartitionsResponse(results=results)

    async def DescribeConfigs(self, request: pb.DescribeConfigsRequest) -> pb.DescribeConfigsResponse:
        results = []
        for resource in request.resources:
            result = pb.DescribeConfigsResult(resource_type=resource.resource_type,
                                              resource_name=resource.resource_name)
            try:
                _topic_only(resource)
                for value in self.admin.describe_configs(resource.resource_name, list(resource.config_names)):
                    result.configs.append(pb.ConfigEntry(name=value.name, value=value.value,
                                                         is_default=value.is_default, source=value.source))
            except KraftError as exc:
                result.error_code, result.error_message = exc.code, exc.message
            results.append(result)
        return pb.DescribeConfigsResponse(results=results)

    async def AlterConfigs(self, request: pb.AlterConfigsRequest) -> pb.AlterConfigsResponse:
        results = []
        for resource in request.resources:
            result = pb.AlterConfigsResult(resource_type=resource.resource_type,
                                           resource_name=resource.resource_name)
            try:
                _topic_only(resource)
                set_ = {c.name: c.value for c in resource.configs if c.op == pb.SET}
                delete = [c.name for c in resource.configs if c.op == pb.DELETE]
                self.admin.alter_configs(resource.resource_name, set_, delete, request.validate_only)
            except KraftError as exc:
                result.error_code, result.error_message = exc.code, exc.message
            results.append(result)
        return pb.AlterConfigsResponse(results=results)
