"""The board in the image: the pose per frame, projection and sampling of board-frame points.

:class:`BoardView` is what every recogniser asks "where is this point of the table in
this frame?". It keeps the calibration's pose and re-checks it on every frame with
:class:`calibration.pose.PoseTracker` (a bumped board or camera is re-found); when the
markers cannot be found at all, boards (Blox, Blockers!) fall back to
:func:`calibration.markerless.find_board` at lower confidence.

Coordinates follow ``table-kit.md``: board frame in millimetres, origin at the far-left
corner of the marked area, x to the right, y toward the near edge, z down (a point
``h`` mm above the board has ``z = -h``). Image points are OpenCV pixel coordinates of
the *distorted* frame (what the camera delivers), so no frame is ever undistorted:
only the points that are looked at are projected.

Everything that depends only on the pose is cached under :attr:`BoardView.version`,
which changes whenever the pose does; recognisers key their own pose-dependent caches
(probe lattices, warp maps) on it.

API (kept stable for the other recognisers):

* ``BoardView(calibration, game=None)``; ``update(frame) -> PoseCheck``;
  ``pose``, ``version``, ``status``, ``confirming``, ``confidence``, ``intr``, ``kit``, ``game``;
* ``project(pts)`` board mm (N,2) or (N,3) -> pixels (N,2);
* ``camera_position()`` board-frame position of the camera centre;
* ``rays(px)`` board-frame unit ray directions through pixels (N,2);
* ``cell_centre(r, c)``, ``cell_polygon(r, c, z=0, shrink=0)``, ``area_polygon(margin)``;
* ``sample(image, px)`` bilinear BGR float32 (N,3) at pixels (N,2) (module function too);
* ``sample_mm(image, pts)`` the same at board points;
* ``rectify(image, ppm=2.0, margin_mm=0.0, z=0.0)`` a top-down warp of the area (plane
  ``z``), ``rectify_maps`` its cached remap maps, and ``mm_of_rectified(u, v)``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import cv2
import numpy as np

from calibration.camera import Intrinsics
from calibration.kit import Kit
from calibration.pose import BoardPose, PoseCheck, PoseStatus, PoseTracker


class BoardLost(RuntimeError):
    """No pose: the calibration has none and the board cannot be found in the frame."""


def sample(image: np.ndarray, px: np.ndarray) -> np.ndarray:
    """Bilinear samples of ``image`` at pixel coordinates ``px`` (N,2): float32 (N,C).

    Points outside the frame read as NaN so callers can tell "not in view" apart from
    a colour."""
    px = np.asarray(px, np.float32).reshape(-1, 2)
    n = len(px)
    if n == 0:
        return np.zeros((0, image.shape[2] if image.ndim == 3 else 1), np.float32)
    # remap wants a 2D map: lay the points out as one row (OpenCV limits rows to 32767
    # columns, so fold long lists into a block).
    width = min(n, 16384)
    rows = -(-n // width)
    pad = rows * width - n
    mx = np.pad(px[:, 0], (0, pad)).reshape(rows, width)
    my = np.pad(px[:, 1], (0, pad)).reshape(rows, width)
    out = cv2.remap(image, mx, my, cv2.INTER_LINEAR, borderMode=cv2.BORDER_CONSTANT, borderValue=0)
    out = out.reshape(rows * width, -1)[:n].astype(np.float32)
    H, W = image.shape[:2]
    outside = (px[:, 0] < 0) | (px[:, 1] < 0) | (px[:, 0] > W - 1) | (px[:, 1] > H - 1)
    if outside.any():
        out[outside] = np.nan
    return out


@dataclass
class _Warp:
    mapx: np.ndarray
    mapy: np.ndarray
    ppm: float
    margin: float
    z: float


class BoardView:
    """The calibrated board as seen in the current frame (see the module docstring)."""

    def __init__(self, calibration: Any, game: str | None = None, *, tolerance_px: float = 2.0) -> None:
        self.calibration = calibration
        self.kit: Kit = calibration.kit
        self.game: str = game or calibration.game
        self.base_intr: Intrinsics = calibration.camera
        self.intr: Intrinsics = calibration.camera
        self._tolerance = tolerance_px
        self.tracker = PoseTracker(self.kit, self.game, self.intr, calibration.pose, tolerance_px=tolerance_px)
        self.version = 0
        self.status: str = PoseStatus.OK.value if calibration.pose is not None else PoseStatus.LOST.value
        self._warps: dict[tuple, _Warp] = {}
        self._cam_pos: np.ndarray | None = None
        self._candidate: BoardPose | None = None  # a re-found pose awaiting its second sighting
        # The calibration found the markers, so they are on this table: a pose from the
        # outline held meanwhile has them looked for in the whole frame (see update).
        self._markers_on_table = calibration.pose is None or calibration.pose.method == "markers"

    # ------------------------------------------------------------------ pose
    @property
    def pose(self) -> BoardPose | None:
        return self.tracker.pose

    @property
    def confidence(self) -> float:
        """Pose confidence 0..1 (markers ~1, markerless <= 0.7, 0 when lost)."""
        if self.pose is None or self.status == PoseStatus.LOST.value:
            return 0.0
        return float(self.pose.confidence)

    @property
    def confirming(self) -> bool:
        """A re-found pose awaits its second sighting: the next frame must be checked
        even if its markers look the same (that check is what confirms it)."""
        return self._candidate is not None

    def _ensure_size(self, frame: np.ndarray) -> None:
        h, w = frame.shape[:2]
        if (w, h) == (self.intr.width, self.intr.height):
            return
        if abs(w / h - self.base_intr.width / self.base_intr.height) > 0.01:
            raise ValueError(f"frame is {w}x{h} but the calibration is for {self.base_intr.width}x"
                             f"{self.base_intr.height} (another aspect ratio): calibrate this camera mode")
        # The same lens at another stream size: the pose stays, pixels scale.
        self.intr = self.base_intr.scaled(w, h)
        pose = self.tracker.pose
        self.tracker = PoseTracker(self.kit, self.game, self.intr, pose, tolerance_px=self._tolerance)
        self._changed()

    def _changed(self) -> None:
        self.version += 1
        self._warps.clear()
        self._cam_pos = None

    def update(self, frame: np.ndarray) -> PoseCheck:
        """Re-check the pose on ``frame``; re-find it if the board or camera moved.

        ``status`` becomes ``ok``, ``moved`` (re-found, ``version`` bumped),
        ``unverified`` (too few markers seen, e.g. hands over them, or a re-found pose
        not yet confirmed: pose kept) or ``lost`` (pose kept but doubted). Without
        markers at all a board is looked for by its outline.

        A pose re-found from markers is taken only when two consecutive frames find the
        same one (or it agrees with the pose held): markers half under a hand, or
        smeared by its motion, can give a pose a little off, and a wrong pose would
        misread every frame after it. A board that really moved costs one frame.

        The same holds for a pose from the board's outline when the markers are lost:
        an arm over the markers and much of the board has an outline too, and a pose
        taken from it once would be kept (the markers then looked for where it puts
        them, never found). So an outline pose is taken only when it agrees with the
        pose held or with the last frame's outline; otherwise the frame is ``lost`` and
        the pose held is kept. A pose from the outline is less sure than one from
        markers: while it is held, markers not found where it puts them are looked for
        in the whole frame (when the calibration's pose came from markers, so they are
        on the table), and a pose from them replaces it at once."""
        self._ensure_size(frame)
        before = self.tracker.pose
        outline_held = before is not None and before.method != "markers"
        check = self.tracker.check(frame, search_frame=outline_held and self._markers_on_table)
        candidate, self._candidate = self._candidate, None
        if check.status == PoseStatus.MOVED and before is not None and check.pose is not None \
                and not (outline_held or self._agree(check.pose, before)
                         or (candidate is not None and self._agree(check.pose, candidate))):
            self._candidate = check.pose
            self.tracker.set_pose(before)
            check = PoseCheck(PoseStatus.UNVERIFIED, before, check.shift_px, check.seen)
        if check.status == PoseStatus.LOST or (before is None and check.pose is None):
            pose = self._markerless(frame)
            if pose is not None:
                if before is None or self._agree(pose, before) or (candidate is not None and self._agree(pose, candidate)):
                    self.tracker.set_pose(pose)
                    check = PoseCheck(PoseStatus.MOVED, pose, check.shift_px, [])
                else:
                    self._candidate = pose
        self.status = check.status.value
        if self.tracker.pose is not before:
            self._changed()
        return check

    def _agree(self, a: BoardPose, b: BoardPose) -> bool:
        """Two poses put every marker corner within the tracking tolerance of each other."""
        corners = np.concatenate(list(self.kit.marker_corners(self.game).values()))
        return float(np.max(np.linalg.norm(a.project(corners, self.intr) - b.project(corners, self.intr), axis=1))) \
            <= self._tolerance

    def _markerless(self, frame: np.ndarray) -> BoardPose | None:
        if self.kit.grid(self.game) is None:
            return None
        from calibration.markerless import BoardNotFound, find_board

        try:
            pose, _ = find_board(frame, self.kit, self.game, self.intr)
        except (BoardNotFound, cv2.error, ValueError):
            return None
        return pose

    def _require(self) -> BoardPose:
        if self.tracker.pose is None:
            raise BoardLost("no board pose: the board markers are not found and the calibration has no pose")
        return self.tracker.pose

    # ------------------------------------------------------------ geometry
    def project(self, pts: np.ndarray) -> np.ndarray:
        """Board-frame points (N,2) at z=0 or (N,3) -> distorted image pixels (N,2)."""
        pts = np.asarray(pts, np.float64)
        if pts.ndim == 1:
            pts = pts[None]
        if pts.shape[-1] == 2:
            pts = np.concatenate([pts.reshape(-1, 2), np.zeros((pts.reshape(-1, 2).shape[0], 1))], axis=1)
        return self._require().project(pts.reshape(-1, 3), self.intr)

    def camera_position(self) -> np.ndarray:
        """The camera centre in the board frame (mm; z < 0 above the board)."""
        if self._cam_pos is None:
            pose = self._require()
            self._cam_pos = -pose.R.T @ np.asarray(pose.tvec, float).ravel()
        return self._cam_pos

    def rays(self, px: np.ndarray) -> np.ndarray:
        """Unit direction (board frame) of the ray from the camera through each pixel."""
        pose = self._require()
        und = cv2.undistortPoints(np.asarray(px, np.float64).reshape(-1, 1, 2), self.intr.K, self.intr.D).reshape(-1, 2)
        d_cam = np.column_stack([und, np.ones(len(und))])
        d = d_cam @ pose.R  # R^T d for each row
        return d / np.linalg.norm(d, axis=1, keepdims=True)

    def to_plane(self, px: np.ndarray, z: float = 0.0) -> np.ndarray:
        """Where the rays through pixels meet the plane at height ``z``: board mm (N,2)."""
        d = self.rays(px)
        c = self.camera_position()
        s = (z - c[2]) / d[:, 2]
        return c[None, :2] + d[:, :2] * s[:, None]

    def cell_centre(self, r: int, c: int) -> tuple[float, float]:
        grid = self.kit.grid(self.game)
        if grid is None:
            raise ValueError(f"{self.game} has no grid of cells")
        s = grid[1]
        return ((c + 0.5) * s, (r + 0.5) * s)

    def cell_polygon(self, r: int, c: int, z: float = 0.0, shrink: float = 0.0) -> np.ndarray:
        """Image polygon (4,2) of cell ``[r, c]`` at height ``z``, shrunk by ``shrink`` mm."""
        grid = self.kit.grid(self.game)
        if grid is None:
            raise ValueError(f"{self.game} has no grid of cells")
        s = grid[1]
        x0, y0, x1, y1 = c * s + shrink, r * s + shrink, (c + 1) * s - shrink, (r + 1) * s - shrink
        return self.project(np.array([[x0, y0, z], [x1, y0, z], [x1, y1, z], [x0, y1, z]], float))

    def area_polygon(self, margin_mm: float = 0.0, steps: int = 8) -> np.ndarray:
        """Image outline of the marked area grown by ``margin_mm`` (distortion followed)."""
        w, h = self.kit.area_mm(self.game)
        m = margin_mm
        t = np.linspace(0, 1, steps, endpoint=False)
        pts = np.concatenate([
            np.column_stack([-m + (w + 2 * m) * t, np.full_like(t, -m)]),
            np.column_stack([np.full_like(t, w + m), -m + (h + 2 * m) * t]),
            np.column_stack([w + m - (w + 2 * m) * t, np.full_like(t, h + m)]),
            np.column_stack([np.full_like(t, -m), h + m - (h + 2 * m) * t]),
        ])
        return self.project(pts)

    # -------------------------------------------------------------- sampling
    @staticmethod
    def sample(image: np.ndarray, px: np.ndarray) -> np.ndarray:
        return sample(image, px)

    def sample_mm(self, image: np.ndarray, pts: np.ndarray) -> np.ndarray:
        """Bilinear BGR (float32) at board points (N,2) z=0 or (N,3)."""
        return sample(image, self.project(pts))

    def rectify_maps(self, ppm: float = 2.0, margin_mm: float = 0.0, z: float = 0.0) -> tuple[np.ndarray, np.ndarray]:
        """Remap maps of the top-down warp (cached per pose): output pixel (i, j) shows
        board point ((j + 0.5) / ppm - margin, (i + 0.5) / ppm - margin) at height z."""
        key = (round(ppm, 4), round(margin_mm, 3), round(z, 3))
        warp = self._warps.get(key)
        if warp is None:
            w, h = self.kit.area_mm(self.game)
            W, H = int(round((w + 2 * margin_mm) * ppm)), int(round((h + 2 * margin_mm) * ppm))
            xs = (np.arange(W) + 0.5) / ppm - margin_mm
            ys = (np.arange(H) + 0.5) / ppm - margin_mm
            gx, gy = np.meshgrid(xs, ys)
            pts = np.column_stack([gx.ravel(), gy.ravel(), np.full(gx.size, z)])
            px = self.project(pts).astype(np.float32)
            warp = _Warp(px[:, 0].reshape(H, W).copy(), px[:, 1].reshape(H, W).copy(), ppm, margin_mm, z)
            self._warps[key] = warp
        return warp.mapx, warp.mapy

    def rectify(self, image: np.ndarray, ppm: float = 2.0, margin_mm: float = 0.0, z: float = 0.0,
                interpolation: int = cv2.INTER_LINEAR) -> np.ndarray:
        """Top-down view of the marked area (plus ``margin_mm``) at ``ppm`` px/mm."""
        mx, my = self.rectify_maps(ppm, margin_mm, z)
        return cv2.remap(image, mx, my, interpolation, borderMode=cv2.BORDER_CONSTANT, borderValue=0)

    @staticmethod
    def mm_of_rectified(u: np.ndarray, v: np.ndarray, ppm: float, margin_mm: float = 0.0) -> tuple[np.ndarray, np.ndarray]:
        """Board mm of rectified pixel coordinates (column u, row v)."""
        return (np.asarray(u) + 0.5) / ppm - margin_mm, (np.asarray(v) + 0.5) / ppm - margin_mm
