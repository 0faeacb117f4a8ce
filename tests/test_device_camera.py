"""Camera sources: OpenCV on a real video file, replay of a real PNG/JPEG folder,
picamera2 against an emulated Picamera2, and surviving a camera that disappears."""

from __future__ import annotations

import json
import subprocess
import sys

import cv2
import numpy as np
import pytest

from device.camera import (
    CameraConfig,
    CameraLost,
    Frame,
    OpenCVSource,
    Picamera2Source,
    ReplaySource,
    ResilientCamera,
    open_source,
)
from device.emulators import VirtualClock
from device.emulators.picamera2 import FakePicamera2


def _frame(i: int, w: int = 160, h: int = 120) -> np.ndarray:
    img = np.zeros((h, w, 3), np.uint8)
    img[:, :, 0] = 200  # blue
    img[:, :, 2] = 30
    x = 10 + 8 * i
    img[40:80, x : x + 20] = (0, 220, 0)  # a green square moving right
    return img


def _frames_only(items):
    return [x for x in items if isinstance(x, Frame)]


def _faults(items):
    return [x for x in items if isinstance(x, dict)]


def test_opencv_source_decodes_a_real_video_file(tmp_path):
    path = tmp_path / "clip.avi"
    vw = cv2.VideoWriter(str(path), cv2.VideoWriter_fourcc(*"MJPG"), 10.0, (160, 120))
    assert vw.isOpened()
    for i in range(12):
        vw.write(_frame(i))
    vw.release()
    src = OpenCVSource(str(path), lores_size=(40, 30))
    frames = _frames_only(ResilientCamera(lambda: src))
    assert len(frames) == 12
    assert [f.index for f in frames] == list(range(12))
    assert np.allclose(np.diff([f.t for f in frames]), 0.1, atol=1e-3)
    f5 = frames[5].image
    assert f5.shape == (120, 160, 3) and f5.dtype == np.uint8
    assert f5[60, 10 + 8 * 5 + 10, 1] > 150 and f5[60, 150, 0] > 150  # green square, blue ground
    assert frames[5].lores.shape == (30, 40)


def test_opencv_missing_file_is_a_fault(tmp_path):
    cam = ResilientCamera(lambda: OpenCVSource(str(tmp_path / "none.avi")), clock=VirtualClock(),
                          sleep=lambda s: None, give_up_s=0.0)
    items = list(cam)
    assert items and items[0]["kind"] == "fault" and items[0]["fault"] == "disappeared"


