"""Board pose from the four board markers, and its per-frame re-check.

:func:`estimate_pose` detects the ArUco markers of the kit, solves the pose
(``cv2.solvePnP``, planar IPPE then Levenberg-Marquardt refinement) and reports the
reprojection error. When markers are missing it raises :class:`MarkerError`, which
names each missing marker with a hint (too dark, too small, cut off, covered).

:class:`PoseTracker` re-checks the pose on every frame cheaply: it looks for each
marker only around where the current pose puts it. Markers that moved mean the board
or the camera was bumped; the tracker then re-finds the pose from the whole frame.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field
from typing import Any

import cv2
import numpy as np

from calibration.camera import Intrinsics
from calibration.colour import srgb_lut
from calibration.kit import Kit, aruco_dictionary


class MarkerError(ValueError):
    """Board markers not found. ``missing`` maps marker id -> hint."""

    def __init__(self, message: str, missing: dict[int, str], found: list[int]) -> None:
        super().__init__(message)
        self.missing = missing
        self.found = found


@dataclass
class BoardPose:
    """Board -> camera pose (x_cam = R x_board + t, mm)."""

    rvec: np.ndarray
    tvec: np.ndarray
    reprojection_px: float  # RMS over the points used
    method: str = "markers"  # or "markerless"
    markers: list[int] = field(default_factory=list)
    confidence: float = 1.0
    per_marker_px: dict[int, float] = field(default_factory=dict)

    @property
    def R(self) -> np.ndarray:
        return cv2.Rodrigues(self.rvec)[0]

    def project(self, pts: np.ndarray, intr: Intrinsics) -> np.ndarray:
        img, _ = cv2.projectPoints(np.asarray(pts, np.float64).reshape(-1, 3), self.rvec, self.tvec, intr.K, intr.D)
        return img.reshape(-1, 2)

    def to_json(self) -> dict[str, Any]:
        return {"rvec": [float(v) for v in self.rvec], "tvec": [float(v) for v in self.tvec],
                "reprojection_px": float(self.reprojection_px), "method": self.method, "markers": list(self.markers),
                "confidence": float(self.confidence),
                "per_marker_px": {str(k): float(v) for k, v in self.per_marker_px.items()}}

    @staticmethod
    def from_json(d: dict[str, Any]) -> "BoardPose":
        return BoardPose(np.array(d["rvec"], float), np.array(d["tvec"], float), float(d["reprojection_px"]),
                         str(d.get("method", "markers")), [int(v) for v in d.get("markers", [])],
                         float(d.get("confidence", 1.0)),
                         {int(k): float(v) for k, v in d.get("per_marker_px", {}).items()})


def make_detector(kit: Kit) -> cv2.aruco.ArucoDetector:
    params = cv2.aruco.DetectorParameters()
    params.cornerRefinementMethod = cv2.aruco.CORNER_REFINE_NONE  # refine_quad does it
    # A stricter "black" keeps a marker apart from a dark board space touching its
    # inner corner (table-kit.md puts the marker's corner on the grid's corner).
    params.adaptiveThreshConstant = 12
    return cv2.aruco.ArucoDetector(aruco_dictionary(kit.markers.dictionary), params)


def _gray(image: np.ndarray) -> np.ndarray:
    return image if image.ndim == 2 else cv2.cvtColor(image, cv2.COLOR_BGR2GRAY)


_LINEAR_LUT = (srgb_lut() * 255.0).astype(np.float32)


def refine_quad(gray: np.ndarray, quad: np.ndarray, cells: int = 6) -> np.ndarray:
    """:func:`fit_quad`, or the input corners when the edges cannot be fitted."""
    out = fit_quad(gray, quad, cells)
    return np.asarray(quad, np.float64) if out is None else out


def fit_quad(gray: np.ndarray, quad: np.ndarray, cells: int = 6) -> np.ndarray | None:
    """Sub-pixel corners of a marker's outer border from its four edges, or None.

    ArUco's corner refinement works on the corner itself, which for an L-shaped
    corner of a blurred image is biased inward. Here each side's edge is located along
    its normal at a dozen points (peak of the intensity derivative, parabola
    interpolated), a line is fitted per side, and adjacent lines are intersected."""
    return fit_quads([(gray, quad)], cells)[0]


def fit_quads(items: list[tuple[np.ndarray, np.ndarray]], cells: int = 6) -> list[np.ndarray | None]:
    """:func:`fit_quad` for several (image, corners) pairs at once: the numerical work is
    vectorised over every side of every marker (the per-frame pose check's fast path)."""
    M = len(items)
    if M == 0:
        return []
    ts = np.linspace(0.15, 0.85, 12)
    T = len(ts)
    O = 25  # profile samples, spaced reach/12
    quads = np.array([np.asarray(q, np.float64) for _, q in items])  # (M, 4, 2)
    a = quads.reshape(M * 4, 2)
    b = np.roll(quads, -1, axis=1).reshape(M * 4, 2)
    sides = np.linalg.norm(b - a, axis=1).reshape(M, 4).mean(axis=1)
    reach = np.clip(sides / cells * 0.45, 1.0, 3.0)  # (M,)
    steps = np.linspace(-1.0, 1.0, O)
    d = (b - a) / np.linalg.norm(b - a, axis=1, keepdims=True)
    n = np.stack([-d[:, 1], d[:, 0]], axis=1)
    base = a[:, None, :] + (b - a)[:, None, :] * ts[None, :, None]  # (S, T, 2)
    offs = steps[None, :] * np.repeat(reach, 4)[:, None]  # (S, O)
    pts = base[:, :, None, :] + offs[:, None, :, None] * n[:, None, None, :]  # (S, T, O, 2)
    S = M * 4
    prof = np.empty((S, T, O))
    for m, (gray, _) in enumerate(items):
        # Edges are located in linear light: blur (defocus, motion, the lens) mixes
        # light linearly, so only there is an edge's mid-point where paper meets ink;
        # in gamma-encoded values a blurred black square looks smaller than it is.
        lin = cv2.LUT(gray, _LINEAR_LUT) if gray.dtype == np.uint8 else gray.astype(np.float32)
        p = pts[m * 4:(m + 1) * 4]
        prof[m * 4:(m + 1) * 4] = cv2.remap(lin, p[..., 0].reshape(4 * T, O).astype(np.float32),
                                            p[..., 1].reshape(4 * T, O).astype(np.float32), cv2.INTER_LINEAR,
                                            borderMode=cv2.BORDER_REPLICATE).reshape(4, T, O)
    prof = prof.reshape(S * T, O)
    der = np.abs(np.diff(prof, axis=1))
    k = np.argmax(der, axis=1)
    rows = np.arange(S * T)
    peak = der[rows, k]
    y0, y2 = der[rows, np.clip(k - 1, 0, O - 2)], der[rows, np.clip(k + 1, 0, O - 2)]
    den = y0 - 2 * peak + y2
    inner = (k > 0) & (k < O - 2) & (den < 0)
    frac = np.where(inner, np.clip(0.5 * (y0 - y2) / np.where(den < 0, den, -1.0), -0.5, 0.5), 0.0)
    step = np.repeat(np.repeat(reach, 4) * 2 / (O - 1), T)
    sdist = np.repeat(offs[:, 0], T) + (k + 0.5 + frac) * step
    edge = (base.reshape(S * T, 2) + np.repeat(n, T, axis=0) * sdist[:, None]).reshape(S, T, 2)
    w = (peak >= 4).reshape(S, T).astype(np.float64)
    ok = w.sum(axis=1) >= 8
    w[~ok] = 1.0  # keep the arithmetic finite; these markers are rejected below
    for _ in range(2):
        cnt = w.sum(axis=1, keepdims=True)
        c = (edge * w[..., None]).sum(axis=1) / cnt
        r = edge - c[:, None, :]
        sxx = (w * r[..., 0] ** 2).sum(axis=1)
        syy = (w * r[..., 1] ** 2).sum(axis=1)
        sxy = (w * r[..., 0] * r[..., 1]).sum(axis=1)
        th = 0.5 * np.arctan2(2 * sxy, sxx - syy)
        dirn = np.stack([np.cos(th), np.sin(th)], axis=1)
        nrm = np.stack([-dirn[:, 1], dirn[:, 0]], axis=1)
        dist = np.abs((r * nrm[:, None, :]).sum(axis=2))
        med = np.nanmedian(np.where(w > 0, dist, np.nan), axis=1)
        keep = (dist < np.maximum(0.5, 2.5 * med)[:, None]) & (w > 0)
        enough = keep.sum(axis=1) >= 6
        w = np.where(enough[:, None], keep, w > 0).astype(np.float64)
    # Corner i of a marker is where its side i-1 meets its side i.
    c4, d4 = c.reshape(M, 4, 2), dirn.reshape(M, 4, 2)
    c1, d1 = np.roll(c4, 1, axis=1), np.roll(d4, 1, axis=1)
    det = d1[..., 0] * (-d4[..., 1]) + d4[..., 0] * d1[..., 1]
    safe = np.where(np.abs(det) < 1e-6, 1.0, det)
    rhs = c4 - c1
    s1 = (rhs[..., 0] * (-d4[..., 1]) + d4[..., 0] * rhs[..., 1]) / safe
    out = c1 + d1 * s1[..., None]
    moved = np.linalg.norm(out - quads, axis=2).max(axis=1)
    good = ok.reshape(M, 4).all(axis=1) & (np.abs(det) >= 1e-6).all(axis=1) & (moved <= np.maximum(2.5, sides * 0.08))
    # Not good: the edges are not where the corners said (occlusion, wrong guess).
    return [out[m] if good[m] else None for m in range(M)]


_LENIENT: dict[str, cv2.aruco.ArucoDetector] = {}


def _lenient(kit: Kit) -> cv2.aruco.ArucoDetector:
    d = _LENIENT.get(kit.markers.dictionary)
    if d is None:
        params = cv2.aruco.DetectorParameters()
        params.cornerRefinementMethod = cv2.aruco.CORNER_REFINE_NONE
        d = _LENIENT[kit.markers.dictionary] = cv2.aruco.ArucoDetector(aruco_dictionary(kit.markers.dictionary), params)
    return d


def detect_markers(image: np.ndarray, kit: Kit, detector: cv2.aruco.ArucoDetector | None = None,
                   offset: tuple[int, int] = (0, 0), second_pass: bool = True) -> dict[int, np.ndarray]:
    """Board marker id -> its four image corners (ArUco order), board ids only."""
    det = detector or make_detector(kit)
    gray = _gray(image)
    wanted = set(kit.markers.ids.values())
    corners, ids, _ = det.detectMarkers(gray)
    pairs = [] if ids is None else list(zip(corners, ids.ravel()))
    if len({int(i) for _, i in pairs} & wanted) < len(wanted) and second_pass:
        # OpenCV's default threshold finds some blurred markers the strict one misses.
        c2, i2, _ = _lenient(kit).detectMarkers(gray)
        if i2 is not None:
            pairs += list(zip(c2, i2.ravel()))
    out: dict[int, np.ndarray] = {}
    for c, i in pairs:
        i = int(i)
        if i in wanted and i not in out:
            cells = aruco_dictionary(kit.markers.dictionary).markerSize + 2
            out[i] = refine_quad(gray, c.reshape(4, 2), cells) + np.array(offset, float)
    return out


def solve_pose(found: dict[int, np.ndarray], kit: Kit, game: str, intr: Intrinsics) -> BoardPose:
    obj_all = kit.marker_corners(game)
    ids = sorted(found)
    obj = np.concatenate([obj_all[i] for i in ids]).astype(np.float64)
    img = np.concatenate([found[i] for i in ids]).astype(np.float64)
    # IPPE: the marker corners are coplanar (z = 0), which it solves exactly.
    ok, rvec, tvec = cv2.solvePnP(obj, img, intr.K, intr.D, flags=cv2.SOLVEPNP_IPPE)
    if not ok:
        raise MarkerError("solvePnP failed on the detected markers", {}, ids)
    rvec, tvec = cv2.solvePnPRefineLM(obj, img, intr.K, intr.D, rvec, tvec)
    proj, _ = cv2.projectPoints(obj, rvec, tvec, intr.K, intr.D)
    err = np.linalg.norm(proj.reshape(-1, 2) - img, axis=1)
    per = {i: float(np.sqrt(np.mean(err[k * 4:(k + 1) * 4] ** 2))) for k, i in enumerate(ids)}
    rms = float(np.sqrt(np.mean(err ** 2)))
    conf = float(np.clip(1.0 - max(0.0, rms - 0.5) / 3.0, 0.0, 1.0)) * (1.0 if len(ids) >= 3 else 0.8)
    return BoardPose(rvec.ravel(), tvec.ravel(), rms, "markers", ids, conf, per)


def _hint(image: np.ndarray, pts: np.ndarray | None) -> str:
    """Why a marker expected at ``pts`` (image corners, or None if unknown) was not read."""
    gray = _gray(image)
    H, W = gray.shape
    if pts is None:
        mean = float(gray.mean())
        if mean < 40:
            return "too dark (add light or raise the exposure)"
        if mean > 215:
            return "too bright (over-exposed)"
        return "not in view, covered, or too small"
    if pts[:, 0].min() < 0 or pts[:, 1].min() < 0 or pts[:, 0].max() > W - 1 or pts[:, 1].max() > H - 1:
        return "cut off by the frame edge (aim the camera so the whole board and its markers are in view)"
    side = float(np.mean(np.linalg.norm(pts - np.roll(pts, 1, axis=0), axis=1)))
    if side < 14:
        return f"too small ({side:.0f} px across; move the camera closer or print larger markers)"
    x0, y0 = np.floor(pts.min(axis=0)).astype(int)
    x1, y1 = np.ceil(pts.max(axis=0)).astype(int) + 1
    patch = gray[max(y0, 0):y1, max(x0, 0):x1]
    if patch.size == 0:
        return "cut off by the frame edge"
    mean, std = float(patch.mean()), float(patch.std())
    if mean < 45 and std < 25:
        return "too dark (add light or raise the exposure)"
    if mean > 200 and std < 30:
        return "washed out (glare or over-exposure on the marker)"
    if std < 18:
        return "low contrast (blur, glare or shadow)"
    return "covered or unreadable (a hand or object over it, or heavy blur)"


MAGNIFY_TO_PX = 64.0  # a marker looked at again is magnified to about this many pixels across


def _magnified_look(image: np.ndarray, kit: Kit, marker_id: int, pts: np.ndarray) -> np.ndarray | None:
    """Marker ``marker_id`` searched for around its predicted corners ``pts`` in a
    magnified crop; its corners in ``image`` pixels, or None."""
    H, W = image.shape[:2]
    side = float(np.mean(np.linalg.norm(pts - np.roll(pts, 1, axis=0), axis=1)))
    if not np.isfinite(side) or side < 4 or side > MAGNIFY_TO_PX:
        return None
    # The prediction is only as good as the lens model (a default lens is off by up to
    # a marker's width at a wide-angle frame's edge): a generous window, and the id decides.
    margin = 1.5 * side
    x0, y0 = np.floor(pts.min(axis=0) - margin).astype(int)
    x1, y1 = np.ceil(pts.max(axis=0) + margin).astype(int)
    x0, y0, x1, y1 = max(int(x0), 0), max(int(y0), 0), min(int(x1), W), min(int(y1), H)
    if x1 - x0 < 8 or y1 - y0 < 8:
        return None
    f = min(4.0, MAGNIFY_TO_PX / side)
    crop = cv2.resize(_gray(image[y0:y1, x0:x1]), None, fx=f, fy=f, interpolation=cv2.INTER_CUBIC)
    quad = detect_markers(crop, kit).get(marker_id)
    if quad is None:
        return None
    # pixel centres: x_crop = (x + 0.5) * f - 0.5
    back = (quad + 0.5) / f - 0.5 + np.array([x0, y0], float)
    if float(np.max(np.linalg.norm(back - pts, axis=1))) > 2.0 * side:
        return None  # not where the other markers put it
    return back


def estimate_pose(image: np.ndarray, kit: Kit, game: str, intr: Intrinsics, *, min_markers: int = 2,
                  detector: cv2.aruco.ArucoDetector | None = None) -> BoardPose:
    """The board pose from the markers found in ``image``.

    Raises :class:`MarkerError` when fewer than ``min_markers`` are found; the message
    names the missing markers with a hint each. With enough markers the pose is
    returned and ``pose.markers`` lists which ones were used."""
    if image is None or image.size == 0:
        raise MarkerError("empty frame", {}, [])
    if (image.shape[1], image.shape[0]) != (intr.width, intr.height):
        raise MarkerError(f"frame is {image.shape[1]}x{image.shape[0]} but the camera calibration is for "
                          f"{intr.width}x{intr.height}", {}, [])
    found = detect_markers(image, kit, detector)
    if len(found) >= min_markers:
        return solve_pose(found, kit, game, intr)
    missing_ids = [i for i in sorted(kit.markers.ids.values()) if i not in found]
    predicted: dict[int, np.ndarray] = {}
    if found:
        try:
            pose = solve_pose(found, kit, game, intr)
            obj = kit.marker_corners(game)
            predicted = {i: pose.project(obj[i], intr) for i in missing_ids}
        except (MarkerError, cv2.error):
            predicted = {}
    if len(found) >= 2:
        # A far marker on an oblique or wide-angle view can be a few pixels per bit,
        # below what the detector's thresholds resolve: look again where the others put
        # it, magnified.
        for i, pts in predicted.items():
            quad = _magnified_look(image, kit, i, pts)
            if quad is not None:
                found[i] = quad
        if len(found) >= min_markers:
            return solve_pose(found, kit, game, intr)
        missing_ids = [i for i in missing_ids if i not in found]
    missing = {i: _hint(image, predicted.get(i)) for i in missing_ids}
    parts = [f"{i} ({kit.marker_name(i)}): {h}" for i, h in missing.items()]
    need = f"need at least {min_markers}" if min_markers < 4 else "need all four"
    msg = f"board markers not found ({len(found)} of 4 seen, {need}): " + "; ".join(parts)
    raise MarkerError(msg, missing, sorted(found))


class PoseStatus(str, enum.Enum):
    OK = "ok"  # markers where the pose says
    MOVED = "moved"  # markers moved and the pose was re-found
    UNVERIFIED = "unverified"  # too few markers visible (hands?) to confirm; pose kept
    LOST = "lost"  # markers moved and no new pose could be found


@dataclass
class PoseCheck:
    status: PoseStatus
    pose: BoardPose | None
    shift_px: float  # largest marker corner displacement seen
    seen: list[int]


class PoseTracker:
    """Re-check the board pose per frame; re-find it when the board or camera moved."""

    def __init__(self, kit: Kit, game: str, intr: Intrinsics, pose: BoardPose | None = None, *,
                 tolerance_px: float = 2.0, min_markers: int = 2) -> None:
        self.kit, self.game, self.intr = kit, game, intr
        self.detector = make_detector(kit)
        self._cells = aruco_dictionary(kit.markers.dictionary).markerSize + 2
        self.tolerance_px = tolerance_px
        self.min_markers = min_markers
        self.pose: BoardPose | None = None
        self.expected: dict[int, np.ndarray] = {}
        if pose is not None:
            self.set_pose(pose)

    def set_pose(self, pose: BoardPose) -> None:
        self.pose = pose
        obj = self.kit.marker_corners(self.game)
        self.expected = {i: pose.project(c, self.intr) for i, c in obj.items()}

    def _find_near(self, image: np.ndarray) -> dict[int, np.ndarray]:
        H, W = image.shape[:2]
        out: dict[int, np.ndarray] = {}
        for i, pts in self.expected.items():
            side = float(np.max(pts.max(axis=0) - pts.min(axis=0)))
            pad = int(max(12, 0.45 * side))
            x0, y0 = np.floor(pts.min(axis=0)).astype(int) - pad
            x1, y1 = np.ceil(pts.max(axis=0)).astype(int) + pad
            x0, y0, x1, y1 = max(x0, 0), max(y0, 0), min(x1, W), min(y1, H)
            if x1 - x0 < 8 or y1 - y0 < 8:
                continue
            crop = image[y0:y1, x0:x1]
            got = detect_markers(crop, self.kit, self.detector, (x0, y0), second_pass=False)
            if i in got:
                out[i] = got[i]
        return out

    def _verify_fast(self, image: np.ndarray) -> dict[int, np.ndarray]:
        """Markers whose four edges are found right where the pose puts them (no
        ArUco decoding: the fast path of an unchanged table)."""
        H, W = image.shape[:2]
        items, keys, origins = [], [], []
        for i, pts in self.expected.items():
            x0, y0 = np.floor(pts.min(axis=0)).astype(int) - 6
            x1, y1 = np.ceil(pts.max(axis=0)).astype(int) + 7
            if x0 < 0 or y0 < 0 or x1 > W or y1 > H:
                continue
            items.append((_gray(image[y0:y1, x0:x1]), pts - [x0, y0]))
            keys.append(i)
            origins.append((x0, y0))
        fits = fit_quads(items, self._cells)
        return {i: q + o for i, q, o in zip(keys, fits, origins) if q is not None}

    def check(self, image: np.ndarray, *, search_frame: bool = False) -> PoseCheck:
        """Re-check the pose on ``image`` (see :class:`PoseStatus`).

        ``search_frame``: when the markers are not confirmed near where the pose puts
        them, look for them in the whole frame (the start-up search) before answering
        ``unverified``. For a pose that may be far off (one not from markers): its
        expected marker places can be anywhere, so the markers would never be looked
        for where they are."""
        if self.pose is None:
            return self._refind(image, 0.0)
        quick = self._verify_fast(image)
        shifts = {i: float(np.max(np.linalg.norm(c - self.expected[i], axis=1))) for i, c in quick.items()}
        if len(quick) >= max(self.min_markers, 3) and all(v <= self.tolerance_px for v in shifts.values()):
            return PoseCheck(PoseStatus.OK, self.pose, max(shifts.values()), sorted(quick))
        seen = self._find_near(image)
        shifts = {i: float(np.max(np.linalg.norm(c - self.expected[i], axis=1))) for i, c in seen.items()}
        still = [i for i, s in shifts.items() if s <= self.tolerance_px]
        shift = max(shifts.values(), default=0.0)
        if len(still) >= self.min_markers and len(still) == len(seen):
            return PoseCheck(PoseStatus.OK, self.pose, shift, sorted(seen))
        if len(seen) - len(still) >= 1 and (len(seen) - len(still) >= len(still) or len(still) < self.min_markers):
            return self._refind(image, shift)
        if search_frame:
            found = self._refind(image, shift)
            if found.status == PoseStatus.MOVED:
                return found
        return PoseCheck(PoseStatus.UNVERIFIED, self.pose, shift, sorted(seen))

    def _refind(self, image: np.ndarray, shift: float) -> PoseCheck:
        try:
            pose = estimate_pose(image, self.kit, self.game, self.intr, min_markers=max(self.min_markers, 3),
                                 detector=self.detector)
        except MarkerError:
            return PoseCheck(PoseStatus.LOST, self.pose, shift, [])
        self.set_pose(pose)
        return PoseCheck(PoseStatus.MOVED, pose, shift, list(pose.markers))
