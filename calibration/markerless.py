"""Finding a board without markers, from its own outline and grid (lower confidence).

The board is the large region that is not table: the table's chromaticity is taken
from the frame's border, the board is the biggest blob that differs from it, a
quadrilateral is fitted to the blob's hull, and each side is then re-located precisely
by searching along its normal for the strongest colour step in linear light and
fitting a line.
Corners are the intersections of adjacent lines. Everything runs on the undistorted
image (lines are straight there) and the corners are distorted back at the end.

The grid then checks the result: in the rectified board, spaces must be uniform
inside and differ across their boundaries. The score sets the confidence, which is
capped below marker confidence. Only boards (Blox, Blockers!) can be found this way.
"""

from __future__ import annotations

import cv2
import numpy as np

from calibration.camera import Intrinsics
from calibration.colour import srgb_lut
from calibration.kit import Kit
from calibration.pose import BoardPose

MAX_CONFIDENCE = 0.7
_LIN = (srgb_lut() * 255.0).astype(np.float32)


class BoardNotFound(ValueError):
    """No board outline could be found."""


def _outline_mm(kit: Kit, game: str) -> tuple[np.ndarray, float]:
    grid = kit.grid(game)
    if grid is None:
        raise BoardNotFound(f"{game} has no board; markerless finding needs a board (use the markers)")
    n, s = grid
    rim = kit.blockers.rim_mm if game == "blockers" else 0.0
    side = n * s
    pts = np.array([[-rim, -rim, 0], [side + rim, -rim, 0], [side + rim, side + rim, 0], [-rim, side + rim, 0]], float)
    return pts, rim


def _order(quad: np.ndarray) -> np.ndarray:
    """Far-left first, clockwise in the image (the far edge is at the image top)."""
    c = quad.mean(axis=0)
    ang = np.arctan2(quad[:, 1] - c[1], quad[:, 0] - c[0])
    q = quad[np.argsort(ang)]  # clockwise from -pi in image coordinates (y down)
    k = int(np.argmin(q[:, 0] + q[:, 1]))
    return np.roll(q, -k, axis=0)


def _distance_map(image: np.ndarray) -> tuple[np.ndarray, float]:
    """How unlike the table each pixel is, and the table's own spread.

    The table's colour is the median of the frame's border. The comparison is on
    chromaticity in linear light (r, g over r+g+b), which light level, light fall-off
    and shadows leave unchanged, plus a little lightness."""
    blur = cv2.GaussianBlur(image, (0, 0), 1.2)
    lin = cv2.LUT(blur, np.repeat(_LIN[:, None], 3, axis=1).reshape(1, 256, 3)) / np.float32(255.0)
    # Grey-world balance first: a warm or cool light shifts every chromaticity alike.
    means = lin.reshape(-1, 3).mean(axis=0) + 1e-6
    lin = lin * (means.mean() / means).astype(np.float32)
    total = lin.sum(axis=2, keepdims=True) + np.float32(0.03)
    feat = np.concatenate([lin[..., 2:3] / total, lin[..., 1:2] / total], axis=2) * np.float32(250.0)
    light = cv2.cvtColor(blur, cv2.COLOR_BGR2LAB)[..., :1].astype(np.float32) * np.float32(0.15)
    feat = np.concatenate([feat, light], axis=2)
    H, W = feat.shape[:2]
    b = max(4, int(0.03 * min(H, W)))
    border = np.concatenate([feat[:b].reshape(-1, 3), feat[-b:].reshape(-1, 3), feat[:, :b].reshape(-1, 3),
                             feat[:, -b:].reshape(-1, 3)])
    table = np.median(border, axis=0)
    spread = float(np.median(np.linalg.norm(border - table, axis=1)))
    return np.linalg.norm(feat - table, axis=2), spread


def _initial_quad(dist: np.ndarray, spread: float) -> np.ndarray:
    # Otsu splits table from board when the light varies across the table (its spread
    # alone would set the bar too high); never below a plain colour difference.
    d8 = np.clip(dist * 2, 0, 255).astype(np.uint8)
    otsu, _ = cv2.threshold(d8, 0, 255, cv2.THRESH_BINARY | cv2.THRESH_OTSU)
    thr = max(15.0, min(otsu / 2, 4.0 * spread)) if spread > 4 else max(15.0, 4.0 * spread)
    mask = (dist > thr).astype(np.uint8) * 255
    mask = cv2.morphologyEx(mask, cv2.MORPH_CLOSE, np.ones((9, 9), np.uint8))
    mask = cv2.morphologyEx(mask, cv2.MORPH_OPEN, np.ones((5, 5), np.uint8))
    contours, _ = cv2.findContours(mask, cv2.RETR_EXTERNAL, cv2.CHAIN_APPROX_SIMPLE)
    if not contours:
        raise BoardNotFound("nothing on the table differs from the table colour")
    big = max(contours, key=cv2.contourArea)
    if cv2.contourArea(big) < 0.02 * dist.size:
        raise BoardNotFound("the largest object on the table is too small to be the board")
    hull = cv2.convexHull(big)
    peri = cv2.arcLength(hull, True)
    for eps in np.linspace(0.01, 0.1, 19):
        approx = cv2.approxPolyDP(hull, eps * peri, True)
        if len(approx) == 4:
            return _order(approx.reshape(4, 2).astype(np.float64))
    raise BoardNotFound("the board's outline is not a quadrilateral (covered, or cut off by the frame?)")


