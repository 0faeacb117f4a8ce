"""Finding a board without markers, from its own outline and grid (lower confidence).

Everything runs on the undistorted image (lines are straight there; its border is
replicated so the frame's edge draws no outline) and the corners are distorted back at
the end.

First the board's rough outline: the table's chromaticity is taken from the frame's
border, the board is the biggest blob that differs from it, and a quadrilateral is
fitted to the blob (its hull, and each side re-fitted by RANSAC to the longest straight
run of the blob's outline, since pieces and their shadows bulge the hull). A second
blob from chromaticity alone, at half resolution, gives more starts: a brightly lit
patch of table or a shadow changes lightness, not chromaticity.

Blox (spaces run to the board's edge): the whole grid of n+1 by n+1 lines is fitted to
the image, not just the outline. The board pose (6 degrees of freedom, with the
camera's intrinsics and the kit's space size) is refined by point-to-line Gauss-Newton
with robust weights on the colour steps found along each projected line, in linear
light divided by the local light level, searching ever closer. The grid repeats, so a
fit one space off still puts n of its lines on steps: the space-shifted poses are scored
and the best registration kept. Each start is fitted and the best grid score wins.

Blockers! (a plain rim around the grid): each side of the outline is re-located by the
strongest colour step in linear light along its normal and a line fitted.

The rectified board's uniformity and the grid fit's score set the confidence, which is
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
    lin = cv2.LUT(blur, np.repeat(_LIN[:, None], 3, axis=1).reshape(1, 256, 3))
    # Grey-world balance first: a warm or cool light shifts every chromaticity alike.
    means = np.array(cv2.mean(lin)[:3]) / 255.0 + 1e-6
    gains = means.mean() / means / 255.0
    lin = cv2.multiply(lin, tuple(float(g) for g in gains) + (0.0,))
    total = cv2.transform(lin, np.ones((1, 3), np.float32)) + np.float32(0.03)
    chans = cv2.split(lin)
    light = cv2.cvtColor(blur, cv2.COLOR_BGR2LAB)[..., 0]
    feat = cv2.merge([cv2.divide(chans[2], total, scale=250.0), cv2.divide(chans[1], total, scale=250.0),
                      light.astype(np.float32) * np.float32(0.15)])
    H, W = feat.shape[:2]
    b = max(4, int(0.03 * min(H, W)))
    border = np.concatenate([feat[:b].reshape(-1, 3), feat[-b:].reshape(-1, 3), feat[:, :b].reshape(-1, 3),
                             feat[:, -b:].reshape(-1, 3)])
    table = np.median(border, axis=0)
    spread = float(np.median(np.linalg.norm(border - table, axis=1)))
    diff = cv2.subtract(feat, tuple(float(v) for v in table) + (0.0,))
    sq = cv2.transform(cv2.multiply(diff, diff), np.ones((1, 3), np.float32))
    return cv2.sqrt(sq), spread


def _blob(dist: np.ndarray, thr: float) -> np.ndarray:
    mask = (dist > thr).astype(np.uint8) * 255
    mask = cv2.morphologyEx(mask, cv2.MORPH_CLOSE, np.ones((9, 9), np.uint8))
    mask = cv2.morphologyEx(mask, cv2.MORPH_OPEN, np.ones((5, 5), np.uint8))
    contours, _ = cv2.findContours(mask, cv2.RETR_EXTERNAL, cv2.CHAIN_APPROX_NONE)
    if not contours:
        raise BoardNotFound("nothing on the table differs from the table colour")
    big = max(contours, key=cv2.contourArea)
    if cv2.contourArea(big) < 0.02 * dist.size:
        raise BoardNotFound("the largest object on the table is too small to be the board")
    return big.reshape(-1, 2).astype(np.float64)


def _hull_quad(contour: np.ndarray) -> np.ndarray:
    hull = cv2.convexHull(contour.astype(np.float32))
    peri = cv2.arcLength(hull, True)
    for eps in np.linspace(0.01, 0.1, 19):
        approx = cv2.approxPolyDP(hull, eps * peri, True)
        if len(approx) == 4:
            return _order(approx.reshape(4, 2).astype(np.float64))
    raise BoardNotFound("the board's outline is not a quadrilateral (covered, or cut off by the frame?)")


def _straight_sides(contour: np.ndarray, quad: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """Re-fit each side of ``quad`` to the longest straight run of the blob's outline
    near it (RANSAC). Pieces standing on the edge and their shadows bulge the blob's
    hull; the board's edge is the one long straight part of each side."""
    lines = []
    for i in range(4):
        a, b = quad[i], quad[(i + 1) % 4]
        L = float(np.linalg.norm(b - a))
        d = (b - a) / L
        nrm = np.array([-d[1], d[0]])
        rel = contour - a
        along = rel @ d
        off = rel @ nrm
        sel = contour[(along > 0.05 * L) & (along < 0.95 * L) & (np.abs(off) < 0.2 * L)]
        if len(sel) < 20:
            raise BoardNotFound("a side of the board's outline is missing")
        best, best_in = None, -1
        for _ in range(60):
            p, q = sel[rng.integers(len(sel), size=2)]
            v = q - p
            nv = float(np.linalg.norm(v))
            if nv < 0.1 * L:
                continue
            m = np.array([-v[1], v[0]]) / nv
            inl = np.abs((sel - p) @ m) < 1.5
            cnt = int(inl.sum())
            if cnt > best_in:
                best, best_in = inl, cnt
        if best is None or best_in < 15:
            raise BoardNotFound("a side of the board's outline is not straight")
        e = sel[best]
        c = e.mean(axis=0)
        w, v = np.linalg.eigh(np.cov((e - c).T))
        lines.append((c, v[:, 1]))
    out = np.empty((4, 2))
    for i in range(4):
        (c1, d1), (c2, d2) = lines[i - 1], lines[i]
        s1 = np.linalg.solve(np.column_stack([d1, -d2]), c2 - c1)[0]
        out[i] = c1 + d1 * s1
    return out


