"""Where Java's default partitioner puts a keyed record: `toPositive(murmur2(key)) % partitions`.

Connect writes its offsets topic with Java's producer, and mm2 with librdkafka's
`murmur2_random`, which places keys the same way; knowing the partition of a flow's keys lets a
reader wait only for those partitions of the offsets topic (mm2.copy.positions). Written here
because confluent-kafka exposes no partitioner to Python, and Kafka's Utils.murmur2 is a fixed,
small function (tests/integration/test_apache_takeover.py checks it against Apache MM2's own
placement on a real broker).
"""

from __future__ import annotations

__all__ = ["java_partition", "murmur2"]

_M = 0x5BD1E995
_MASK = 0xFFFFFFFF


def murmur2(data: bytes) -> int:
    """Kafka's `Utils.murmur2` as an unsigned 32-bit int (its seed and mixing)."""
    h = (0x9747B28C ^ len(data)) & _MASK
    whole = len(data) - len(data) % 4
    for i in range(0, whole, 4):
        k = (int.from_bytes(data[i : i + 4], "little") * _M) & _MASK
        k ^= k >> 24
        k = (k * _M) & _MASK
        h = ((h * _M) & _MASK) ^ k
    tail = data[whole:]
    if len(tail) >= 3:
        h ^= tail[2] << 16
    if len(tail) >= 2:
        h ^= tail[1] << 8
    if tail:
        h ^= tail[0]
        h = (h * _M) & _MASK
    h ^= h >> 13
    h = (h * _M) & _MASK
    return h ^ (h >> 15)


def java_partition(key: bytes, partitions: int) -> int:
    """The partition Java's default partitioner gives a record keyed `key`."""
    return (murmur2(key) & 0x7FFFFFFF) % partitions
