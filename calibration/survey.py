"""Colour survey: the reference colour of every space and piece, in CIELAB.

From one frame of the empty board and its pose, every space is sampled (median of a
lattice of points inside it, so tower marks and noise do not matter) in linear light.
White balance is normalised against the board's own white and grey spaces: per-channel
gains map them, in least squares, onto their nominal colours. Recognition later
classifies against these references after applying the same gains, never against
fixed RGB values.

The space colour names come from the edition's board map when given; otherwise the
spaces are clustered into as many groups as the kit has board colours and the groups
are named by the best match to the nominal colours (R-BLOX-14: the survey overrides
the default map). Pieces' references come from the board colours they share (Blox
blocks) or from the kit's nominal colours (figures, chips, tiles, cards), which live in
the same normalised space.
"""

from __future__ import annotations

import itertools
from typing import Any

import cv2
import numpy as np

from calibration.camera import Intrinsics
from calibration.colour import linear_to_lab, srgb_lut, srgb_to_linear
from calibration.kit import Kit
from calibration.pose import BoardPose

_LUT = srgb_lut()


class SurveyError(ValueError):
    """The frame cannot be surveyed (board not empty, colours not separable, ...)."""


def _sample(image: np.ndarray, pts_mm: np.ndarray, pose: BoardPose, intr: Intrinsics) -> np.ndarray:
    """Linear RGB at board points (N, 2) mm, bilinear."""
    pts = np.column_stack([pts_mm, np.zeros(len(pts_mm))])
    px = pose.project(pts, intr).astype(np.float32)
    H, W = image.shape[:2]
    if px[:, 0].min() < 0 or px[:, 1].min() < 0 or px[:, 0].max() > W - 1 or px[:, 1].max() > H - 1:
        raise SurveyError("part of the board is outside the frame")
    lin = cv2.LUT(image, np.repeat(_LUT[:, None], 3, axis=1).reshape(1, 256, 3))
    vals = cv2.remap(lin, px[:, 0].reshape(1, -1), px[:, 1].reshape(1, -1), cv2.INTER_LINEAR).reshape(-1, 3)
    return vals[:, ::-1].astype(np.float64)  # BGR -> RGB


def space_colours(image: np.ndarray, kit: Kit, game: str, pose: BoardPose, intr: Intrinsics) -> np.ndarray:
    """(n, n, 3) median linear RGB of each space, and (n, n) within-space spread."""
    grid = kit.grid(game)
    if grid is None:
        raise SurveyError(f"{game} has no board to survey")
    n, s = grid
    f = np.linspace(0.14, 0.86, 6)
    lat = np.array([(a, b) for a in f for b in f]) * s
    out = np.zeros((n, n, 3))
    for r in range(n):
        for c in range(n):
            vals = _sample(image, lat + [c * s, r * s], pose, intr)
            out[r, c] = np.median(vals, axis=0)
    return out


def _fit_gains(measured: np.ndarray, nominal: np.ndarray) -> np.ndarray:
    """Per-channel gains g minimising |g * measured - nominal|^2 (linear light)."""
    num = (measured * nominal).sum(axis=0)
    den = (measured * measured).sum(axis=0) + 1e-12
    return num / den


def _name_spaces(meas: np.ndarray, kit: Kit) -> list[list[str]]:
    names = list(kit.blox.colors)
    nominal = srgb_to_linear(np.array([kit.blox.colors[k] for k in names], float))
    n = meas.shape[0]
    flat = meas.reshape(-1, 3)
    feats = linear_to_lab(flat / max(flat.max(), 1e-6)).astype(np.float32)
    crit = (cv2.TERM_CRITERIA_EPS | cv2.TERM_CRITERIA_MAX_ITER, 50, 0.01)
    _, labels, _ = cv2.kmeans(feats, len(names), None, crit, 5, cv2.KMEANS_PP_CENTERS)
    labels = labels.ravel()
    centres = np.array([flat[labels == k].mean(axis=0) if np.any(labels == k) else np.zeros(3)
                        for k in range(len(names))])
    best, best_cost = None, np.inf
    for perm in itertools.permutations(range(len(names))):
        target = nominal[list(perm)]
        g = _fit_gains(centres, target)
        cost = float(np.sum((linear_to_lab(centres * g) - linear_to_lab(target)) ** 2))
        if cost < best_cost:
            best, best_cost = perm, cost
    assert best is not None
    return [[names[best[labels[r * n + c]]] for c in range(n)] for r in range(n)]


