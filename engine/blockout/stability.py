"""Stability events: the interface between a stack sensor and the Block Out! engine.

A stability sensor (the accelerometer detector of ``device/``, a test, a human pressing a
button) reports what the stack does after a block is placed. Each report is one event in
the ``stability`` shape of ``observation.md``::

    {"kind": "stability", "event": "placed",   "t": 12.40}   # block set on the stack
    {"kind": "stability", "event": "counting", "t": 12.95}   # released and settled: count starts
    {"kind": "stability", "event": "stood",    "t": 15.95}   # count finished, stack standing
    {"kind": "stability", "event": "fell",     "t": 13.70}   # stack fell (any moment)

* ``event`` names the stability event; ``t`` is seconds on the sensor's clock (any origin,
  but one clock for all events of a count). ``kind`` may be omitted; when present it must
  be ``"stability"``. Other keys (``seq``, ``game``, ``player`` ...) are ignored.
* Instead of a mapping, any object with attributes ``event`` (str) and ``t`` (float) is
  accepted, e.g. :class:`StabilityEvent`.

The engine's rules for the sequence (R-BLOCKOUT-3) are documented on
:meth:`engine.blockout.BlockOutState.apply_stability_event`.
"""

from __future__ import annotations

import enum
import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

#: R-BLOCKOUT-3: the count lasts 3.0 seconds from the moment the stack has settled.
COUNT_SECONDS = 3.0
#: A ``stood`` this close to 3.0 s counts as 3.0 s: sensor samples arrive every few ms and
#: timestamps are rounded, and the detector of issue 10 is held to 10 ms of the true time.
COUNT_TOLERANCE = 0.01


class StabilityKind(str, enum.Enum):
    PLACED = "placed"
    COUNTING = "counting"
    STOOD = "stood"
    FELL = "fell"


@dataclass(frozen=True)
class StabilityEvent:
    """One stability event; see the module docstring for the JSON shape."""

    event: StabilityKind
    t: float

    def to_json(self) -> dict[str, Any]:
        return {"kind": "stability", "event": self.event.value, "t": self.t}

    @classmethod
    def coerce(cls, raw: Any) -> "StabilityEvent":
        """Accept a :class:`StabilityEvent`, a mapping or an object with ``event`` and ``t``.

        Raises ``ValueError`` for anything that is not a well-formed stability event.
        """
        if isinstance(raw, StabilityEvent):
            return raw
        if isinstance(raw, Mapping):
            if "kind" in raw and raw["kind"] != "stability":
                raise ValueError(f"not a stability event: kind {raw['kind']!r}")
            name, t = raw.get("event"), raw.get("t")
        else:
            name, t = getattr(raw, "event", None), getattr(raw, "t", None)
        if isinstance(name, StabilityKind):
            kind = name
        else:
            try:
                kind = StabilityKind(name)
            except ValueError:
                raise ValueError(
                    f"stability event must be one of placed, counting, stood, fell; got {name!r}"
                ) from None
        if isinstance(t, bool) or not isinstance(t, (int, float)) or not math.isfinite(t):
            raise ValueError(f"stability event needs a finite number 't' (seconds), got {t!r}")
        return cls(kind, float(t))
