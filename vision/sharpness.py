"""How blurred a frame is, measured on the board's own edges, and a matching sharpening.

A camera out of focus (table-kit.md lists defocus among the conditions) mixes each pixel
with its neighbours: a Blox tower level seen edge-on is a band a few pixels tall, and blur
turns a black level between two white ones into grey. The board carries its own test
chart: the straight edges between spaces of different colours, where the pose says they
are. Across each such edge the image steps from one colour to the other; blur widens the
step. For a Gaussian blur of sigma s the 10-90% rise of an ideal step is 2.563 s, so the
median rise over the board's edges (pieces standing on some of them only add outliers)
measures the frame's blur, in pixels, whatever the lens, light or print: up to a sigma of
about 1.8 px (the slight defocus of table-kit.md); beyond it the profiles (+-5 px) no
longer reach both colours and it reads low (2.2 px as 2.0), so sharpens less, not more.

What is measured includes the camera's own softness (its lens, demosaicing, the pixel
grid: about ``BASE_SIGMA_PX`` on dev scenes in focus); the blur beyond it is what
:func:`sharpen_samples` undoes at the sampled points, as an unsharp mask of that sigma:
a sample plus ``amount`` times its difference from the frame blurred once more.
"""

from __future__ import annotations

from dataclasses import dataclass

import cv2
import numpy as np

#: the 10-90% rise of a step blurred by a Gaussian of sigma 1
RISE_PER_SIGMA = 2.563
#: profile samples across an edge, in pixels either side of it
PROFILE_HALF_PX = 5.0
PROFILE_STEP_PX = 0.5
#: a profile counts when its two sides differ by at least this much (grey levels, 0..255)
MIN_STEP = 25.0
#: at least this many edges must be measured for a figure
MIN_PROFILES = 12
#: the blur (sigma, px) of a frame in focus: what is measured beyond it is undone
BASE_SIGMA_PX = 0.6
#: below this sigma (px) of blur beyond the base nothing is sharpened
MIN_SHARPEN_SIGMA_PX = 0.7
#: unsharp-mask gain (dev scenes, defocus sigma 1.0-1.6 px: 1.5 read fewest errors of 1, 1.5, 3, 5)
SHARPEN_AMOUNT = 1.5


@dataclass
class EdgeProfiles:
    """Pixels (K, M, 2) of K profiles of M samples each across board edges."""

    px: np.ndarray
    offsets: np.ndarray  # (M,) signed distance (px) of each sample from the edge
    family: np.ndarray  # (K,) which of two edge directions each profile crosses (0 or 1)

    @property
    def count(self) -> int:
        return len(self.px)


def edge_profiles(centres: np.ndarray, directions: np.ndarray, family: np.ndarray) -> EdgeProfiles:
    """Profiles across edges at image points ``centres`` (K, 2), each along its unit
    ``directions`` row (K, 2) (the edge's normal in the image); ``family`` (K,) 0 or 1:
    the board's edge direction each crosses."""
    off = np.arange(-PROFILE_HALF_PX, PROFILE_HALF_PX + 1e-9, PROFILE_STEP_PX)
    c = np.asarray(centres, np.float64)
    d = np.asarray(directions, np.float64)
    px = c[:, None, :] + off[None, :, None] * d[:, None, :]
    return EdgeProfiles(px.astype(np.float32), off, np.asarray(family, np.int8))


def blur_sigma(frame_bgr: np.ndarray, profiles: EdgeProfiles) -> float | None:
    """The frame's blur (Gaussian sigma, px) from the rise across the edges of
    ``profiles``, or None when too few edges show a clean step (a hand, pieces)."""
    if profiles.count == 0:
        return None
    px = profiles.px
    h, w = frame_bgr.shape[:2]
    inside = (px[..., 0] >= 0).all(axis=1) & (px[..., 1] >= 0).all(axis=1) & \
        (px[..., 0] <= w - 1).all(axis=1) & (px[..., 1] <= h - 1).all(axis=1)
    if inside.sum() < MIN_PROFILES:
        return None
    pts = px[inside]
    samples = cv2.remap(frame_bgr, pts[..., 0], pts[..., 1], cv2.INTER_LINEAR).astype(np.float32)
    grey = samples @ np.array([0.114, 0.587, 0.299], np.float32)  # BGR
    lo = grey[:, :3].mean(axis=1)
    hi = grey[:, -3:].mean(axis=1)
    step = hi - lo
    ok = np.abs(step) >= MIN_STEP
    if ok.sum() < MIN_PROFILES:
        return None
    v = (grey[ok] - lo[ok, None]) / step[ok, None]
    # A clean step rises (nearly) monotonically; a piece or a hand across the edge does not.
    clean = np.all(np.diff(v, axis=1) > -0.15, axis=1)
    if clean.sum() < MIN_PROFILES:
        return None
    v = np.maximum.accumulate(v[clean], axis=1)
    off = profiles.offsets
    rises = _crossing(v, off, 0.9) - _crossing(v, off, 0.1)
    # Motion blurs along one direction, defocus along all: the edges of each family
    # (profiles.family: the board's two edge directions) are measured apart, and the
    # sharper family tells the defocus (a moving camera's smear is no Gaussian to undo).
    fam = profiles.family[inside][ok][clean]
    sig = [float(np.median(rises[fam == f])) / RISE_PER_SIGMA for f in (0, 1) if (fam == f).sum() >= MIN_PROFILES // 2]
    return min(sig) if sig else None


def _crossing(v: np.ndarray, x: np.ndarray, level: float) -> np.ndarray:
    """Where each row of ``v`` (non-decreasing, over positions ``x``) first reaches
    ``level``, interpolated linearly (``np.interp`` of every row at once)."""
    i = np.clip(np.argmax(v >= level, axis=1), 1, v.shape[1] - 1)
    rows = np.arange(len(v))
    v0, v1 = v[rows, i - 1], v[rows, i]
    frac = np.clip((level - v0) / np.maximum(v1 - v0, 1e-9), 0.0, 1.0)
    return x[i - 1] + frac * (x[i] - x[i - 1])


def extra_blur(sigma: float | None, base: float = BASE_SIGMA_PX) -> float:
    """The blur (sigma, px) beyond a frame in focus; 0 when unknown or within it."""
    if sigma is None or sigma <= base:
        return 0.0
    return float(np.sqrt(sigma * sigma - base * base))


def sharpen_samples(samples: np.ndarray, blurred: np.ndarray, amount: float = SHARPEN_AMOUNT) -> np.ndarray:
    """An unsharp mask at sampled points: ``samples`` (uint8) plus ``amount`` times their
    difference from ``blurred``, the same points of the frame blurred once more."""
    s = samples.astype(np.float32)
    out = s + np.float32(amount) * (s - blurred.astype(np.float32))
    return np.clip(np.rint(out), 0, 255).astype(np.uint8)
