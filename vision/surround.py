"""Arms reaching in over the board's edge, seen on the table just outside it.

A hand over the board is found by its colour against the board's and the pieces'
(:mod:`vision.hands`). Skin can lie close to a board's paper (pale skin over a cream
or pinkish print), and then nothing on the board gives the hand away. But an arm has
to come from the player: between the camera and the table it crosses the strip of
table round the board, and there it is compared with that same strip in the empty-board
calibration frame (the survey's ``surround``: two lines of points along each side,
:func:`calibration.survey.surround_points`), not with any colour model. The table may be
any colour or grain; only a change from the survey counts.

The light may differ from the survey's (level, colour, one side brighter): per channel,
the log ratio of each point to its survey value is fitted, robustly, as a plane over the
board frame; a point has *changed* when its residual, once its mean over the channels (a
shadow's or the light's level) is taken out, is over ``chroma_tol``, or its level is
off by more than ``level_tol``. An *arm* is a run of at least ``min_points``
neighbouring points along a side that changed on both lines (a crossing, not a crumb or
a grain of the table).

Something left on the table by the board (a cup, the tile bag) or a new shadow would
otherwise hold the game up for good: a change that stays exactly as it is for
``settle_s`` seconds (an arm is never that still) becomes part of the reference.

API: ``SurroundWatch(view, survey)`` (``enabled`` is False when the survey has no
``surround`` sampled as now, e.g. a calibration made before it existed); ``arms(frame_bgr, t)`` -> list
of :class:`Arm`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from calibration.colour import srgb_to_linear
from calibration.survey import surround_layout, surround_patch, surround_points
from vision.board import BoardView, sample

FLOOR = 2e-3  # linear light below which a ratio means nothing (black table, deep shadow)


@dataclass(frozen=True)
class Arm:
    """Where an arm crosses the strip round the board: ``side`` (0 far, 1 right, 2 near,
    3 left) and the stretch along it, board mm from the side's start."""

    side: int
    start_mm: float
    end_mm: float


class SurroundWatch:
    """Watch the survey's strip round the board for arms (see the module docstring)."""

    def __init__(self, view: BoardView, survey: dict[str, Any] | None, *, chroma_tol: float = 0.15,
                 level_tol: float = 0.6, min_points: int = 4, settle_s: float = 30.0,
                 settle_tol: float = 0.15) -> None:
        self.view = view
        self.settle_s = settle_s
        self.settle_tol = settle_tol
        self.chroma_tol = chroma_tol
        self.level_tol = level_tol
        self.min_points = min_points
        data = (survey or {}).get("surround")
        pts, where = surround_points(view.kit, view.game)
        # a survey sampled otherwise (made before the layout changed) is not compared
        layout = surround_layout()
        self.enabled = (bool(data) and all(data.get(k) == v for k, v in layout.items())
                        and len(data.get("lin", [])) == len(pts))
        self.points, self.where = pts, where
        if not self.enabled:
            return
        assert data is not None
        self.step_mm = float(layout["step_mm"])
        known = np.array([v is not None for v in data["lin"]])
        self.reference = np.array([v if v is not None else (1.0, 1.0, 1.0) for v in data["lin"]], float)
        self.known = known & (self.reference.min(axis=1) > FLOOR)
        self._patch = surround_patch(pts)
        self._px: np.ndarray | None = None
        self._version = -1
        self._held: tuple[float, np.ndarray, np.ndarray] | None = None  # since, changed, their values

    def _sample(self, frame_bgr: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Linear RGB at the survey points, and where it can be told (in the frame, lit)."""
        if self._px is None or self._version != self.view.version:
            self._px = self.view.project(self._patch)
            self._version = self.view.version
        vals = sample(frame_bgr, self._px).reshape(-1, 9, 3)
        seen = self.known & ~np.isnan(vals).any(axis=(1, 2))
        lin = srgb_to_linear(np.nan_to_num(vals)).mean(axis=1)[:, ::-1]
        return lin, seen & (lin.min(axis=1) > FLOOR)

    def changed(self, frame_bgr: np.ndarray) -> np.ndarray:
        """Per survey point, whether the table there looks other than in the survey
        (False where it cannot be told: outside the frame, too dark)."""
        return self._changed(*self._sample(frame_bgr))

    def _changed(self, lin: np.ndarray, seen: np.ndarray) -> np.ndarray:
        out = np.zeros(len(self.points), bool)
        if seen.sum() < 12:
            return out
        ratio = np.log(lin[seen]) - np.log(self.reference[seen])
        xy = self.points[seen] / 100.0
        basis = np.column_stack([np.ones(len(xy)), xy])
        use = np.ones(len(xy), bool)
        for _ in range(3):
            # the light as a plane per channel, fitted on the points that still look
            # like the survey (an arm is a minority of the strip)
            coef, *_ = np.linalg.lstsq(basis[use], ratio[use], rcond=None)
            resid = ratio - basis @ coef
            level = resid.mean(axis=1)
            chroma = np.linalg.norm(resid - level[:, None], axis=1)
            bad = (chroma > self.chroma_tol) | (np.abs(level) > self.level_tol)
            if (~bad).sum() < 12:
                break
            use = ~bad
        out[np.flatnonzero(seen)] = bad
        return out

    def arms(self, frame_bgr: np.ndarray, t: float) -> list[Arm]:
        """Runs of points along a side where both lines changed (see the module docstring)."""
        if not self.enabled:
            return []
        lin, seen = self._sample(frame_bgr)
        bad = self._changed(lin, seen)
        bad = self._settle(bad, lin, t)
        found = []
        for side in range(4):
            on = self.where[:, 0] == side
            inner = bad[on & (self.where[:, 1] == 0)]
            outer = bad[on & (self.where[:, 1] == 1)]
            both = inner & outer
            k = 0
            while k < len(both):
                if not both[k]:
                    k += 1
                    continue
                j = k
                while j < len(both) and both[j]:
                    j += 1
                if j - k >= self.min_points:
                    found.append(Arm(side, k * self.step_mm, j * self.step_mm))
                k = j
        return found

    def _settle(self, bad: np.ndarray, lin: np.ndarray, t: float) -> np.ndarray:
        """Take a change that has stayed exactly as it is for ``settle_s`` into the
        reference (see the module docstring); the changed points left."""
        if not bad.any():
            self._held = None
            return bad
        held = self._held
        same = (held is not None and np.array_equal(held[1], bad)
                and float(np.abs(np.log(lin[bad]) - np.log(held[2][bad])).max()) <= self.settle_tol)
        if not same:
            self._held = (t, bad.copy(), lin.copy())
            return bad
        assert held is not None
        if t - held[0] < self.settle_s:
            return bad
        self.reference[bad] = lin[bad]
        self._held = None
        return np.zeros_like(bad)
