"""Scene stability over time: motion on a low-resolution copy of the frame.

:class:`StabilityGate` keeps a small grey copy of the previous frame (about 160 px
wide, blurred, so sensor noise and JPEG blocks average out) and measures how much of
the watched region changed. The scene is *still* when the changed fraction stays
under ``max_changed``; :meth:`StabilityGate.update` reports ``stable`` only once the
scene has been still for ``stable_seconds`` without interruption *and* the caller says
nothing blocks it (a hand over the board). Any motion, or a blocked frame, restarts
the clock, so a frame is never stable right after a hand leaves.

The change threshold adapts to the camera's noise: it is a multiple of the median
absolute frame difference seen recently (still scenes show only noise there), with a
floor, so a noisy dim scene does not count as motion and a clean one still catches a
small piece being placed.

API: ``StabilityGate(stable_seconds=1.0, max_changed=0.002, width=160)``;
``update(frame_bgr_or_grey, t, roi=None, blocked=False, lores=None, consistent=False) -> Motion``;
``reset()``; :func:`lores_grey` makes the low-resolution copy (a camera's lores stream
may be passed directly instead).
"""

from __future__ import annotations

from dataclasses import dataclass

import cv2
import numpy as np


def lores_grey(frame: np.ndarray, width: int = 160) -> np.ndarray:
    """A small blurred grey copy of ``frame`` (BGR or grey), ``width`` px wide, float32."""
    g = frame if frame.ndim == 2 else cv2.cvtColor(frame, cv2.COLOR_BGR2GRAY)
    h = max(1, int(round(g.shape[0] * width / g.shape[1])))
    small = cv2.resize(g, (width, h), interpolation=cv2.INTER_AREA).astype(np.float32)
    return cv2.GaussianBlur(small, (3, 3), 0.8)


@dataclass
class Motion:
    moving: bool  # this frame differs from the previous one
    changed: float  # fraction of the watched low-res pixels that changed
    still_for: float  # seconds the scene has been still (0 while moving or blocked)
    stable: bool  # still for at least stable_seconds and not blocked


class StabilityGate:
    """``stable`` only after the scene has been still for ``stable_seconds``."""

    def __init__(self, stable_seconds: float = 1.0, *, max_changed: float = 0.002, width: int = 160,
                 floor: float = 4.0, noise_factor: float = 4.0, max_changed_consistent: float = 0.02,
                 max_blob_consistent: float = 0.002) -> None:
        if stable_seconds < 0:
            raise ValueError("stable_seconds must be >= 0")
        self.stable_seconds = float(stable_seconds)
        self.max_changed = max_changed
        self.max_changed_consistent = max_changed_consistent
        self.max_blob_consistent = max_blob_consistent
        self.width = width
        self.floor = floor
        self.noise_factor = noise_factor
        self.reset()

    def reset(self) -> None:
        self._prev: np.ndarray | None = None
        self._still_since: float | None = None
        self._noise = 1.0

    def update(self, frame: np.ndarray | None, t: float, *, roi: np.ndarray | None = None, blocked: bool = False,
               lores: np.ndarray | None = None, consistent: bool = False) -> Motion:
        """Feed one frame (or its low-res copy ``lores``) taken at ``t`` seconds.

        ``roi``: a boolean mask of the low-res image to watch (the board and what
        stands on it); ``blocked``: the caller saw a hand or lost the board;
        ``consistent``: the caller read exactly the same scene as in the previous
        frame. Then a moderate change (under ``max_changed_consistent``: pieces
        shivering on a wobbly table, a flicker of light) does not restart the clock,
        unless it is one solid region larger than ``max_blob_consistent`` of the watched
        area (an arm reaching in beside the board); a large one always does."""
        if lores is not None:
            small = lores_grey(lores, self.width) if lores.shape[1] != self.width or lores.ndim == 3 else lores.astype(np.float32)
        else:
            if frame is None:
                raise ValueError("give a frame or its low-resolution copy")
            small = lores_grey(frame, self.width)
        changed = 0.0
        moving = False
        if self._prev is not None and self._prev.shape == small.shape:
            diff = np.abs(small - self._prev)
            if roi is not None and roi.shape == diff.shape:
                vals = diff[roi]
            else:
                vals = diff.ravel()
            if vals.size:
                med = float(np.median(vals))
                thr = max(self.floor, self.noise_factor * max(self._noise, 0.25))
                changed = float(np.mean(vals > thr))
                moving = changed > (self.max_changed_consistent if consistent else self.max_changed)
                if consistent and not moving and changed > self.max_changed:
                    # Shivering pieces change thin scattered edges; an arm reaching in (still
                    # beside the board) changes one solid region: that is motion all the same.
                    moving = self._largest_blob(diff > thr, roi) > self.max_blob_consistent * vals.size
                if not moving:
                    # Track the noise level only on still frames.
                    self._noise = 0.8 * self._noise + 0.2 * max(med * 1.5, 0.25)
        elif self._prev is not None:
            moving = True  # the stream changed size
        self._prev = small
        if moving or blocked:
            self._still_since = None
        elif self._still_since is None:
            self._still_since = t
        still_for = 0.0 if self._still_since is None else max(0.0, t - self._still_since)
        stable = (not moving and not blocked and self._still_since is not None
                  and still_for + 1e-9 >= self.stable_seconds)
        return Motion(moving, changed, still_for, stable)

    @staticmethod
    def _largest_blob(changed: np.ndarray, roi: np.ndarray | None) -> int:
        """Pixels of the largest changed region after an opening (thin edges drop out)."""
        m = changed if roi is None or roi.shape != changed.shape else changed & roi
        m = cv2.morphologyEx(m.astype(np.uint8), cv2.MORPH_OPEN, np.ones((3, 3), np.uint8))
        count, _, stats, _ = cv2.connectedComponentsWithStats(m, connectivity=8)
        return int(stats[1:, cv2.CC_STAT_AREA].max()) if count > 1 else 0
