"""Sources that feed a table service: a recorded game replayed at its recorded pace."""

from __future__ import annotations

import queue
import threading
import time
import traceback
from typing import Any, Iterator

from service.recording import Recording
from service.table import TableService


class SourceRunner(threading.Thread):
    """A thread that feeds a table service from a source; the watchdog asks ``healthy()``."""

    def __init__(self, name: str, service: TableService) -> None:
        super().__init__(name=name, daemon=True)
        self.service = service
        self.resume_after = service.resume_after
        self._stop_event = threading.Event()
        self.last_progress = time.monotonic()

    def stop(self) -> None:
        self._stop_event.set()

    def stopping(self) -> bool:
        """True once ``stop()`` was called: a live source's reading loop ends then."""
        return self._stop_event.is_set()

    def healthy(self) -> bool:
        """False when the runner is stuck: its loop has not turned for 30 seconds."""
        if not self.is_alive():
            return self.service.source.finished or self._stop_event.is_set()
        return time.monotonic() - self.last_progress < 30


class RunnerGroup:
    """Several sources feeding one table at once (a Block Out! table's camera and stack
    sensor): started, stopped and watched together; the page reaches each one's
    attributes (the camera view, the sheet-photo desk) through the group."""

    def __init__(self, runners: list[SourceRunner]) -> None:
        self.runners = runners

    def start(self) -> None:
        for runner in self.runners:
            runner.start()

    def stop(self) -> None:
        for runner in self.runners:
            runner.stop()

    def healthy(self) -> bool:
        return all(runner.healthy() for runner in self.runners)

    def __getattr__(self, name: str) -> Any:
        for runner in self.__dict__.get("runners", []):
            if hasattr(runner, name):
                return getattr(runner, name)
        raise AttributeError(name)


class ReplayRunner(SourceRunner):
    """Feeds a recording's lines to the service at their recorded times (``speed`` x).

    Lines up to ``service.resume_after`` are skipped: after a restart the log already
    holds them. ``speed`` 0 replays as fast as possible. A line that makes the referee
    fail is reported as a fault and skipped; the runner never dies of bad input.
    """

    def __init__(self, service: TableService, recording: Recording, speed: float = 1.0) -> None:
        super().__init__("bloxcam-replay", service)
        self.recording = recording
        self.speed = speed
        self.status = service.source
        self.status.speed = speed

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
        if "sheet_photo" in line:
            return  # a request to the camera; the recorded observations hold what it saw
        try:
            self.service.feed(line)
        except Exception as exc:  # a bug must not stop the table: report it and go on
            traceback.print_exc()
            self.service.fault(f"input at t={line.get('t')} could not be refereed: {exc}")



class CameraRunner(SourceRunner):
    """The live pipeline: frames -> recognition -> stability gate -> referee.

    ``frames`` iterates :class:`device.camera.Frame` objects and ``fault`` event dicts
    (as :class:`device.camera.ResilientCamera` yields them). Every observation goes to
    the referee, which commits only stable ones. Page declarations recorded with a
    replayed fixture (``inputs``) are fed at their times between frames. After a
    restart, frames up to ``service.resume_after`` are skipped.

    With a ``photo_desk`` (Bloxx!), a player's request for a sheet photo (from the page,
    or ``{"sheet_photo": {"player"}}`` in the recorded inputs) sends the following frames
    to the desk; the frames that show the sheet are not given to the recogniser.
    """

    #: the page's camera view is refreshed at most this often (JPEG encoding costs time)
    OVERLAY_INTERVAL_S = 0.5

    def __init__(self, service: TableService, frames: Any, recognizer: Any, inputs: list[dict[str, Any]] | None = None,
                 speed: float = 1.0, photo_desk: Any = None) -> None:
        super().__init__("bloxcam-camera", service)
        self.speed = speed
        self.photo_desk = photo_desk
        #: source time of the latest frame, for requests made on the page
        self.latest_t = 0.0
        self.frames = frames
        self.recognizer = recognizer
        self.inputs = sorted(inputs or [], key=lambda line: float(line.get("t", 0.0)))
        self.latest_jpeg: bytes | None = None
        #: counts new camera views, so the page reloads the image only when there is a new one
        self.frame_version = 0
        self._last_overlay = 0.0
        self.recognition_ms: list[float] = []

    def run(self) -> None:
        status = self.service.source
        pending = list(self.inputs)
        for item in self.frames:
            if self._stop_event.is_set():
                return
            self.last_progress = time.monotonic()
            if status.first_t is None and not isinstance(item, dict):
                # Frames arrive when they are due: the first one anchors source time to the wall clock.
                status.first_t, status.start_wall, status.speed = item.t, time.time(), self.speed
            if isinstance(item, dict):  # a fault from the camera: reported, the game untouched
                self.service.fault(f"camera {item.get('fault', 'fault')}: {item.get('detail', '')}".strip())
                continue
            while pending and float(pending[0].get("t", 0.0)) <= item.t:
                self._feed_input(pending.pop(0))
            if self.resume_after is not None and item.t <= self.resume_after:
                status.skipped += 1
                continue
            self.latest_t = item.t
            if self.photo_desk is not None and self.photo_desk.waiting is not None and self._sheet_photo(item):
                continue
            started = time.perf_counter()
            try:
                observation = self.recognizer.process(item.image, item.t, item.index, item.lores)
            except Exception as exc:  # one bad frame must not stop the table
                traceback.print_exc()
                self.service.fault(f"frame {item.index} could not be recognised: {exc}")
                continue
            self.recognition_ms.append((time.perf_counter() - started) * 1000)
            del self.recognition_ms[:-200]
            status.position = item.index + 1
            self.service.feed(observation)
            self._refresh_overlay(item.image, observation)
        for line in pending:
            self._feed_input(line)
        status.finished = True

    def _feed_input(self, line: dict[str, Any]) -> None:
        if self.resume_after is not None and float(line.get("t", 0.0)) <= self.resume_after:
            return
        if "sheet_photo" in line:
            self.ask_sheet_photo(str((line["sheet_photo"] or {}).get("player")), float(line.get("t", self.latest_t)))
            return
        self.service.feed(line)

    def ask_sheet_photo(self, player: str, t: float | None = None) -> Any:
        """A player will hold their sheet under the camera; returns the pending request."""
        if self.photo_desk is None:
            raise ValueError("this table reads no sheet photos (only Bloxx! tables with a camera do)")
        return self.photo_desk.ask(player, self.latest_t if t is None else t)

    def _sheet_photo(self, item: Any) -> bool:
        """Offer the frame to the sheet-photo desk; True when it showed the sheet."""
        try:
            consumed, request, observation = self.photo_desk.offer(item.image, item.t, item.index)
        except Exception as exc:  # a bad frame must not stop the table
            traceback.print_exc()
            self.service.fault(f"frame {item.index}: the sheet photo could not be read: {exc}")
            return False
        if observation is not None and request is not None:
            request.events = self.service.feed(observation)
            request.done.set()
        if consumed:
            status = self.service.source
            status.position = item.index + 1
            self._refresh_overlay(item.image, {"state": {}, "sheet_photo": True}, plain=True)
        return consumed

    def _refresh_overlay(self, image: Any, observation: dict[str, Any], plain: bool = False) -> None:
        now = time.monotonic()
        if now - self._last_overlay < self.OVERLAY_INTERVAL_S:
            return
        self._last_overlay = now
        import cv2

        drawn = image if plain else self.recognizer.overlay(image, observation)
        ok, data = cv2.imencode(".jpg", drawn, [cv2.IMWRITE_JPEG_QUALITY, 80])
        if ok:
            self.latest_jpeg = data.tobytes()
            self.frame_version += 1


