"""Sources that feed a table service: a recorded game replayed at its recorded pace."""

from __future__ import annotations

import threading
import time
import traceback
from typing import Any

from service.recording import Recording
from service.table import TableService


class ReplayRunner(threading.Thread):
    """Feeds a recording's lines to the service at their recorded times (``speed`` x).

    Lines up to ``service.resume_after`` are skipped: after a restart the log already
    holds them. ``speed`` 0 replays as fast as possible. A line that makes the referee
    fail is reported as a fault and skipped; the runner never dies of bad input.
    """

    def __init__(self, service: TableService, recording: Recording, speed: float = 1.0) -> None:
        super().__init__(name="bloxcam-replay", daemon=True)
        self.service = service
        self.recording = recording
        self.speed = speed
        self.resume_after = service.resume_after
        self._stop_event = threading.Event()
        self.status = service.source
        self.status.speed = speed
        self.last_progress = time.monotonic()

    def stop(self) -> None:
        self._stop_event.set()

    def due_wall_time(self, t: float) -> float | None:
        """When a line of source time ``t`` was due, on the wall clock."""
        status = self.status
        if status.start_wall is None or status.first_t is None or self.speed <= 0:
            return None
        return status.start_wall + (t - status.first_t) / self.speed

    def run(self) -> None:
        lines = self.recording.lines
        status = self.service.source
        status.total = len(lines)
        for index, line in enumerate(lines):
            if self._stop_event.is_set():
                return
            t = float(line.get("t", 0.0))
            if self.resume_after is not None and t <= self.resume_after:
                status.skipped += 1
                status.position = index + 1
                continue
            if self.speed > 0:
                if status.first_t is None:
                    status.first_t, status.start_wall = t, time.time()
                # Wait in short steps so the watchdog sees a live loop during long pauses.
                while (delay := self.due_wall_time(t) - time.time()) > 0:
                    if self._stop_event.wait(min(delay, 1.0)):
                        return
                    self.last_progress = time.monotonic()
            self._feed(line)
            status.position = index + 1
            self.last_progress = time.monotonic()
        status.finished = True

    def _feed(self, line: dict[str, Any]) -> None:
        try:
            self.service.feed(line)
        except Exception as exc:  # a bug must not stop the table: report it and go on
            traceback.print_exc()
            self.service.fault(f"input at t={line.get('t')} could not be refereed: {exc}")

    def healthy(self) -> bool:
        """False when the runner is stuck: its loop has not turned for 30 seconds."""
        if not self.is_alive():
            return self.service.source.finished or self._stop_event.is_set()
        return time.monotonic() - self.last_progress < 30
