"""A stand-in for ``picamera2.Picamera2`` (the methods bloxcam uses, same names and
shapes), rendering synthetic frames so the picamera2 source runs without a Pi.

Faithful where it matters: ``create_video_configuration`` returns a dict with
``main``/``lores`` stream entries and ``controls``; ``capture_array(name)`` and
``capture_arrays(names)`` return arrays of the configured size (``RGB888`` is 3
bytes per pixel in B, G, R order, ``YUV420`` is a (h*3/2, w) plane array),
``capture_arrays`` also returns the frame's metadata with ``SensorTimestamp`` in ns;
``set_controls`` merges controls that show up in later metadata (auto exposure and
white balance vary frame to frame until ``AeEnable``/``AwbEnable`` are turned off);
a camera can be made to "disappear" (``RuntimeError``, as libcamera's timeouts
surface) after ``fail_after`` frames.
"""

from __future__ import annotations

from typing import Any, Callable

import numpy as np


class FakePicamera2:
    instances = 0

    def __init__(
        self,
        camera_num: int = 0,
        *,
        fail_after: int | None = None,
        fps: float = 30.0,
        render: Callable[[int, tuple[int, int]], np.ndarray] | None = None,
    ) -> None:
        FakePicamera2.instances += 1
        self.camera_num = camera_num
        self.fail_after = fail_after
        self.fps = fps
        self.render = render
        self.config: dict[str, Any] | None = None
        self.started = False
        self.closed = False
        self.frames = 0
        self.controls: dict[str, Any] = {"AeEnable": True, "AwbEnable": True}
        self.calls: list[str] = []

    def create_video_configuration(self, main: dict | None = None, lores: dict | None = None,
                                   raw: dict | None = None, controls: dict | None = None,
                                   buffer_count: int = 6, **kwargs: Any) -> dict[str, Any]:
        self.calls.append("create_video_configuration")
        main = {"format": "XBGR8888", "size": (1280, 720), **(main or {})}
        cfg: dict[str, Any] = {"use_case": "video", "main": main, "lores": None, "raw": raw,
                               "controls": dict(controls or {}), "buffer_count": buffer_count}
        if lores is not None:
            cfg["lores"] = {"format": "YUV420", "size": (320, 240), **lores}
        return cfg

    def configure(self, config: dict[str, Any]) -> None:
        if self.started:
            raise RuntimeError("Camera must be stopped before configuring")
        self.calls.append("configure")
        self.config = config
        self.controls.update(config.get("controls") or {})

    def start(self) -> None:
        if self.config is None:
            raise RuntimeError("Camera has not been configured")
        self.calls.append("start")
        self.started = True

    def stop(self) -> None:
        self.started = False

    def close(self) -> None:
        self.calls.append("close")
        self.started = False
        self.closed = True

    def set_controls(self, controls: dict[str, Any]) -> None:
        self.calls.append("set_controls")
        self.controls.update(controls)

    def _metadata(self) -> dict[str, Any]:
        n = self.frames
        ae, awb = self.controls.get("AeEnable", True), self.controls.get("AwbEnable", True)
        return {
            "SensorTimestamp": int(1_000_000_000 + n * 1e9 / self.fps),
            "FrameDuration": int(1e6 / self.fps),
            # With the algorithms off, what was last set (or the last automatic value) holds.
            "ExposureTime": int(self.controls.get("ExposureTime", 10000)) if not ae else 10000 + 37 * (n % 11),
            "AnalogueGain": float(self.controls.get("AnalogueGain", 1.5)) if not ae else 1.5 + 0.01 * (n % 7),
            "ColourGains": tuple(self.controls.get("ColourGains", (1.8, 1.4))) if not awb
            else (1.8 + 0.01 * (n % 5), 1.4),
        }

    def capture_metadata(self) -> dict[str, Any]:
        return self._metadata()

    def _render(self, name: str) -> np.ndarray:
        assert self.config is not None
        stream = self.config[name]
        if stream is None:
            raise RuntimeError(f"Stream {name!r} is not configured")
        w, h = stream["size"]
        fmt = stream["format"]
        if self.render is not None:
            bgr = self.render(self.frames, (w, h))
        else:
            bgr = np.zeros((h, w, 3), np.uint8)
            bgr[:, :, 0] = 40
            bgr[:, :, 1] = (self.frames * 5) % 256
            bgr[:, :, 2] = 200
        if fmt == "RGB888":
            return bgr
        if fmt in ("XBGR8888", "XRGB8888"):
            return np.concatenate([bgr, np.full((h, w, 1), 255, np.uint8)], axis=2)
        if fmt == "YUV420":
            y = (0.114 * bgr[:, :, 0] + 0.587 * bgr[:, :, 1] + 0.299 * bgr[:, :, 2]).astype(np.uint8)
            return np.concatenate([y, np.full((h // 2, w), 128, np.uint8)], axis=0)
        raise RuntimeError(f"unsupported format {fmt}")

    def _next(self) -> None:
        if not self.started:
            raise RuntimeError("Camera is not running")
        if self.fail_after is not None and self.frames >= self.fail_after:
            raise RuntimeError("Camera frontend has timed out!")

    def capture_array(self, name: str = "main") -> np.ndarray:
        self._next()
        arr = self._render(name)
        self.frames += 1
        return arr

    def capture_arrays(self, names: list[str] | None = None) -> tuple[list[np.ndarray], dict[str, Any]]:
        self._next()
        names = names or ["main"]
        arrays = [self._render(n) for n in names]
        meta = self._metadata()
        self.frames += 1
        return arrays, meta