def survey(image: np.ndarray, kit: Kit, game: str, pose: BoardPose, intr: Intrinsics,
           board_names: list[list[str]] | None = None) -> dict[str, Any]:
    """The colour survey of an empty board frame (see the module docstring)."""
    out: dict[str, Any] = {"game": game}
    if game == "blox":
        meas = space_colours(image, kit, game, pose, intr)
        names = board_names or _name_spaces(meas, kit)
        n = kit.blox.spaces
        if len(names) != n or any(len(row) != n for row in names):
            raise SurveyError(f"the board colour map must be {n}x{n}")
        refs = [(r, c) for r in range(n) for c in range(n) if names[r][c] in ("white", "grey")]
        if len(refs) < 2:
            raise SurveyError("the board has no white or grey spaces to balance the light against")
        m = np.array([meas[r, c] for r, c in refs])
        nom = srgb_to_linear(np.array([kit.blox.colors[names[r][c]] for r, c in refs], float))
        gains = _fit_gains(m, nom)
        lab = linear_to_lab(meas * gains)
        # A space far from every other space of its name: a piece on the board, or a
        # wrong colour map; the survey needs the empty board.
        colours: dict[str, list[float]] = {}
        for name in kit.blox.colors:
            sel = np.array([[names[r][c] == name for c in range(n)] for r in range(n)])
            if sel.any():
                colours[name] = np.median(lab[sel], axis=0).tolist()
        odd = []
        for r in range(n):
            for c in range(n):
                d = float(np.linalg.norm(lab[r, c] - np.array(colours[names[r][c]])))
                if d > 20:
                    odd.append(f"[{r},{c}]")
        if len(odd) > 4:
            raise SurveyError(f"spaces {', '.join(odd[:8])} do not match their colour: is the board empty, "
                              "and is the colour map right?")
        out["spaces"] = {"names": names, "lab": np.round(lab, 2).tolist()}
        out["colors"] = {k: [round(v, 2) for v in val] for k, val in colours.items()}
        out["white_balance"] = {"gains": [float(g) for g in gains], "against": "board white and grey spaces"}
        pieces: dict[str, Any] = {}
        for name in kit.blox.colors:
            pieces[f"block:{name}"] = {"lab": out["colors"].get(name), "source": "board survey (same colours)"}
        for name, rgb in kit.blox.players.items():
            pieces[f"figure:{name}"] = {"lab": _nominal_lab(rgb), "source": "kit nominal"}
        pieces["chip"] = {"lab": _nominal_lab(kit.blox.chip.color), "source": "kit nominal"}
        out["pieces"] = pieces
        out["warnings"] = [f"space {o} differs from its colour by more than 20 dE" for o in odd]
        return out
    # Games without a board of named spaces: balance against the markers' white paper.
    paper = []
    q = kit.markers.quiet_zone_mm
    for corners in kit.marker_corners(game).values():
        x0, y0 = corners[:, 0].min(), corners[:, 1].min()
        s = kit.markers.size_mm
        paper += [(x0 - q / 2, y0 + s * t) for t in np.linspace(0.2, 0.8, 4)]
        paper += [(x0 + s * t, y0 - q / 2) for t in np.linspace(0.2, 0.8, 4)]
    m = _sample(image, np.array(paper), pose, intr)
    nom = np.tile(srgb_to_linear(np.array([240, 240, 236], float)), (len(m), 1))
    gains = _fit_gains(m, nom)
    out["white_balance"] = {"gains": [float(g) for g in gains], "against": "marker paper"}
    # Bloxx! dice are read from their print, not their colour: only the white balance matters.
    table = {"bloxo": {k: v for k, v in kit.bloxo.colors.items()}, "blockers": kit.blockers.colors,
             "blockout": kit.blockout.colors, "bloxx": {}}[game]
    out["pieces"] = {k: {"lab": _nominal_lab(v), "source": "kit nominal"} for k, v in table.items()}
    if game == "blockers":
        n, s = kit.grid(game)  # type: ignore[misc]
        meas = space_colours(image, kit, game, pose, intr)
        out["board"] = {"lab": np.round(np.median(linear_to_lab(meas * gains).reshape(-1, 3), axis=0), 2).tolist()}
    if game in ("blockers", "bloxo"):
        out["surround"] = surround(image, kit, game, pose, intr)
    out["warnings"] = []
    return out