def _refine_sides(lin_dist: np.ndarray, quad: np.ndarray, reach: float,
                  peak: bool = False) -> tuple[np.ndarray, float, float]:
    """Re-locate each side: returns corners, RMS line residual, fraction of samples found.

    ``peak`` False: the first half-way crossing of the distance-to-table map from
    outside in (robust from afar). True: the strongest step of ``lin_dist`` (a linear
    light colour image) within reach, parabola-interpolated (precise once close)."""
    lines = []
    residuals = []
    found = 0
    total = 0
    H, W = lin_dist.shape[:2]
    centre = quad.mean(axis=0)
    for i in range(4):
        a, b = quad[i], quad[(i + 1) % 4]
        d = (b - a) / np.linalg.norm(b - a)
        n = np.array([-d[1], d[0]])
        if np.dot(n, (a + b) / 2 - centre) < 0:
            n = -n  # outward
        ts = np.linspace(0.2, 0.8, 40)
        offs = np.arange(reach, -reach - 1e-9, -0.25)  # outside -> inside
        base = a[None] + (b - a)[None] * ts[:, None]
        pts = base[:, None, :] + offs[None, :, None] * n[None, None, :]
        prof = cv2.remap(lin_dist, pts[..., 0].astype(np.float32), pts[..., 1].astype(np.float32), cv2.INTER_LINEAR,
                         borderMode=cv2.BORDER_CONSTANT, borderValue=0)
        total += len(ts)
        edge = []
        if peak:
            der = np.abs(np.diff(prof, axis=1)).sum(axis=2) if prof.ndim == 3 else np.abs(np.diff(prof, axis=1))
            for j in range(len(ts)):
                k = int(np.argmax(der[j]))
                if der[j, k] < 6 or k == 0 or k == der.shape[1] - 1:
                    continue
                y0, y1, y2 = der[j, k - 1], der[j, k], der[j, k + 1]
                den = y0 - 2 * y1 + y2
                f = float(np.clip(0.5 * (y0 - y2) / den, -0.5, 0.5)) if den < 0 else 0.0
                s = offs[k] + (offs[k + 1] - offs[k]) * (0.5 + f)
                edge.append(base[j] + n * s)
        for j in range(0 if not peak else len(ts), len(ts)):
            p = prof[j]
            lo, hi = float(np.percentile(p, 10)), float(np.percentile(p, 90))
            if hi - lo < 10:
                continue
            half = (lo + hi) / 2
            above = np.nonzero(p > half)[0]
            if len(above) == 0 or above[0] == 0:
                continue
            k = int(above[0])
            # Linear interpolation of the half-way crossing, outside -> inside.
            f = (half - p[k - 1]) / max(p[k] - p[k - 1], 1e-6)
            s = offs[k - 1] + (offs[k] - offs[k - 1]) * f
            edge.append(base[j] + n * s)
        if len(edge) < 8:
            raise BoardNotFound("a side of the board could not be located")
        e = np.array(edge)
        for _ in range(3):
            c = e.mean(axis=0)
            _, _, vt = np.linalg.svd(e - c)
            dirn = vt[0]
            nrm = np.array([-dirn[1], dirn[0]])
            dist = np.abs((e - c) @ nrm)
            keep = dist < max(0.7, 3.0 * np.median(dist))
            if keep.all() or keep.sum() < 8:
                break
            e = e[keep]
        found += len(e)
        residuals.append(float(np.sqrt(np.mean(((e - c) @ nrm) ** 2))))
        lines.append((c, dirn))
    out = np.empty((4, 2))
    for i in range(4):
        (c1, d1), (c2, d2) = lines[i - 1], lines[i]
        s1 = np.linalg.solve(np.column_stack([d1, -d2]), c2 - c1)[0]
        out[i] = c1 + d1 * s1
    return out, float(np.sqrt(np.mean(np.square(residuals)))), found / total


