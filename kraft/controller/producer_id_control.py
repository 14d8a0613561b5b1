"""Producer-id blocks: each AllocateProducerIds hands a broker the next 1000 ids, logged so no
two brokers (nor a restarted controller) ever hand out the same id."""

from __future__ import annotations

from clients.errors import ErrorCode
from kraft.controller.cluster_control import check_broker_epoch
from kraft.controller.controller_config import PRODUCER_ID_BLOCK_SIZE
from kraft.controller.messages import AllocateProducerIdsRequest, AllocateProducerIdsResponse
from kraft.controller.result import ControllerResult
from kraft.metadata.image import MetadataImage
from kraft.metadata.records import ProducerIdsRecord

MAX_PRODUCER_ID = 2**63 - 1


def allocate_producer_ids(
    image: MetadataImage, req: AllocateProducerIdsRequest
) -> ControllerResult[AllocateProducerIdsResponse]:
    problem = check_broker_epoch(image, req.broker_id, req.broker_epoch)
    if problem:
        return ControllerResult([], AllocateProducerIdsResponse(*problem))
    start = image.next_producer_id
    if start > MAX_PRODUCER_ID - PRODUCER_ID_BLOCK_SIZE:
        return ControllerResult(
            [],
            AllocateProducerIdsResponse(
                ErrorCode.UNKNOWN_SERVER_ERROR, "the cluster has run out of producer ids"
            ),
        )
    record = ProducerIdsRecord(req.broker_id, req.broker_epoch, start + PRODUCER_ID_BLOCK_SIZE)
    return ControllerResult(
        [record],
        AllocateProducerIdsResponse(
            producer_id_start=start, producer_id_len=PRODUCER_ID_BLOCK_SIZE
        ),
    )
