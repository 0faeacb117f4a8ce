"""Bloxx! sheet photos: a player's paper sheet read from the camera or from an uploaded photo.

A player asks on their phone ("read my sheet"), then holds the sheet under the table's
camera. From then on every frame is offered to the desk: frames that show a sheet are
read with :class:`vision.bloxx.SheetReader` and kept from the dice recogniser (the sheet
hides the rolling area; the dice have not moved). The photo is decided, and becomes one
``bloxx`` observation for the referee, when

* two frames in a row read the same marks (the sheet is held still and read alike), or
* the sheet leaves the view, or ``timeout_s`` passes: each square then takes the mark
  most of the frames read, and a square the frames split on is reported unsure
  (confidence 0), so it never contradicts the record;
* no sheet was seen within ``timeout_s``: an observation without a sheet, which the
  referee reports as a ``fault`` saying why.

A photo sent from the phone is read once, as it is.
"""

from __future__ import annotations

import threading
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from service.referees.bloxx import sheet_observation

#: how long a player may take to hold the sheet up before the request lapses (seconds of source time)
DEFAULT_TIMEOUT_S = 5.0


@dataclass
class PhotoRequest:
    """One player's request; ``done`` is set when its observation has been refereed."""

    player: str
    asked_t: float
    readings: list[dict[str, Any]] = field(default_factory=list)
    done: threading.Event = field(default_factory=threading.Event)
    events: list[dict[str, Any]] = field(default_factory=list)


class SheetPhotoDesk:
    """Collects a sheet photo's frames and decides what the sheet says (see the module docstring)."""

    def __init__(self, reader: Any, *, timeout_s: float = DEFAULT_TIMEOUT_S) -> None:
        self.reader = reader
        self.timeout_s = timeout_s
        self._lock = threading.Lock()
        self._request: PhotoRequest | None = None

    @property
    def waiting(self) -> PhotoRequest | None:
        return self._request

    def ask(self, player: str, t: float) -> PhotoRequest:
        """A new request from ``player`` at source time ``t`` (it replaces a pending one)."""
        with self._lock:
            if self._request is not None:
                self._request.done.set()
            self._request = PhotoRequest(player, t)
            return self._request

    def offer(self, image: Any, t: float, frame: int | None = None) -> tuple[bool, PhotoRequest | None, dict[str, Any] | None]:
        """Read one frame for the pending request.

        Returns ``(consumed, request, observation)``: ``consumed`` when the frame shows
        the sheet (the dice recogniser should not see it); the observation, when the
        photo is decided, for the request it answers."""
        with self._lock:
            request = self._request
        if request is None:
            return False, None, None
        reading = self.reader.read(image).to_json()
        found = reading.get("sheet") is not None
        if found:
            request.readings.append(reading)
        late = t - request.asked_t > self.timeout_s
        observation = None
        if found and len(request.readings) >= 2 and request.readings[-1]["sheet"] == request.readings[-2]["sheet"]:
            observation = sheet_observation(request.player, _agreeing(request.readings[-2:]), t, frame)
        elif request.readings and (late or not found):
            observation = sheet_observation(request.player, _majority(request.readings), t, frame)
        elif late:
            why = f"no sheet was held under the camera within {self.timeout_s:g} s of asking"
            observation = sheet_observation(request.player, {"sheet": None, "why": why}, t, frame)
        if observation is not None:
            with self._lock:
                if self._request is request:
                    self._request = None
        return found, request, observation

    def read_upload(self, player: str, image: Any, t: float) -> dict[str, Any]:
        """The observation for a photo sent from the phone."""
        return sheet_observation(player, self.reader.read(image).to_json(), t)


def _agreeing(readings: list[dict[str, Any]]) -> dict[str, Any]:
    """Readings with the same marks: each square as sure as its least sure reading."""
    conf = [[min(values) for values in zip(*rows)] for rows in zip(*(r["square_confidence"] for r in readings))]
    return {"sheet": readings[-1]["sheet"], "square_confidence": conf,
            "confidence": min(min(row) for row in conf) if conf else 0.0}


def _majority(readings: list[dict[str, Any]]) -> dict[str, Any]:
    """Each square's mark by vote; a split vote leaves the square unsure (confidence 0)."""
    rows_n = len(readings[0]["sheet"])
    cols_n = len(readings[0]["sheet"][0]) if rows_n else 0
    sheet, conf = [], []
    for r in range(rows_n):
        line, sure = [], []
        for c in range(cols_n):
            votes = Counter(x["sheet"][r][c] for x in readings)
            (mark, n), *rest = votes.most_common()
            line.append(mark)
            if rest and rest[0][1] == n:
                sure.append(0.0)
            else:
                agreeing = [x["square_confidence"][r][c] for x in readings if x["sheet"][r][c] == mark]
                sure.append(round(min(agreeing) * n / len(readings), 3))
        sheet.append("".join(line))
        conf.append(sure)
    return {"sheet": sheet, "square_confidence": conf, "confidence": min(min(row) for row in conf) if conf else 0.0}