def _fixture(tmp_path, n=6, corrupt=()):
    (tmp_path / "frames").mkdir()
    times = [0.0, 0.05, 0.2, 0.25, 0.4, 0.55][:n]
    with open(tmp_path / "truth.jsonl", "w") as f:
        for i, t in enumerate(times):
            f.write(json.dumps({"game": "blockout", "frame": i, "t": t, "stable": True, "occluded": [],
                                "confidence": 1.0, "state": {"stack": []}}) + "\n")
    for i in range(n):
        ext = "png" if i % 2 == 0 else "jpg"
        p = tmp_path / "frames" / f"{i:06d}.{ext}"
        if i in corrupt:
            good = cv2.imencode(".jpg", _frame(i))[1].tobytes()
            p.write_bytes(good[: len(good) // 8])  # truncated: undecodable
        else:
            assert cv2.imwrite(str(p), _frame(i))
    return times


def test_replay_decodes_png_and_jpeg_at_truth_times(tmp_path):
    times = _fixture(tmp_path)
    frames = _frames_only(ResilientCamera(lambda: ReplaySource(tmp_path)))
    assert [f.t for f in frames] == times
    assert frames[0].image.shape == (120, 160, 3)
    assert frames[1].image[60, 10 + 8 + 10, 1] > 150  # JPEG decoded too
    assert np.array_equal(frames[2].image, _frame(2))  # PNG is lossless


def test_replay_skips_and_counts_corrupt_frames(tmp_path):
    _fixture(tmp_path, corrupt=(1, 3))
    cam = ResilientCamera(lambda: ReplaySource(tmp_path))
    items = list(cam)
    assert len(_frames_only(items)) == 4
    assert cam.corrupt == 2
    assert [e["fault"] for e in _faults(items)] == ["corrupt-frame", "corrupt-frame"]


def test_replay_in_real_time_sleeps_until_each_frame(tmp_path):
    times = _fixture(tmp_path)
    clock = VirtualClock(100.0)
    src = ReplaySource(tmp_path, realtime=True, clock=clock, sleep=clock.sleep)
    src.open()
    seen = []
    while (f := src.read()) is not None:
        seen.append(clock.now - 100.0)
    assert seen == pytest.approx(times)


def test_picamera2_source_streams_main_and_lores_and_locks_exposure():
    cams = []

    def factory():
        cams.append(FakePicamera2(fps=30.0))
        return cams[-1]

    src = Picamera2Source(size=(320, 180), lores_size=(96, 54), fps=30.0, camera_factory=factory)
    src.open()
    cam = cams[0]
    assert cam.calls[:3] == ["create_video_configuration", "configure", "start"]
    assert cam.config["main"] == {"format": "RGB888", "size": (320, 180)}
    assert cam.config["lores"]["format"] == "YUV420" and cam.config["lores"]["size"] == (96, 54)
    assert cam.config["controls"]["FrameDurationLimits"] == (33333, 33333)
    f0, f1 = src.read(), src.read()
    assert f0.image.shape == (180, 320, 3) and f0.lores.shape == (54, 96)
    assert (f0.t, round(f1.t, 4)) == (0.0, round(1 / 30, 4))
    assert f0.image[0, 0, 2] == 200  # B, G, R order as OpenCV expects
    auto = set()
    for _ in range(6):
        src.read()
        auto.add(src.last_metadata["ExposureTime"])
    assert len(auto) > 1  # auto exposure drifts frame to frame until locked
    exposures = set()
    controls = src.lock_exposure()
    assert controls["AeEnable"] is False and controls["AwbEnable"] is False
    for _ in range(5):
        src.read()
        exposures.add((src.last_metadata["ExposureTime"], src.last_metadata["ColourGains"]))
    assert len(exposures) == 1  # locked: no drift when a hand enters
    src.close()
    assert cam.closed


def test_picamera2_that_disappears_is_reopened_with_backoff():
    cams = []

    def factory():
        # first camera dies after 5 frames; the next two opens fail; then it is back
        n = len(cams)
        cams.append(n)
        if n in (1, 2):
            raise RuntimeError("no cameras available")
        return FakePicamera2(fail_after=5 if n == 0 else None)

    clock = VirtualClock()
    sleeps = []

    def sleep(s):
        sleeps.append(s)
        clock.sleep(s)

    cam = ResilientCamera(lambda: Picamera2Source(size=(64, 48), lores_size=(32, 24), camera_factory=factory,
                                                  lock={"AeEnable": False}),
                          clock=clock, sleep=sleep, backoff_s=0.5)
    out = []
    for item in cam:
        out.append(item)
        if len(_frames_only(out)) == 10:
            break
    faults = [e["fault"] for e in _faults(out)]
    assert faults == ["disappeared", "reopen-failed", "reopen-failed", "recovered"]
    assert sleeps == [0.5, 1.0, 2.0]
    frames = _frames_only(out)
    assert [f.index for f in frames] == list(range(10))
    ts = [f.t for f in frames]
    assert all(b > a for a, b in zip(ts, ts[1:]))  # the clock never runs backwards


def test_open_source_picks_the_configured_kind(tmp_path):
    assert isinstance(open_source(CameraConfig("replay", str(tmp_path))), ReplaySource)
    assert isinstance(open_source(CameraConfig("opencv", "0")), OpenCVSource)
    assert isinstance(open_source(CameraConfig("picamera2", 0)), Picamera2Source)
    with pytest.raises(ValueError):
        open_source(CameraConfig("gopro"))


def test_picamera2_source_without_picamera2_installed_is_a_lost_camera():
    code = (
        "import sys; sys.modules['picamera2'] = None\n"
        "from device.camera import Picamera2Source, CameraLost\n"
        "try:\n    Picamera2Source().open()\nexcept CameraLost as e:\n    print('lost')\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "lost"
    assert CameraLost