class AccelRunner(SourceRunner):
    """Block Out!'s stack sensor: accelerometer samples -> stability detector -> referee.

    ``samples`` yields ``(t, ax, ay, az)`` tuples (a recorded ``accel.csv``, or a live
    driver) or ``fault`` event dicts. The detector's ``placed``/``counting``/``stood``/
    ``fell`` events are fed to the referee with the page's declarations (``inputs``) in
    time order. After a restart the detector runs again from the start (it needs the
    history) but only events after ``service.resume_after`` are fed.
    """

    #: how much source time is replayed between waits for the wall clock
    PACE_STEP_S = 0.02
    #: samples read ahead of the detector at most (~3 minutes at 500 Hz)
    READ_AHEAD = 100_000

    def __init__(self, service: TableService, samples: Any, detector: Any,
                 inputs: list[dict[str, Any]] | None = None, speed: float = 1.0) -> None:
        super().__init__("bloxcam-accel", service)
        self.samples = samples
        self.detector = detector
        self.inputs = sorted(inputs or [], key=lambda line: float(line.get("t", 0.0)))
        self.speed = speed

    def run(self) -> None:
        status = self.service.source
        pending = list(self.inputs)
        paced_until = None
        for item in self._read_ahead():
            if self._stop_event.is_set():
                return
            if isinstance(item, dict):
                self.service.fault(f"accelerometer {item.get('fault', 'fault')}: {item.get('detail', '')}".strip())
                continue
            t = float(item[0])
            if self.speed > 0:
                if status.first_t is None:
                    status.first_t, status.start_wall = t, time.time()
                if paced_until is None or t >= paced_until:
                    due = status.start_wall + (t - status.first_t) / self.speed
                    if due > time.time() and self._stop_event.wait(due - time.time()):
                        return
                    paced_until = t + self.PACE_STEP_S
            self.last_progress = time.monotonic()
            while pending and float(pending[0].get("t", 0.0)) <= t:
                self._feed(pending.pop(0))
            for event in self.detector.update(*item):
                self._feed({"kind": "stability", "event": event["event"], "t": event["t"]})
            status.position += 1
        if self._stop_event.is_set():
            return
        for event in self.detector.finish():
            self._feed({"kind": "stability", "event": event["event"], "t": event["t"]})
        for line in pending:
            self._feed(line)
        status.finished = True

    def _read_ahead(self) -> Iterator[Any]:
        """``self.samples``, read on a thread of their own: a live chip's FIFO (the
        ADXL345's holds 80 ms of samples) must keep being emptied while the detector
        works on a decision (its settle fit takes ~0.1 s, longer on a Pi). An error of
        the samples' iterator is raised here, after the samples read before it."""
        ahead: queue.Queue = queue.Queue(maxsize=self.READ_AHEAD)
        end = object()
        failed: list[BaseException] = []

        def put(item: Any) -> bool:
            while not self._stop_event.is_set():
                try:
                    ahead.put(item, timeout=0.2)
                    return True
                except queue.Full:
                    continue
            return False

        def read() -> None:
            try:
                for item in self.samples:
                    if not put(item):
                        return
            except Exception as exc:  # noqa: BLE001 - handed to the detector's thread
                failed.append(exc)
            put(end)

        threading.Thread(target=read, name="bloxcam-accel-read", daemon=True).start()
        while not self._stop_event.is_set():
            try:
                item = ahead.get(timeout=0.2)
            except queue.Empty:
                continue
            if item is end:
                if failed:
                    raise failed[0]
                return
            yield item

    def _feed(self, line: dict[str, Any]) -> None:
        if self.resume_after is not None and float(line.get("t", 0.0)) <= self.resume_after:
            return
        self.service.feed(line)
