"""Kafka protocol primitives (INT16/32/64, STRING) as Apache MM2's record schemas use them."""

from __future__ import annotations

import struct
from typing import Final

from mm2.errors import RecordFormatError

__all__ = ["MAX_STRING_BYTES", "Reader", "int16", "int32", "int64", "string"]

MAX_STRING_BYTES: Final = 32767

_INT16: Final = struct.Struct(">h")
_INT32: Final = struct.Struct(">i")
_INT64: Final = struct.Struct(">q")


def _pack(fmt: struct.Struct, name: str, value: int) -> bytes:
    try:
        return fmt.pack(value)
    except struct.error as exc:
        raise RecordFormatError(f"{name} {value!r} does not fit in {fmt.size * 8} bits") from exc


def int16(name: str, value: int) -> bytes:
    """Big-endian INT16; `name` is the schema field, used in the error."""
    return _pack(_INT16, name, value)


def int32(name: str, value: int) -> bytes:
    """Big-endian INT32."""
    return _pack(_INT32, name, value)


def int64(name: str, value: int) -> bytes:
    """Big-endian INT64."""
    return _pack(_INT64, name, value)


def string(name: str, value: str) -> bytes:
    """STRING: INT16 byte length + UTF-8; not nullable, at most 32767 bytes.

    Lone surrogates become '?', as Java's String.getBytes(UTF_8) does.
    """
    if not isinstance(value, str):
        raise RecordFormatError(f"{name} must be a string, not {type(value).__name__}")
    data = value.encode("utf-8", errors="replace")
    if len(data) > MAX_STRING_BYTES:
        raise RecordFormatError(
            f"{name}: string length {len(data)} is larger than the maximum string length"
        )
    return _INT16.pack(len(data)) + data


class Reader:
    """Reads schema fields in order from one buffer; trailing bytes are ignored, as in Java."""

    def __init__(self, data: bytes, what: str) -> None:
        self._data = bytes(data)
        self._pos = 0
        self._what = what

    def _take(self, name: str, size: int) -> bytes:
        end = self._pos + size
        if end > len(self._data):
            raise RecordFormatError(
                f"{self._what}: {name} needs {size} bytes at position {self._pos}, "
                f"only {len(self._data) - self._pos} available"
            )
        chunk = self._data[self._pos : end]
        self._pos = end
        return chunk

    def int16(self, name: str) -> int:
        value: int = _INT16.unpack(self._take(name, 2))[0]
        return value

    def int32(self, name: str) -> int:
        value: int = _INT32.unpack(self._take(name, 4))[0]
        return value

    def int64(self, name: str) -> int:
        value: int = _INT64.unpack(self._take(name, 8))[0]
        return value

    def string(self, name: str) -> str:
        """Malformed UTF-8 decodes to U+FFFD, as Java's new String(bytes, UTF_8) does."""
        length = self.int16(name)
        if length < 0:
            raise RecordFormatError(
                f"{self._what}: {name} string length {length} cannot be negative"
            )
        return self._take(name, length).decode("utf-8", errors="replace")
