"""Camera sources behind one interface, and the wrapper that survives a lost camera.

A source has ``open()``, ``read() -> Frame | None`` (``None``: the stream ended, e.g. a
video file or fixture folder ran out) and ``close()``; ``read`` raises
:class:`CameraLost` when the camera is gone and :class:`CorruptFrame` for a frame
that cannot be used. :class:`ResilientCamera` iterates a source and yields frames and
``fault`` events: corrupt frames are skipped and counted, a lost camera is closed and
reopened with backoff, and the frame index and clock keep running so the referee's
state is untouched.

Sources: :class:`Picamera2Source` (picamera2 is imported only in its ``open``),
:class:`OpenCVSource` (USB webcam or video file), :class:`ReplaySource` (a fixture
folder). :func:`open_source` picks one from a :class:`CameraConfig`.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterator, Protocol

import numpy as np

from device.events import fault_event

KIT_STREAM_SIZE = (2304, 1296)  # table-kit.md: Camera Module 3 stream
LORES_SIZE = (384, 216)  # same aspect, small enough for per-frame motion checks


@dataclass(frozen=True)
class Frame:
    """``image``: BGR uint8 (h, w, 3); ``t``: seconds since the source started;
    ``index``: frame number in the source; ``lores``: small greyscale for motion, or None."""

    index: int
    t: float
    image: np.ndarray
    lores: np.ndarray | None = None


class CameraLost(Exception):
    """The camera stopped delivering frames (unplugged, driver timeout)."""


class CorruptFrame(Exception):
    """One unusable frame; the stream itself goes on."""


class FrameSource(Protocol):
    def open(self) -> None: ...

    def read(self) -> Frame | None: ...

    def close(self) -> None: ...


def _check_bgr(img: Any) -> np.ndarray:
    if not isinstance(img, np.ndarray) or img.ndim != 3 or img.shape[2] < 3 or img.size == 0:
        raise CorruptFrame(f"not a colour image: {getattr(img, 'shape', type(img).__name__)}")
    if img.dtype != np.uint8:
        raise CorruptFrame(f"unexpected pixel type {img.dtype}")
    return img if img.shape[2] == 3 else img[:, :, :3]


def _motion_grey(img: np.ndarray, size: tuple[int, int]) -> np.ndarray:
    import cv2  # noqa: PLC0415

    grey = cv2.cvtColor(img, cv2.COLOR_BGR2GRAY)
    return cv2.resize(grey, size, interpolation=cv2.INTER_AREA)


# --------------------------------------------------------------------------------------
class Picamera2Source:
    """Raspberry Pi camera through picamera2: main stream at the kit size in ``RGB888``
    (libcamera's RGB888 is B, G, R in memory: OpenCV's order, so no conversion copy)
    plus a ``YUV420`` lores stream whose Y plane is the motion image (a view, no copy).

    ``camera_factory`` builds the Picamera2 object; by default ``picamera2`` is
    imported here, lazily. After calibration call :meth:`lock_exposure` so a hand
    entering the view cannot change exposure or white balance (colours must not drift).
    """

    def __init__(
        self,
        size: tuple[int, int] = KIT_STREAM_SIZE,
        lores_size: tuple[int, int] = LORES_SIZE,
        fps: float = 30.0,
        camera_num: int = 0,
        camera_factory: Callable[[], Any] | None = None,
        lock: dict[str, Any] | None = None,
    ) -> None:
        self.size = size
        self.lores_size = lores_size
        self.fps = fps
        self.camera_num = camera_num
        self.camera_factory = camera_factory
        self.locked_controls: dict[str, Any] | None = lock
        self.cam: Any = None
        self._t0_ns: int | None = None
        self._index = 0
        self.last_metadata: dict[str, Any] = {}

    def open(self) -> None:
        factory = self.camera_factory
        if factory is None:
            try:
                from picamera2 import Picamera2  # noqa: PLC0415 - only on the Pi
            except ImportError as exc:
                raise CameraLost("picamera2 is not installed (pip install 'bloxcam[pi]')") from exc

            def factory() -> Any:
                return Picamera2(self.camera_num)

        try:
            cam = factory()
            frame_us = int(round(1e6 / self.fps))
            config = cam.create_video_configuration(
                main={"size": tuple(self.size), "format": "RGB888"},
                lores={"size": tuple(self.lores_size), "format": "YUV420"},
                controls={"FrameDurationLimits": (frame_us, frame_us)},
            )
            cam.configure(config)
            if self.locked_controls:
                cam.set_controls(dict(self.locked_controls))
            cam.start()
        except CameraLost:
            raise
        except Exception as exc:  # noqa: BLE001 - libcamera raises RuntimeError and others
            raise CameraLost(f"picamera2 open failed: {exc}") from exc
        self.cam = cam
        self._t0_ns = None

    def lock_exposure(self) -> dict[str, Any]:
        """Freeze the current auto exposure and white balance; returns the controls
        set, which a later :class:`Picamera2Source` accepts as ``lock`` on reopen."""
        if self.cam is None:
            raise CameraLost("camera not open")
        meta = self.cam.capture_metadata()
        controls = {
            "AeEnable": False,
            "AwbEnable": False,
            "ExposureTime": int(meta["ExposureTime"]),
            "AnalogueGain": float(meta["AnalogueGain"]),
            "ColourGains": tuple(meta["ColourGains"]),
        }
        self.cam.set_controls(controls)
        self.locked_controls = controls
        return controls

    def read(self) -> Frame | None:
        if self.cam is None:
            raise CameraLost("camera not open")
        try:
            (main, lores), meta = self.cam.capture_arrays(["main", "lores"])
        except Exception as exc:  # noqa: BLE001
            raise CameraLost(f"picamera2 capture failed: {exc}") from exc
        self.last_metadata = meta
        idx = self._index
        self._index += 1
        image = _check_bgr(main)
        h = self.lores_size[1]
        ts = int(meta.get("SensorTimestamp", 0))
        if self._t0_ns is None:
            self._t0_ns = ts
        return Frame(idx, (ts - self._t0_ns) / 1e9, image, lores[:h])

    def close(self) -> None:
        cam, self.cam = self.cam, None
        if cam is not None:
            try:
                cam.close()
            except Exception:  # noqa: BLE001
                pass


# --------------------------------------------------------------------------------------
class OpenCVSource:
    """A USB webcam (``device`` an int) or a video file (a path) through cv2.VideoCapture.

    Files: ``t`` is the container's presentation time, the end of the file ends the
    stream. Cameras: ``t`` from ``clock``, a failed grab means the camera is lost.
    """

    def __init__(
        self,
        device: int | str,
        size: tuple[int, int] | None = None,
        fps: float | None = None,
        lores_size: tuple[int, int] | None = LORES_SIZE,
        capture_factory: Callable[[int | str], Any] | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.device = device
        self.is_file = not isinstance(device, int)
        self.size = size
        self.fps = fps
        self.lores_size = lores_size
        self.capture_factory = capture_factory
        self.clock = clock
        self.cap: Any = None
        self._index = 0
        self._t0 = 0.0

    def open(self) -> None:
        import cv2  # noqa: PLC0415

        if self.is_file and not Path(str(self.device)).exists():
            raise CameraLost(f"no video file {self.device}")
        cap = (self.capture_factory or cv2.VideoCapture)(self.device)
        if not cap.isOpened():
            raise CameraLost(f"cannot open camera {self.device!r}")
        if not self.is_file:
            if self.size:
                cap.set(cv2.CAP_PROP_FRAME_WIDTH, self.size[0])
                cap.set(cv2.CAP_PROP_FRAME_HEIGHT, self.size[1])
            if self.fps:
                cap.set(cv2.CAP_PROP_FPS, self.fps)
        self.cap = cap
        self._t0 = self.clock()

    def read(self) -> Frame | None:
        import cv2  # noqa: PLC0415

        if self.cap is None:
            raise CameraLost("camera not open")
        ok, img = self.cap.read()
        if not ok:
            if self.is_file:
                return None
            raise CameraLost(f"camera {self.device!r} stopped delivering frames")
        idx = self._index
        self._index += 1
        if self.is_file:
            t = self.cap.get(cv2.CAP_PROP_POS_MSEC) / 1000.0
            fps = self.cap.get(cv2.CAP_PROP_FPS) or 0.0
            if t <= 0 and idx > 0 and fps > 0:
                t = idx / fps
        else:
            t = self.clock() - self._t0
        image = _check_bgr(img)
        lores = _motion_grey(image, self.lores_size) if self.lores_size else None
        return Frame(idx, t, image, lores)

    def close(self) -> None:
        cap, self.cap = self.cap, None
        if cap is not None:
            cap.release()


# --------------------------------------------------------------------------------------
class ReplaySource:
    """A fixture folder: ``frames/*.png|jpg`` at the times in ``truth.jsonl``.

    Frame ``i`` (sorted file order) is shown at the ``t`` of the truth line whose
    ``frame`` is ``i`` (or the i-th line); without truth, at ``i / fps``. With
    ``realtime`` the source sleeps until each frame's time, else it runs as fast as
    frames decode. A file that does not decode raises :class:`CorruptFrame`.
    """

    def __init__(
        self,
        folder: str | Path,
        realtime: bool = False,
        fps: float = 30.0,
        lores_size: tuple[int, int] | None = LORES_SIZE,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self.folder = Path(folder)
        self.realtime = realtime
        self.fps = fps
        self.lores_size = lores_size
        self.clock = clock
        self.sleep = sleep
        self.files: list[Path] = []
        self.times: list[float] = []
        self._i = 0
        self._start = 0.0

    def open(self) -> None:
        frames = self.folder / "frames"
        if not frames.is_dir():
            raise CameraLost(f"no frames/ in {self.folder}")
        self.files = sorted(p for p in frames.iterdir() if p.suffix.lower() in (".png", ".jpg", ".jpeg"))
        by_frame: dict[int, float] = {}
        truth = self.folder / "truth.jsonl"
        if truth.exists():
            for n, line in enumerate(truth.read_text().splitlines()):
                if line.strip():
                    obs = json.loads(line)
                    by_frame[int(obs.get("frame", n))] = float(obs["t"])
        self.times = [by_frame.get(i, i / self.fps) for i in range(len(self.files))]
        self._i = 0
        self._start = self.clock()

    def read(self) -> Frame | None:
        import cv2  # noqa: PLC0415

        if self._i >= len(self.files):
            return None
        i = self._i
        self._i += 1
        t = self.times[i]
        if self.realtime:
            wait = self._start + t - self.clock()
            if wait > 0:
                self.sleep(wait)
        img = cv2.imread(str(self.files[i]), cv2.IMREAD_COLOR)
        if img is None:
            raise CorruptFrame(f"cannot decode {self.files[i].name}")
        lores = _motion_grey(img, self.lores_size) if self.lores_size else None
        return Frame(i, t, img, lores)

    def close(self) -> None:
        pass


# --------------------------------------------------------------------------------------
@dataclass
class CameraConfig:
    """Which source to use. ``kind``: ``picamera2``, ``opencv`` or ``replay``;
    ``device``: webcam number, video file or fixture folder."""

    kind: str = "picamera2"
    device: int | str = 0
    size: tuple[int, int] = KIT_STREAM_SIZE
    lores_size: tuple[int, int] = LORES_SIZE
    fps: float = 30.0
    realtime: bool = False
    extra: dict[str, Any] = field(default_factory=dict)


def open_source(cfg: CameraConfig) -> FrameSource:
    """Build (not open) the configured source."""
    if cfg.kind == "picamera2":
        return Picamera2Source(cfg.size, cfg.lores_size, cfg.fps, camera_num=int(cfg.device), **cfg.extra)
    if cfg.kind == "opencv":
        dev: int | str = cfg.device
        if isinstance(dev, str) and dev.isdigit():
            dev = int(dev)
        return OpenCVSource(dev, cfg.size, cfg.fps, cfg.lores_size, **cfg.extra)
    if cfg.kind == "replay":
        return ReplaySource(cfg.device if isinstance(cfg.device, str) else str(cfg.device),
                            cfg.realtime, cfg.fps, cfg.lores_size, **cfg.extra)
    raise ValueError(f"unknown camera kind {cfg.kind!r}")


class ResilientCamera:
    """Iterate a source as ``Frame`` objects and ``fault`` event dicts.

    ``make_source`` is called to (re)build the source. When the camera is lost, a
    ``disappeared`` fault is yielded, and reopening is tried after ``backoff_s``,
    doubling up to ``max_backoff_s`` (``reopen-failed`` each time, ``recovered`` on
    success). Corrupt frames are skipped, counted in ``corrupt`` and reported. Output
    frames get a continuous ``index`` and ``t`` (seconds since this wrapper started),
    so a reopen does not rewind the referee's clock. Gives up (ends the iteration)
    only after ``give_up_s`` without a camera, if set.
    """

    def __init__(
        self,
        make_source: Callable[[], FrameSource],
        *,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], None] = time.sleep,
        backoff_s: float = 0.5,
        max_backoff_s: float = 8.0,
        give_up_s: float | None = None,
        live_clock: bool = False,
    ) -> None:
        self.make_source = make_source
        self.clock = clock
        self.sleep = sleep
        self.backoff_s = backoff_s
        self.max_backoff_s = max_backoff_s
        self.give_up_s = give_up_s
        self.live_clock = live_clock
        self.corrupt = 0
        self.reopens = 0
        self.frames = 0
        self._start = clock()
        self._t_offset = 0.0
        self._last_t = 0.0

    def _now(self) -> float:
        return self.clock() - self._start

    def __iter__(self) -> Iterator[Frame | dict[str, Any]]:
        source: FrameSource | None = None
        delay = self.backoff_s
        down_since: float | None = None
        while True:
            if source is None:
                try:
                    source = self.make_source()
                    source.open()
                except Exception as exc:  # noqa: BLE001
                    source = None
                    now = self._now()
                    if down_since is None:
                        down_since = now
                        yield fault_event("camera", "disappeared", now, f"open failed: {exc}")
                    else:
                        yield fault_event("camera", "reopen-failed", now, str(exc), retry_in=delay)
                    if self.give_up_s is not None and now - down_since >= self.give_up_s:
                        return
                    self.sleep(delay)
                    delay = min(delay * 2, self.max_backoff_s)
                    continue
                if down_since is not None:
                    self.reopens += 1
                    yield fault_event("camera", "recovered", self._now(), f"down {self._now() - down_since:.2f} s")
                    # A reopened source restarts its own clock at 0: continue ours from
                    # the outage's end so time never runs backwards.
                    self._t_offset = max(self._last_t + 1e-3, self._now())
                down_since = None
                delay = self.backoff_s
            try:
                frame = source.read()
            except CorruptFrame as exc:
                self.corrupt += 1
                yield fault_event("camera", "corrupt-frame", self._now(), str(exc), count=self.corrupt)
                continue
            except Exception as exc:  # noqa: BLE001 - CameraLost or anything a driver throws
                try:
                    source.close()
                except Exception:  # noqa: BLE001
                    pass
                source = None
                down_since = self._now()
                yield fault_event("camera", "disappeared", down_since, str(exc))
                self.sleep(delay)
                delay = min(delay * 2, self.max_backoff_s)
                continue
            if frame is None:
                source.close()
                return
            t = self._now() if self.live_clock else self._t_offset + frame.t
            self._last_t = t
            out = Frame(self.frames, t, frame.image, frame.lores)
            self.frames += 1
            yield out
