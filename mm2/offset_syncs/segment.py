"""Segment: a chain of proven offset syncs in compact form, for mm2.offset_syncs.exact_index.

A segment is a list of points (u, d), copies the writer proved: upstream offset u was copied to
downstream offset d. Between two consecutive points lies one proven interval:

* a run, when both offsets advance by the same amount: every record between was copied;
* a hop otherwise: no mirrored record lies between them upstream, and nothing between them
  downstream is a copy (d advances by one, or jumps over offsets no mirrored record holds).
  A hop whose two jumps are equal is read as a run: a group committed inside its upstream gap
  then resumes inside its downstream gap, which is as exact as resuming at its end.

A compacted topic is all hops between records; a clean one is one run (its two ends). Points
are kept as upstream offsets relative to the first (unsigned 32-bit), and the downstream
offset of point i is d1 + i, plus the extra of the last "mark" at or before i: a mark is a
point reached by an interval whose downstream advanced by more than one (a run of more than
two records, or a downstream jump). So a gappy stretch costs 4 bytes per surviving record
and a run 16 bytes more, whatever its length; a run that goes on moves the end point.
"""

from __future__ import annotations

import base64
import operator
import sys
from array import array
from bisect import bisect_left, bisect_right
from itertools import accumulate
from typing import Final

__all__ = ["SEGMENT_COST", "Segment", "pack_offsets", "unpack_offsets"]

# The budget (exact_index.MAX_OFFSETS_PER_PARTITION) counts each point as one stored offset,
# each mark as two, and each segment as this many more: its objects and array headers take
# about as much memory as that many offsets.
SEGMENT_COST: Final = 32

_REL: Final = "I"  # relative upstream offsets and mark indices
_REL_LIMIT: Final = 1 << (8 * array(_REL).itemsize)
_WIDTHS: Final = {array(code).itemsize: code for code in "BHIQ"}