# The table just outside the board, sampled on two lines along each side (between the
# corner markers, past the board's rim and printed labels), each point the mean of a
# small patch so that table grain and a slight pose error do not matter.
SURROUND_OFFSETS_MM = (30.0, 48.0)
SURROUND_STEP_MM = 12.0
SURROUND_PATCH_MM = 6.0


def surround_layout() -> dict[str, Any]:
    """Where :func:`surround` samples, as stored with its values: a later frame is
    compared with a survey only when it is sampled the same way."""
    return {"offsets_mm": list(SURROUND_OFFSETS_MM), "step_mm": SURROUND_STEP_MM, "patch_mm": SURROUND_PATCH_MM}


def surround_points(kit: Kit, game: str) -> tuple[np.ndarray, np.ndarray]:
    """Board-frame points (N, 2) mm around the play area, and for each (N, 3) ints:
    side (0 far, 1 right, 2 near, 3 left), line (0 inner, 1 outer), position along the
    side. The same order every time, so a survey's samples match a later frame's."""
    w, h = kit.area_mm(game)
    pts, where = [], []
    for side, length in enumerate((w, h, w, h)):
        along = np.arange(SURROUND_STEP_MM / 2, length, SURROUND_STEP_MM)
        for line, off in enumerate(SURROUND_OFFSETS_MM):
            for k, a in enumerate(along):
                p = {0: (a, -off), 1: (w + off, a), 2: (a, h + off), 3: (-off, a)}[side]
                pts.append(p)
                where.append((side, line, k))
    return np.array(pts, float), np.array(where, int)


def surround_patch(pts_mm: np.ndarray) -> np.ndarray:
    """The 3 x 3 patch of sample points round each point: (N * 9, 2), point-major."""
    d = SURROUND_PATCH_MM * np.array([(a, b) for a in (-1, 0, 1) for b in (-1, 0, 1)], float)
    return (np.asarray(pts_mm, float)[:, None, :] + d[None]).reshape(-1, 2)


def surround(image: np.ndarray, kit: Kit, game: str, pose: BoardPose, intr: Intrinsics) -> dict[str, Any]:
    """Linear RGB (not balanced) of the empty table round the board at
    :func:`surround_points`, ``null`` where outside the frame: what an arm reaching in
    over the board's edge is seen against (vision.surround)."""
    pts, _ = surround_points(kit, game)
    patch = surround_patch(pts)
    px = pose.project(np.column_stack([patch, np.zeros(len(patch))]), intr).astype(np.float32)
    H, W = image.shape[:2]
    inside = ((px[:, 0] >= 1) & (px[:, 1] >= 1) & (px[:, 0] <= W - 2) & (px[:, 1] <= H - 2)).reshape(-1, 9).all(axis=1)
    lin = cv2.LUT(image, np.repeat(_LUT[:, None], 3, axis=1).reshape(1, 256, 3))
    vals = cv2.remap(lin, px[:, 0].reshape(1, -1), px[:, 1].reshape(1, -1), cv2.INTER_LINEAR).reshape(-1, 9, 3)
    mean = vals.mean(axis=1)[:, ::-1]
    return {**surround_layout(), "lin": [[round(float(v), 5) for v in m] if ok else None for m, ok in zip(mean, inside)]}


def _nominal_lab(rgb: tuple) -> list[float]:
    return [round(float(v), 2) for v in linear_to_lab(srgb_to_linear(np.array(rgb, float)))]


def normalise(image_lin_rgb: np.ndarray, survey_data: dict[str, Any]) -> np.ndarray:
    """Apply the survey's white balance gains to linear RGB values."""
    return np.asarray(image_lin_rgb, float) * np.array(survey_data["white_balance"]["gains"])
