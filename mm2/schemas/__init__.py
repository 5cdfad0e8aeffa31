"""Schemas with their records: a flow's Schema Registry copied to its target's.

Records written with Confluent's serializers carry a schema ID (a 4-byte prefix, or a GUID
header); a consumer on the target decodes them only if the target's registry answers that ID
with the same schema. This package copies a source registry's subjects to a target registry
over Confluent's REST API (httpx, its only HTTP client): `client` speaks the API, politely
(`polite`); `subjects` names subjects on the target through the flow's replication policy and
filters them; `sync` runs a pass and reports each source ID's target ID to a sink. It imports
no Kafka client: the schema connector (mm2.connectors.schema) writes the mappings to Kafka.
"""