class Segment:
    """Points (u, d) joined by proven runs and hops; see the module docstring."""

    __slots__ = ("d1", "extra", "marks", "u1", "ups")

    def __init__(self, u1: int, d1: int) -> None:
        self.u1, self.d1 = u1, d1
        self.ups = array(_REL, [0])  # upstream offset of each point, minus u1
        self.marks = array(_REL)  # points reached by an interval whose d advanced by > 1
        self.extra = array("q")  # at each mark i: d(i) - d1 - i

    def __repr__(self) -> str:
        return f"Segment({self.u1}, {self.d1} .. {self.u2}, {self.d2}: {len(self.ups)} points)"

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Segment):
            return NotImplemented
        mine = (self.u1, self.d1, self.ups, self.marks, self.extra)
        return mine == (other.u1, other.d1, other.ups, other.marks, other.extra)

    __hash__ = None  # type: ignore[assignment]

    @property
    def u2(self) -> int:
        return self.u1 + self.ups[-1]

    @property
    def d2(self) -> int:
        return self.down(len(self.ups) - 1)

    @property
    def cost(self) -> int:
        """Stored offsets, as the partition's budget counts them."""
        return len(self.ups) + 2 * len(self.marks) + SEGMENT_COST

    def down(self, i: int) -> int:
        """The downstream offset of point i."""
        k = bisect_right(self.marks, i)
        return self.d1 + i + (self.extra[k - 1] if k else 0)

    def points(self) -> list[tuple[int, int]]:
        return [(self.u1 + u, self.down(i)) for i, u in enumerate(self.ups)]

    def _is_run(self, i: int) -> bool:
        """Whether the interval from point i - 1 to point i is a run."""
        return self.ups[i] - self.ups[i - 1] == self.down(i) - self.down(i - 1)

    def extend(self, up: int, down: int, max_points: int) -> bool:
        """Add the proven interval from the end to (up, down); False when it does not fit
        (the segment is full, or `up` is too far from u1) and the segment is unchanged."""
        rel = up - self.u1
        if rel >= _REL_LIMIT:
            return False
        ups, marks, extra = self.ups, self.marks, self.extra
        n = len(ups)
        if n >= 2 and self._is_run(n - 1) and rel - ups[-1] == down - self.d2:
            # The run goes on: its end point moves.
            n -= 1
            ups.pop()
            if marks and marks[-1] == n:
                marks.pop()
                extra.pop()
        elif n >= max_points:
            return False
        current = extra[-1] if marks else 0
        gap = down - (self.d1 + n + current)
        if gap:
            marks.append(n)
            extra.append(current + gap)
        ups.append(rel)
        return True

    def translate(self, offset: int) -> int:
        """A group committed at u1 <= `offset` <= u2 resumes at: the copy of `offset`, or of
        the first mirrored record after it."""
        rel = offset - self.u1
        i = bisect_left(self.ups, rel)
        here = self.down(i)
        if self.ups[i] == rel:
            return here
        if self._is_run(i):
            return here - (self.ups[i] - rel)
        return here

    def translate_back(self, downstream: int) -> int:
        """A group committed downstream at d1 <= `downstream` <= d2 resumes upstream at: the
        record copied there, or the first mirrored record after the ones it read."""
        lo, hi = 0, len(self.ups)
        while lo < hi:  # the last point at or before `downstream`
            mid = (lo + hi) // 2
            if self.down(mid) <= downstream:
                lo = mid + 1
            else:
                hi = mid
        i = lo - 1
        at = self.down(i)
        if at == downstream:
            return self.u1 + self.ups[i]
        if self._is_run(i + 1):
            return self.u1 + self.ups[i] + (downstream - at)
        return self.u1 + self.ups[i + 1]

    # -- persistence --
    def to_json(self) -> dict[str, object]:
        return {
            "u": self.u1,
            "d": self.d1,
            "ups": pack_offsets(self.ups),
            "marks": pack_offsets(self.marks),
            "extra": pack_offsets(self.extra),
        }

    @classmethod
    def from_json(cls, data: dict[str, object]) -> Segment:
        """Rebuild from `to_json()`; raises ValueError on anything else."""
        seg = cls(_int(data["u"]), _int(data["d"]))
        ups = unpack_offsets(str(data["ups"]))
        marks = unpack_offsets(str(data["marks"]))
        extra = unpack_offsets(str(data["extra"]))
        rising = all(map(operator.lt, ups, ups[1:])) and all(map(operator.lt, marks, marks[1:]))
        if not ups or ups[0] != 0 or not rising or len(marks) != len(extra):
            raise ValueError("exact index: malformed segment")
        if marks and not 0 < marks[0] <= marks[-1] < len(ups):
            raise ValueError("exact index: malformed segment")
        try:
            seg.ups, seg.marks, seg.extra = array(_REL, ups), array(_REL, marks), array("q", extra)
        except OverflowError:
            raise ValueError("exact index: segment offsets out of range") from None
        return seg


def _int(value: object) -> int:
    if not isinstance(value, int):
        raise ValueError(f"exact index: expected an integer, got {value!r}")
    return value


def pack_offsets(values: array[int]) -> str:
    """Non-decreasing non-negative offsets as text: a type code, then base64 of the deltas as
    little-endian unsigned integers of the smallest width that holds them all."""
    deltas = array("Q", values[:1])
    deltas.extend(map(operator.sub, values[1:], values[:-1]))
    width = max(deltas, default=0).bit_length()
    code = next(_WIDTHS[size] for size in sorted(_WIDTHS) if width <= 8 * size)
    packed = array(code, deltas)
    if sys.byteorder == "big":
        packed.byteswap()
    return code + base64.b64encode(packed.tobytes()).decode("ascii")


def unpack_offsets(text: str) -> list[int]:
    """`pack_offsets` undone; raises ValueError on anything else."""
    code, data = text[:1], text[1:]
    if code not in _WIDTHS.values():
        raise ValueError(f"exact index: unknown offset encoding {code!r}")
    packed = array(code)
    raw = base64.b64decode(data, validate=True)
    if len(raw) % packed.itemsize:
        raise ValueError("exact index: truncated offsets")
    packed.frombytes(raw)
    if sys.byteorder == "big":
        packed.byteswap()
    return list(accumulate(packed))
