"""Share groups (KIP-932) on the wire: the admin calls librdkafka lacks, over aiokafka.

librdkafka, hence confluent-kafka, has a share consumer but none of the share-group admin
calls, so this package speaks them itself with aiokafka's protocol framework (flexible
versions, coordinator lookup, SASL/SSL): `protocol` declares the four requests, `admin` runs
them, `sync` decides what a flow writes. It is the only importer of aiokafka, and imports no
other Kafka client (docs/architecture.md, "Share groups").
"""

from mm2.share_groups.admin import ShareGroupAdmin, ShareGroupError, ShareOffset
from mm2.share_groups.sync import ShareGroupSync

__all__ = ["ShareGroupAdmin", "ShareGroupError", "ShareGroupSync", "ShareOffset"]