def _grid_score(image_u: np.ndarray, corners: np.ndarray, kit: Kit, game: str, rim: float) -> float:
    """0..1: how much the rectified board looks like a grid of uniform spaces."""
    n, s = kit.grid(game)  # type: ignore[misc]
    ppm = 2.0
    side = n * s
    dst = np.array([[-rim, -rim], [side + rim, -rim], [side + rim, side + rim], [-rim, side + rim]]) * ppm + rim * ppm
    Hm = cv2.getPerspectiveTransform(corners.astype(np.float32), dst.astype(np.float32))
    size = int(round((side + 2 * rim) * ppm))
    rect = cv2.warpPerspective(image_u, Hm, (size, size)).astype(np.float32)
    o = int(round(rim * ppm))
    cell = s * ppm
    means, inner = [], []
    for r in range(n):
        for c in range(n):
            y0, x0 = int(o + (r + 0.3) * cell), int(o + (c + 0.3) * cell)
            y1, x1 = int(o + (r + 0.7) * cell), int(o + (c + 0.7) * cell)
            patch = rect[y0:y1, x0:x1].reshape(-1, 3)
            means.append(patch.mean(axis=0))
            inner.append(float(patch.std(axis=0).mean()))
    m = np.array(means).reshape(n, n, 3)
    across = np.concatenate([np.abs(np.diff(m, axis=0)).mean(axis=2).ravel(), np.abs(np.diff(m, axis=1)).mean(axis=2).ravel()])
    contrast = float(np.median(across)) + 1e-6
    return float(np.clip(1.0 - np.median(inner) / contrast, 0.0, 1.0))


def find_board(image: np.ndarray, kit: Kit, game: str, intr: Intrinsics) -> tuple[BoardPose, np.ndarray]:
    """Pose of the board found without markers, and the grid's corners in the image
    (far-left first, clockwise). Raises :class:`BoardNotFound`."""
    outline, rim = _outline_mm(kit, game)
    K, D = intr.K, intr.D
    und = cv2.undistort(image, K, D)
    dist, spread = _distance_map(und)
    quad = _initial_quad(dist, spread)
    side_px = float(np.mean(np.linalg.norm(quad - np.roll(quad, 1, axis=0), axis=1)))
    # The exact edge: the strongest colour step in (slightly smoothed) linear light
    # near each side. Two ways to get close enough for it: straight from the blob's
    # outline, or walking in from the table along the table-distance map. Both are
    # tried; the one whose edge points lie best on four lines wins.
    lin_rgb = cv2.GaussianBlur(cv2.LUT(und, np.repeat(_LIN[:, None], 3, axis=1).reshape(1, 256, 3)), (0, 0), 1.0)
    candidates = []
    for start in ("outline", "walk"):
        try:
            if start == "outline":
                c = _refine_sides(lin_rgb, quad, reach=max(4.0, 0.015 * side_px), peak=True)[0]
            else:
                lin = dist.astype(np.float32)
                c = _refine_sides(lin, quad, reach=max(6.0, 0.08 * side_px))[0]
                c = _refine_sides(lin, c, reach=4.0)[0]
            candidates.append(_refine_sides(lin_rgb, c, reach=3.0, peak=True))
        except BoardNotFound:
            continue
    if not candidates:
        raise BoardNotFound("the board's edges could not be located")
    corners, resid, frac = min(candidates, key=lambda r: r[1] / max(r[2], 1e-3))
    # Back to the distorted image, then the pose from the outline's corners.
    norm = cv2.undistortPoints(corners.reshape(-1, 1, 2), K, None).reshape(-1, 2)
    pts3 = np.column_stack([norm, np.ones(4)])
    dist_px, _ = cv2.projectPoints(pts3, np.zeros(3), np.zeros(3), K, D)
    dist_px = dist_px.reshape(-1, 2)
    ok, rvec, tvec = cv2.solvePnP(outline, dist_px, K, D, flags=cv2.SOLVEPNP_IPPE)
    if not ok:
        raise BoardNotFound("no pose fits the board outline")
    rvec, tvec = cv2.solvePnPRefineLM(outline, dist_px, K, D, rvec, tvec)
    proj = cv2.projectPoints(outline, rvec, tvec, K, D)[0].reshape(-1, 2)
    rms = float(np.sqrt(np.mean(np.sum((proj - dist_px) ** 2, axis=1))))
    score = _grid_score(und, corners, kit, game, rim)
    conf = MAX_CONFIDENCE * float(np.clip(frac, 0, 1)) * score * float(np.clip(1.5 - resid, 0.2, 1.0))
    pose = BoardPose(rvec.ravel(), tvec.ravel(), rms, "markerless", [], conf)
    grid_corners = pose.project(kit.area_corners(game), intr)
    return pose, grid_corners
