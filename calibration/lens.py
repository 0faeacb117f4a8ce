"""Lens calibration from frames of the ChArUco sheet.

Each frame is read with ``cv2.aruco.CharucoDetector``; frames with too few chessboard
corners are rejected with the reason. ``cv2.calibrateCameraExtended`` then gives the
intrinsics, the distortion and a reprojection error per frame; a frame far worse than
the others (a smeared or mis-read frame) is rejected and the fit repeated.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import cv2
import numpy as np

from calibration.camera import Intrinsics
from calibration.kit import Kit, aruco_dictionary

MIN_CORNERS = 8
MIN_FRAMES = 4


class LensError(ValueError):
    """Lens calibration could not be done (too few usable frames)."""


@dataclass
class FrameReport:
    name: str
    corners: int
    accepted: bool
    reason: str = ""
    rms_px: float | None = None
    tilt_deg: float | None = None


@dataclass
class LensResult:
    intrinsics: Intrinsics
    rms_px: float
    frames: list[FrameReport] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)

    def report(self) -> str:
        i = self.intrinsics
        lines = [f"lens calibration: {sum(f.accepted for f in self.frames)} of {len(self.frames)} frames used, "
                 f"reprojection error {self.rms_px:.3f} px RMS",
                 f"  fx {i.fx:.2f}  fy {i.fy:.2f}  cx {i.cx:.2f}  cy {i.cy:.2f}  ({i.width}x{i.height})",
                 "  distortion k1 k2 p1 p2 k3: " + " ".join(f"{v:+.5f}" for v in i.dist)]
        for f in self.frames:
            state = f"ok, {f.rms_px:.3f} px" if f.accepted else f"rejected: {f.reason}"
            lines.append(f"  {f.name}: {f.corners} corners, {state}")
        lines += [f"  warning: {w}" for w in self.warnings]
        return "\n".join(lines)


def charuco_detector(kit: Kit) -> cv2.aruco.CharucoDetector:
    c = kit.charuco
    board = cv2.aruco.CharucoBoard((c.squares_x, c.squares_y), c.square_mm, c.marker_mm,
                                   aruco_dictionary(c.dictionary))
    return cv2.aruco.CharucoDetector(board)


def calibrate_lens(frames: list[tuple[str, np.ndarray]], kit: Kit, *, min_frames: int = MIN_FRAMES) -> LensResult:
    """Intrinsics from ``frames`` (name, BGR or grey image) of the kit's ChArUco sheet."""
    if not frames:
        raise LensError("no frames given")
    det = charuco_detector(kit)
    board = det.getBoard()
    size = None
    reports: list[FrameReport] = []
    obj_pts: list[np.ndarray] = []
    img_pts: list[np.ndarray] = []
    used: list[int] = []
    for name, image in frames:
        if image is None or image.size == 0:
            reports.append(FrameReport(name, 0, False, "not an image (unreadable file?)"))
            continue
        h, w = image.shape[:2]
        if size is None:
            size = (w, h)
        if (w, h) != size:
            reports.append(FrameReport(name, 0, False, f"resolution {w}x{h} differs from the first frame's "
                                                      f"{size[0]}x{size[1]}"))
            continue
        gray = image if image.ndim == 2 else cv2.cvtColor(image, cv2.COLOR_BGR2GRAY)
        ch_corners, ch_ids, _, marker_ids = det.detectBoard(gray)
        n = 0 if ch_ids is None else len(ch_ids)
        if n < MIN_CORNERS:
            if marker_ids is None or len(marker_ids) == 0:
                why = "no sheet markers found (sheet not in view, too dark, or too blurred)"
            else:
                why = f"only {n} chessboard corners found (need {MIN_CORNERS}): sheet cut off, too small or blurred"
            reports.append(FrameReport(name, n, False, why))
            continue
        # CharucoDetector's corners in OpenCV 4.10 sit about half a pixel off the true
        # saddle points (measured on rendered frames with exact truth); a plain
        # cornerSubPix pass on the saddles removes the offset.
        ch_corners = cv2.cornerSubPix(gray, ch_corners.astype(np.float32), (4, 4), (-1, -1),
                                      (cv2.TERM_CRITERIA_EPS | cv2.TERM_CRITERIA_COUNT, 50, 0.001))
        o, p = board.matchImagePoints(ch_corners, ch_ids)
        if o is None or len(o) < MIN_CORNERS:
            reports.append(FrameReport(name, n, False, "corners could not be matched to the sheet"))
            continue
        obj_pts.append(o.reshape(-1, 3).astype(np.float32))
        img_pts.append(p.reshape(-1, 2).astype(np.float32))
        used.append(len(reports))
        reports.append(FrameReport(name, n, True))
    if len(used) < min_frames:
        raise LensError(f"only {len(used)} usable frames of {len(frames)} (need {min_frames}): "
                        + "; ".join(f"{r.name}: {r.reason}" for r in reports if not r.accepted))
    assert size is not None
    flags = cv2.CALIB_FIX_K3
    while True:
        rms, K, D, rvecs, tvecs, _, _, per_view = cv2.calibrateCameraExtended(
            obj_pts, img_pts, size, None, None, flags=flags)
        per_view = per_view.ravel()
        med = float(np.median(per_view))
        worst = int(np.argmax(per_view))
        if per_view[worst] > max(0.5, 3.0 * med) and len(used) > min_frames:
            r = reports[used[worst]]
            r.accepted = False
            r.reason = f"reprojection error {per_view[worst]:.2f} px, far above the others' median {med:.2f} px"
            r.rms_px = float(per_view[worst])
            del obj_pts[worst], img_pts[worst], used[worst]
            continue
        break
    tilts = []
    for k, idx in enumerate(used):
        R = cv2.Rodrigues(rvecs[k])[0]
        tilt = float(np.degrees(np.arccos(np.clip(abs(R[2, 2]), 0, 1))))
        reports[idx].rms_px = float(per_view[k])
        reports[idx].tilt_deg = tilt
        tilts.append(tilt)
    warnings = []
    if max(tilts) < 15:
        warnings.append("every frame shows the sheet almost face-on; tilt it 20-40 degrees in some frames, "
                        "or the focal length is poorly determined")
    d = tuple(float(v) for v in D.ravel()[:5]) + (0.0,) * max(0, 5 - D.size)
    intr = Intrinsics(size[0], size[1], float(K[0, 0]), float(K[1, 1]), float(K[0, 2]), float(K[1, 2]), d,
                      "lens-calibration", float(rms))
    return LensResult(intr, float(rms), reports, warnings)
