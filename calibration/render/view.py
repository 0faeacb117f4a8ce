"""A posed pinhole camera with lens distortion, and the raster primitives.

Everything is rendered on a canvas ``ss`` times finer than the output (supersampling)
and reduced with area averaging, which antialiases edges without biasing them. Pixel
centres follow OpenCV: output pixel (0, 0) is centred at (0, 0), so a canvas pixel
centre ``j`` is at output coordinate ``(j + 0.5) / ss - 0.5``.

Planar things (table, board, markers, cards, the ChArUco sheet) are textures mapped
exactly: every canvas pixel is traced back through the distortion to its ray and onto
the plane (a homography), then the texture is sampled there. Solid things are
polygons whose vertices go through ``cv2.projectPoints`` with the distortion.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import cv2
import numpy as np

from calibration.camera import Intrinsics


def look_at(camera_pos: np.ndarray, target: np.ndarray, roll_deg: float = 0.0) -> tuple[np.ndarray, np.ndarray]:
    """Rotation (world->camera) and translation of a camera at ``camera_pos`` looking at
    ``target``, its image x axis along the world x axis as far as possible.

    World = board frame (x right, y toward the near edge, z down), so a camera above
    the board looking down sees the far edge at the top of the image."""
    z = np.asarray(target, float) - np.asarray(camera_pos, float)
    z /= np.linalg.norm(z)
    x = np.array([1.0, 0.0, 0.0]) - z * z[0]
    if np.linalg.norm(x) < 1e-6:
        x = np.array([0.0, -1.0, 0.0]) - z * z[1]
    x /= np.linalg.norm(x)
    y = np.cross(z, x)
    R = np.stack([x, y, z])
    if roll_deg:
        a = np.radians(roll_deg)
        Rz = np.array([[np.cos(a), -np.sin(a), 0], [np.sin(a), np.cos(a), 0], [0, 0, 1]])
        R = Rz @ R
    t = -R @ np.asarray(camera_pos, float)
    return R, t


@dataclass
class View:
    """Intrinsics plus the board->camera pose (``R``, ``t``: x_cam = R x_board + t)."""

    intr: Intrinsics
    R: np.ndarray
    t: np.ndarray
    ss: int = 2
    _norm: np.ndarray | None = field(default=None, repr=False)

    @property
    def size(self) -> tuple[int, int]:
        return self.intr.width, self.intr.height

    @property
    def canvas_size(self) -> tuple[int, int]:
        return self.intr.width * self.ss, self.intr.height * self.ss

    @property
    def rvec(self) -> np.ndarray:
        return cv2.Rodrigues(self.R)[0].ravel()

    @property
    def camera_position(self) -> np.ndarray:
        return -self.R.T @ self.t

    def project(self, pts: np.ndarray, R: np.ndarray | None = None, t: np.ndarray | None = None) -> np.ndarray:
        """Output-pixel coordinates of world points (N,3), with distortion."""
        R = self.R if R is None else R
        t = self.t if t is None else t
        pts = np.asarray(pts, dtype=np.float64).reshape(-1, 3)
        if len(pts) == 0:
            return np.zeros((0, 2))
        img, _ = cv2.projectPoints(pts, cv2.Rodrigues(R)[0], t.reshape(3, 1), self.intr.K, self.intr.D)
        return img.reshape(-1, 2)

    def to_canvas(self, px: np.ndarray) -> np.ndarray:
        return (np.asarray(px) + 0.5) * self.ss - 0.5

    def depth(self, pts: np.ndarray) -> np.ndarray:
        return (np.asarray(pts, float).reshape(-1, 3) @ self.R[2]) + self.t[2]

    def normalized_map(self) -> np.ndarray:
        """(H*ss, W*ss, 2) float32 undistorted normalised coordinates of canvas pixels.

        Computed exactly on a coarse lattice and interpolated (the map is smooth),
        which is ~50x cheaper than undistorting every pixel."""
        if self._norm is not None:
            return self._norm
        W, H = self.canvas_size
        step = 8
        # Exact on a lattice every ``step`` canvas pixels (one beyond each edge), then
        # separable linear interpolation in float64 (cv2.remap/resize quantise their
        # coordinates or weights, which costs a tenth of a pixel here).
        gx = np.arange(-step, W + 2 * step, step, dtype=np.float64)
        gy = np.arange(-step, H + 2 * step, step, dtype=np.float64)
        xs, ys = np.meshgrid(gx, gy)
        out_x = (xs + 0.5) / self.ss - 0.5
        out_y = (ys + 0.5) / self.ss - 0.5
        pts = np.stack([out_x.ravel(), out_y.ravel()], axis=1).reshape(-1, 1, 2)
        crit = (cv2.TERM_CRITERIA_COUNT | cv2.TERM_CRITERIA_EPS, 40, 1e-10)
        und = cv2.undistortPointsIter(pts, self.intr.K, self.intr.D, None, None, crit).reshape(len(gy), len(gx), 2)

        def weights(n: int) -> tuple[np.ndarray, np.ndarray]:
            k = (np.arange(n) + step) / step
            i0 = np.floor(k).astype(int)
            return i0, (k - i0)

        ix, fx = weights(W)
        iy, fy = weights(H)
        rows = und[:, ix] * (1 - fx)[None, :, None] + und[:, ix + 1] * fx[None, :, None]
        full = rows[iy] * (1 - fy)[:, None, None] + rows[iy + 1] * fy[:, None, None]
        chans = [full[..., 0].astype(np.float32), full[..., 1].astype(np.float32)]
        self._norm = np.dstack(chans)
        return self._norm

    def plane_coords(self, R_pc: np.ndarray, t_pc: np.ndarray,
                     roi: tuple[int, int, int, int] | None = None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Plane coordinates (u, v) in mm seen by each canvas pixel (of ``roi`` = x0, y0,
        x1, y1 if given), for a plane whose frame maps to the camera by
        x_cam = R_pc [u, v, 0] + t_pc; plus a mask of rays that hit the plane in front
        of the camera."""
        nm = self.normalized_map()
        if roi is not None:
            x0, y0, x1, y1 = roi
            nm = nm[y0:y1, x0:x1]
        Hn = np.column_stack([R_pc[:, 0], R_pc[:, 1], t_pc]).astype(np.float64)
        Hi = np.linalg.inv(Hn)
        h, w = nm.shape[:2]
        uv = cv2.perspectiveTransform(np.ascontiguousarray(nm).reshape(-1, 1, 2), Hi).reshape(h, w, 2)
        # A ray meets the plane in front of the camera when the homogeneous scale of
        # the inverse map is positive; it varies slowly, so check it coarsely.
        st = 4
        c = nm[::st, ::st]
        wgt = Hi[2, 0] * c[..., 0] + Hi[2, 1] * c[..., 1] + Hi[2, 2]
        ok_c = (wgt > 1e-9).astype(np.uint8)
        ok = cv2.resize(ok_c, (w, h), interpolation=cv2.INTER_NEAREST).astype(bool) if st > 1 else ok_c.astype(bool)
        return uv[..., 0], uv[..., 1], ok

    def roi_of(self, pts: np.ndarray, R: np.ndarray | None = None, t: np.ndarray | None = None,
               pad: int = 8) -> tuple[int, int, int, int] | None:
        """Canvas bounding box (x0, y0, x1, y1) of world points, or None if off-canvas."""
        p = self.to_canvas(self.project(pts, R, t))
        W, H = self.canvas_size
        x0, y0 = np.floor(p.min(axis=0)).astype(int) - pad
        x1, y1 = np.ceil(p.max(axis=0)).astype(int) + pad
        x0, y0, x1, y1 = max(x0, 0), max(y0, 0), min(x1, W), min(y1, H)
        if x1 <= x0 or y1 <= y0:
            return None
        return int(x0), int(y0), int(x1), int(y1)


