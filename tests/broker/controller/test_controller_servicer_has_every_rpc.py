"""ControllerServicer spells its rpcs out one by one: each rpc of controller.proto's Controller
service must be there, as an async method of the same name."""

import inspect

from broker.services.controller_servicer import ControllerServicer
from clients.wire import controller_pb2


def test_every_rpc_of_the_controller_service_is_an_async_method():
    service = controller_pb2.DESCRIPTOR.services_by_name["Controller"]
    names = [m.name for m in service.methods]
    assert len(names) >= 15
    missing = [
        n for n in names if not inspect.iscoroutinefunction(getattr(ControllerServicer, n, None))
    ]
    assert missing == []