def _chroma_quads(image: np.ndarray, rng: np.random.Generator) -> list[np.ndarray]:
    """Board outlines from chromaticity alone (half resolution, smoothed against
    noise): light level, fall-off, one-sided light and shadows change the table's
    lightness but not its chromaticity, so a brightly lit patch of table or a piece's
    shadow is not mistaken for board here."""
    small = cv2.resize(image, (image.shape[1] // 2, image.shape[0] // 2), interpolation=cv2.INTER_AREA)
    lin = cv2.GaussianBlur(cv2.LUT(small, np.repeat(_LIN[:, None], 3, axis=1).reshape(1, 256, 3)), (0, 0), 1.5)
    means = lin.reshape(-1, 3).mean(axis=0) + 1e-6
    lin = lin * (means.mean() / means).astype(np.float32) / np.float32(255.0)
    total = lin.sum(axis=2, keepdims=True) + np.float32(0.004)
    feat = np.concatenate([lin[..., 2:3] / total, lin[..., 1:2] / total], axis=2) * np.float32(250.0)
    H, W = feat.shape[:2]
    b = max(3, int(0.03 * min(H, W)))
    border = np.concatenate([feat[:b].reshape(-1, 2), feat[-b:].reshape(-1, 2), feat[:, :b].reshape(-1, 2),
                             feat[:, -b:].reshape(-1, 2)])
    dist = np.linalg.norm(feat - np.median(border, axis=0), axis=2)
    spread = float(np.percentile(np.linalg.norm(border - np.median(border, axis=0), axis=1), 90))
    d8 = np.clip(dist * 4, 0, 255).astype(np.uint8)
    otsu, _ = cv2.threshold(d8, 0, 255, cv2.THRESH_BINARY | cv2.THRESH_OTSU)
    out = []
    for thr in {max(otsu / 4, 1.5 * spread), max(otsu / 8, 1.5 * spread)}:
        try:
            big = _blob(dist, thr)
            q = _hull_quad(big)
        except BoardNotFound:
            continue
        out.append(q * 2 + 0.5)
        try:
            out.append(_straight_sides(big, q, rng) * 2 + 0.5)
        except (BoardNotFound, np.linalg.LinAlgError):
            pass
    return out


def _initial_quad(dist: np.ndarray, spread: float, contour_out: list | None = None) -> np.ndarray:
    # Otsu splits table from board when the light varies across the table (its spread
    # alone would set the bar too high); never below a plain colour difference.
    d8 = np.clip(dist * 2, 0, 255).astype(np.uint8)
    otsu, _ = cv2.threshold(d8, 0, 255, cv2.THRESH_BINARY | cv2.THRESH_OTSU)
    thr = max(15.0, min(otsu / 2, 4.0 * spread)) if spread > 4 else max(15.0, 4.0 * spread)
    big = _blob(dist, thr)
    if contour_out is not None:
        contour_out.append(big)
    return _hull_quad(big)


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


def _grid_feature(und: np.ndarray) -> np.ndarray:
    """Linear light, per-channel balanced, divided by the local light level: a colour
    step between two spaces then has the same size under any light colour, level or
    fall-off (the noise grows where it is dark, which the fit's weights absorb)."""
    lin = cv2.LUT(und, np.repeat(_LIN[:, None], 3, axis=1).reshape(1, 256, 3))
    lin = cv2.GaussianBlur(lin, (0, 0), 1.0)
    H, W = lin.shape[:2]
    small = cv2.resize(lin, (W // 8, H // 8), interpolation=cv2.INTER_AREA)
    means = np.array(cv2.mean(small)[:3], np.float32) + np.float32(1e-3)
    lum = cv2.transform(small, np.full((1, 3), 1 / 3, np.float32))
    lum = cv2.GaussianBlur(lum, (0, 0), 3.0)
    lum += np.float32(0.02 * float(means.mean()) + 1e-3)
    local = cv2.resize(lum, (W, H), interpolation=cv2.INTER_LINEAR)
    scale = (means.mean() / means).astype(np.float32)
    lin = cv2.multiply(lin, tuple(float(v) for v in scale) + (0.0,))
    return cv2.divide(lin, cv2.merge([local, local, local]))


def _grid_samples(n: int, s: float, per_cell: int = 4) -> tuple[np.ndarray, np.ndarray]:
    """Board points on the grid's 2(n+1) lines, away from the crossings, and for each
    the board direction across its line (unit x for lines of constant x)."""
    fr = np.linspace(0.2, 0.8, per_cell)
    along = ((np.arange(n)[:, None] + fr[None, :]) * s).ravel()
    pts, across = [], []
    for k in range(n + 1):
        pts.append(np.column_stack([np.full_like(along, k * s), along]))
        across.append(np.tile([1.0, 0.0], (len(along), 1)))
        pts.append(np.column_stack([along, np.full_like(along, k * s)]))
        across.append(np.tile([0.0, 1.0], (len(along), 1)))
    return np.concatenate(pts), np.concatenate(across)


def _edge_search(feat: np.ndarray, pts: np.ndarray, normals: np.ndarray, reach: float,
                 step: float = 0.5) -> tuple[np.ndarray, np.ndarray]:
    """Signed offset (px, along ``normals``) of the strongest colour step within
    ``reach`` of each image point, and its strength."""
    offs = np.arange(-reach, reach + 1e-9, step)
    P = pts[:, None, :] + offs[None, :, None] * normals[:, None, :]
    prof = cv2.remap(feat, P[..., 0].astype(np.float32), P[..., 1].astype(np.float32), cv2.INTER_LINEAR,
                     borderMode=cv2.BORDER_REPLICATE)
    k2 = max(1, int(round(1.0 / step)))  # derivative over one pixel
    der = np.linalg.norm(prof[:, k2:] - prof[:, :-k2], axis=2)
    mid = offs[:-k2] + step * k2 / 2
    k = np.argmax(der, axis=1)
    rows = np.arange(len(der))
    peak = der[rows, k]
    y0 = der[rows, np.clip(k - 1, 0, der.shape[1] - 1)]
    y2 = der[rows, np.clip(k + 1, 0, der.shape[1] - 1)]
    den = y0 - 2 * peak + y2
    inner = (k > 0) & (k < der.shape[1] - 1) & (den < 0)
    frac = np.where(inner, np.clip(0.5 * (y0 - y2) / np.where(den < 0, den, -1.0), -0.5, 0.5), 0.0)
    edge = (k > 0) & (k < der.shape[1] - 1)
    return mid[k] + frac * step, np.where(edge, peak, 0.0)


def _fit_grid(feat: np.ndarray, K: np.ndarray, rvec: np.ndarray, tvec: np.ndarray, n: int, s: float,
              cell_px: float, coarse: bool = True) -> tuple[np.ndarray, np.ndarray, float]:
    """Refine the board pose so the projected grid lines sit on the image's colour
    steps: point-to-line Gauss-Newton with robust weights, searching ever closer."""
    obj2, across = _grid_samples(n, s)
    obj = np.column_stack([obj2, np.zeros(len(obj2))])
    eps = 0.5
    objd = np.column_stack([obj2 + across * eps, np.zeros(len(obj2))])
    zero = np.zeros(5)
    rvec, tvec = rvec.astype(np.float64).reshape(3, 1).copy(), tvec.astype(np.float64).reshape(3, 1).copy()
    H, W = feat.shape[:2]
    score = 0.0
    for reach in ((0.3 * cell_px, 0.15 * cell_px) if coarse else ()) + (4.0, 2.5, 2.0):
        reach = max(reach, 2.0)
        for _ in range(2):
            img, J = cv2.projectPoints(obj, rvec, tvec, K, zero)
            img = img.reshape(-1, 2)
            imd = cv2.projectPoints(objd, rvec, tvec, K, zero)[0].reshape(-1, 2)
            nrm = imd - img
            nrm /= np.linalg.norm(nrm, axis=1, keepdims=True) + 1e-12
            inside = (img[:, 0] > reach) & (img[:, 1] > reach) & (img[:, 0] < W - 1 - reach) & (img[:, 1] < H - 1 - reach)
            off, strength = _edge_search(feat, img, nrm, reach)
            good = inside & (strength > 0)
            if good.sum() < 30:
                raise BoardNotFound("the board's grid could not be followed")
            ref = float(np.percentile(strength[good], 75))
            good &= strength > 0.25 * ref
            r = off[good]
            Jn = (J[:, :6].reshape(-1, 2, 6) * nrm[:, :, None]).sum(axis=1)[good]
            sig = max(0.5, 1.4826 * float(np.median(np.abs(r - np.median(r)))))
            c = 3.0 * sig
            w = np.where(np.abs(r) < c, (1 - (r / c) ** 2) ** 2, 0.0) * np.minimum(strength[good] / ref, 1.5)
            A = Jn.T @ (Jn * w[:, None])
            b = Jn.T @ (w * r)
            dx = np.linalg.solve(A + 1e-6 * np.diag(np.diag(A)) + 1e-12 * np.eye(6), b)
            rvec += dx[:3, None]
            tvec += dx[3:, None]
            score = float(np.sum(w)) / len(obj)
    return rvec.ravel(), tvec.ravel(), score


def _step_reference(feat: np.ndarray, quad: np.ndarray) -> float:
    """A typical colour step between spaces, one value per frame so that the grid
    scores of different hypotheses compare: a high percentile of the one-pixel step
    inside the board's rough outline."""
    x0, y0 = np.maximum(np.floor(quad.min(axis=0)).astype(int), 0)
    x1, y1 = np.ceil(quad.max(axis=0)).astype(int) + 1
    roi = feat[y0:y1, x0:x1]
    gx = np.linalg.norm(roi[:, 1:] - roi[:, :-1], axis=2)
    gy = np.linalg.norm(roi[1:] - roi[:-1], axis=2)
    return float(np.percentile(np.concatenate([gx.ravel(), gy.ravel()]), 97)) * 0.5 + 1e-6


def _line_strength(feat: np.ndarray, K: np.ndarray, rvec: np.ndarray, tvec: np.ndarray, n: int, s: float,
                   ref: float | None = None) -> tuple[float, float]:
    """How well the 2(n+1) grid lines of a pose sit on colour steps: the sum over lines
    of the mean step strength found within a pixel and a half (capped at ``ref``, the
    typical strength of a step between spaces). Returns (score, ref)."""
    obj2, across = _grid_samples(n, s)
    obj = np.column_stack([obj2, np.zeros(len(obj2))])
    objd = np.column_stack([obj2 + across * 0.5, np.zeros(len(obj2))])
    zero = np.zeros(5)
    img = cv2.projectPoints(obj, rvec, tvec, K, zero)[0].reshape(-1, 2)
    nrm = cv2.projectPoints(objd, rvec, tvec, K, zero)[0].reshape(-1, 2) - img
    nrm /= np.linalg.norm(nrm, axis=1, keepdims=True) + 1e-12
    H, W = feat.shape[:2]
    inside = (img[:, 0] > 2) & (img[:, 1] > 2) & (img[:, 0] < W - 3) & (img[:, 1] < H - 3)
    _, strength = _edge_search(feat, img, nrm, 1.5)
    strength = np.where(inside, strength, 0.0)
    if ref is None:
        ref = float(np.percentile(strength[strength > 0], 60)) + 1e-6 if np.any(strength > 0) else 1.0
    per_line = np.minimum(strength / ref, 1.0).reshape(2 * (n + 1), -1).mean(axis=1)
    return float(per_line.sum()), ref


def _fit_registered(feat: np.ndarray, K: np.ndarray, rvec: np.ndarray, tvec: np.ndarray, n: int, s: float,
                    cell_px: float, ref: float) -> tuple[np.ndarray, np.ndarray, float]:
    """:func:`_fit_grid`, then guard against the grid's periodicity: a fit one space
    off still puts n of its n+1 lines on steps, so the pose shifted by a space each way
    is scored too (its extra line falls on the smooth table) and the best is refitted."""
    rv, tv, _ = _fit_grid(feat, K, rvec, tvec, n, s, cell_px)
    best, _ = _line_strength(feat, K, rv, tv, n, s, ref)
    for _ in range(3):
        R = cv2.Rodrigues(rv)[0]
        moves = []
        for dx, dy in ((1, 0), (-1, 0), (0, 1), (0, -1)):
            t2 = tv + R @ np.array([dx * s, dy * s, 0.0])
            sc, _ = _line_strength(feat, K, rv, t2, n, s, ref)
            moves.append((sc, t2))
        sc, t2 = max(moves, key=lambda m: m[0])
        if sc <= best + 0.3:
            break
        rv, tv, _ = _fit_grid(feat, K, rv, t2, n, s, cell_px, coarse=False)
        best, _ = _line_strength(feat, K, rv, tv, n, s, ref)
    return rv, tv, best / (2 * (n + 1))


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


def _find_outline(und: np.ndarray, dist: np.ndarray, quad: np.ndarray, side_px: float) -> tuple[np.ndarray, float, float]:
    """Corners of a board with a plain rim (Blockers!): its four outer edges."""
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
    return min(candidates, key=lambda r: r[1] / max(r[2], 1e-3))


def _find_grid(und: np.ndarray, quad: np.ndarray, contour: np.ndarray, outline: np.ndarray, kit: Kit, game: str,
               K: np.ndarray, side_px: float) -> tuple[np.ndarray, float, float]:
    """Corners of a board whose spaces run to its edge (Blox): the whole grid of
    n+1 by n+1 lines is fitted, from several rough outlines, and the best-scoring fit
    wins. Returns corners, a nominal residual and the fraction of grid lines found."""
    rng = np.random.default_rng(0)
    starts = [quad]
    try:
        starts.append(_straight_sides(contour, quad, rng))
    except (BoardNotFound, np.linalg.LinAlgError):
        pass
    starts += _chroma_quads(und, rng)
    n, sp = kit.grid(game)  # type: ignore[misc]
    feat = _grid_feature(und)
    ref = _step_reference(feat, quad)
    best: tuple[np.ndarray, np.ndarray, float] | None = None
    tried: list[np.ndarray] = []
    for q in starts:
        if any(np.max(np.linalg.norm(q - t, axis=1)) < 2.0 for t in tried):
            continue  # the same start twice converges the same way
        tried.append(q)
        ok, rv, tv = cv2.solvePnP(outline, q.reshape(-1, 1, 2), K, None, flags=cv2.SOLVEPNP_IPPE)
        if not ok:
            continue
        try:
            fit = _fit_registered(feat, K, rv, tv, n, sp, side_px / n, ref)
        except (BoardNotFound, np.linalg.LinAlgError):
            continue
        if best is None or fit[2] > best[2]:
            best = fit
        if best[2] > 0.7:
            # Most lines sit on their steps, and no space-shifted grid does better: a
            # wrong start converges far lower (a warped or shifted grid misses lines).
            break
    if best is None:
        raise BoardNotFound("the board's grid could not be fitted")
    rv, tv, score = best
    corners = cv2.projectPoints(outline, rv, tv, K, np.zeros(5))[0].reshape(-1, 2)
    return corners, 0.3, float(np.clip(score / 0.8, 0.0, 1.0))


def find_board(image: np.ndarray, kit: Kit, game: str, intr: Intrinsics) -> tuple[BoardPose, np.ndarray]:
    """Pose of the board found without markers, and the grid's corners in the image
    (far-left first, clockwise). Raises :class:`BoardNotFound`."""
    outline, rim = _outline_mm(kit, game)
    K, D = intr.K, intr.D
    # Undistorted so that lines are straight; the border replicated (not black, as
    # cv2.undistort leaves it) so the frame's edge draws no outline of its own.
    H, W = image.shape[:2]
    mx, my = cv2.initUndistortRectifyMap(K, D, None, K, (W, H), cv2.CV_16SC2)
    und = cv2.remap(image, mx, my, cv2.INTER_LINEAR, borderMode=cv2.BORDER_REPLICATE)
    dist, spread = _distance_map(und)
    contours: list = []
    quad = _initial_quad(dist, spread, contours)
    side_px = float(np.mean(np.linalg.norm(quad - np.roll(quad, 1, axis=0), axis=1)))
    if rim == 0:
        corners, resid, frac = _find_grid(und, quad, contours[0], outline, kit, game, K, side_px)
    else:
        corners, resid, frac = _find_outline(und, dist, quad, side_px)
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
    problem = implausible(pose, kit, outline)
    if problem:
        raise BoardNotFound(f"the outline's pose is impossible: {problem}")
    grid_corners = pose.project(kit.area_corners(game), intr)
    return pose, grid_corners


def implausible(pose: BoardPose, kit: Kit, outline: np.ndarray) -> str | None:
    """Why ``pose`` cannot be the camera's view of the board's ``outline`` (board mm),
    or None. An arm or a hand across the board has an outline too, and the fit to it
    may put the board behind the camera and still project its corners onto the
    quadrilateral found (the Blox bench's held-out draw 13,100,000, a hand over the
    board: a pose 56 m away, which the recogniser then tried to read). The camera must
    be above the board and in front of every corner, and no higher than twice the
    kit's highest mount (table-kit.md: 500 to 900 mm): generous bounds, for mounts a
    little outside the kit's range, that only rule out what no table shows."""
    R = pose.R
    t = np.asarray(pose.tvec, float).reshape(3)
    depth = (np.asarray(outline, float) @ R.T + t)[:, 2]
    if np.any(depth <= 0):
        return "part of the board lies behind the camera"
    camera = -R.T @ t
    height = -float(camera[2])  # z points down into the table
    if height <= 0:
        return "the camera is below the table"
    if height > 2 * kit.camera.height_mm[1]:
        return f"the camera would be {height:.0f} mm above the board (kit: at most {kit.camera.height_mm[1]:.0f})"
    return None