@dataclass
class Texture:
    """An sRGB image (H, W, 3 uint8) lying on a plane: pixel (i, j) is centred at
    plane coordinates (u0 + (j + 0.5)/ppm, v0 + (i + 0.5)/ppm) mm. ``alpha`` (uint8)
    is optional coverage."""

    rgb: np.ndarray
    ppm: float
    u0: float
    v0: float
    alpha: np.ndarray | None = None

    def to_px(self, u: float | np.ndarray, v: float | np.ndarray) -> tuple:
        return ((np.asarray(u) - self.u0) * self.ppm - 0.5, (np.asarray(v) - self.v0) * self.ppm - 0.5)

    def poly(self, pts_mm: np.ndarray) -> np.ndarray:
        """Polygon in texture pixels, fixed point with 4 fractional bits (for cv2 fill)."""
        p = np.asarray(pts_mm, float)
        x, y = self.to_px(p[:, 0], p[:, 1])
        return np.round(np.stack([x, y], axis=1) * 16).astype(np.int32)


def sample_plane(view: View, tex: Texture, R_pc: np.ndarray, t_pc: np.ndarray,
                 roi: tuple[int, int, int, int] | None = None) -> tuple[np.ndarray, np.ndarray]:
    """A transparent texture as the canvas (or its ``roi``) sees it: (rgb uint8,
    coverage float32 0..1)."""
    u, v, ok = view.plane_coords(R_pc, t_pc, roi)
    mx, my = tex.to_px(u, v)
    mx = np.where(ok, mx, -1e5).astype(np.float32)
    my = np.where(ok, my, -1e5).astype(np.float32)
    rgb = cv2.remap(tex.rgb, mx, my, cv2.INTER_LINEAR, borderMode=cv2.BORDER_REPLICATE)
    alpha = tex.alpha if tex.alpha is not None else np.full(tex.rgb.shape[:2], 255, np.uint8)
    cover = cv2.remap(alpha, mx, my, cv2.INTER_LINEAR, borderMode=cv2.BORDER_CONSTANT, borderValue=0)
    return rgb, cover.astype(np.float32) / 255.0


def plane_extent(tex: Texture) -> np.ndarray:
    """The texture's outline as plane points (20, 3): corners and edge points, so a
    distorted projection's bounding box is covered."""
    h, w = tex.rgb.shape[:2]
    u1, v1 = tex.u0 + w / tex.ppm, tex.v0 + h / tex.ppm
    s = np.linspace(0, 1, 5)
    us, vs = tex.u0 + (u1 - tex.u0) * s, tex.v0 + (v1 - tex.v0) * s
    edge = [(u, tex.v0) for u in us] + [(u1, v) for v in vs] + [(u, v1) for u in us] + [(tex.u0, v) for v in vs]
    return np.array([[u, v, 0] for u, v in edge], float)
