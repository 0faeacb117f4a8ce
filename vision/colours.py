"""Colours against the survey: per-frame white balance and light field, CIELAB classification.

Recognition never compares pixels with fixed RGB values. The calibration's colour
survey (:mod:`calibration.survey`) gives, in a white-balanced ("survey-normalised")
linear RGB space, the reference colour of every board space and of the pieces. A frame
is taken under whatever light the table has now, so :meth:`ColourModel.balance` fits,
from board points whose expected colour is known (the spaces), a per-channel gain
``G`` and a smooth light field ``I(x, y)`` (a quadratic in board mm, for lamps at one
side and light fall-off): ``observed_linear = expected_linear * G * I(x, y)``. The fit
is robust (iteratively reweighted, outliers such as pieces, hands and shadows get no
weight), so it can use every space of a busy board.

:meth:`FrameBalance.normalise` undoes ``G * I`` at given board positions, after which
colours are comparable with the survey references in CIELAB (``lab``) and classified
by :meth:`ColourModel.classify`, which returns the nearest reference and a
distance-based confidence: ``exp(-d1^2/2s^2) / sum_i exp(-di^2/2s^2)`` over the
candidates (``s`` = :data:`SIGMA_DE`), so two near references give a low confidence
instead of a silent choice.

Colour names are the kit's names; reference keys follow the survey: ``space:<name>``
for board colours, ``block:<name>``, ``figure:<name>``, ``chip``, and for games without
a board the survey's piece names as they are.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from calibration.colour import linear_to_lab, srgb_lut

SIGMA_DE = 7.0  # colour distance scale (CIELAB units) of the classification confidence
LINEAR_LUT = srgb_lut()  # sRGB byte -> linear light, float32
_M_RGB_TO_XYZ = np.array(
    [[0.4124564, 0.3575761, 0.1804375], [0.2126729, 0.7151522, 0.0721750], [0.0193339, 0.1191920, 0.9503041]]
)
_WHITE = _M_RGB_TO_XYZ.sum(axis=1)
_LUMA = _M_RGB_TO_XYZ[1]


def bgr_to_linear(bgr: np.ndarray) -> np.ndarray:
    """BGR samples (..., 3), 0..255 (uint8 or float from bilinear sampling) -> linear RGB float32."""
    a = np.asarray(bgr)
    if a.dtype == np.uint8:
        lin = LINEAR_LUT[a]
    else:
        c = np.clip(a.astype(np.float32), 0, 255) / np.float32(255.0)
        lin = np.where(c <= 0.04045, c / np.float32(12.92), ((c + np.float32(0.055)) / np.float32(1.055)) ** np.float32(2.4))
    return np.ascontiguousarray(lin[..., ::-1]).astype(np.float32)


_M_LAB = (_M_RGB_TO_XYZ / _WHITE[:, None]).T.astype(np.float32)


def lab(lin_rgb: np.ndarray) -> np.ndarray:
    """Linear RGB (..., 3) -> CIELAB (D65), the formulas of :mod:`calibration.colour` in float32."""
    xyz = np.asarray(lin_rgb, np.float32) @ _M_LAB
    eps = np.float32((6 / 29) ** 3)
    f = np.cbrt(np.maximum(xyz, eps))
    # The linear segment near black, only where it applies (seldom: dark pixels).
    low = ~(xyz > eps)
    if low.any():
        f[low] = xyz[low] * np.float32(1 / (3 * (6 / 29) ** 2)) + np.float32(4 / 29)
    out = np.empty(f.shape, np.float32)
    out[..., 0] = 116 * f[..., 1] - 16
    out[..., 1] = 500 * (f[..., 0] - f[..., 1])
    out[..., 2] = 200 * (f[..., 1] - f[..., 2])
    return out


def lab_to_linear(lab_values: np.ndarray) -> np.ndarray:
    """CIELAB (D65) -> linear RGB (the inverse of :func:`lab`)."""
    L, a, b = np.moveaxis(np.asarray(lab_values, np.float64), -1, 0)
    fy = (L + 16) / 116
    fx = fy + a / 500
    fz = fy - b / 200
    d = 6 / 29

    def finv(f: np.ndarray) -> np.ndarray:
        return np.where(f > d, f ** 3, 3 * d * d * (f - 4 / 29))

    xyz = np.stack([finv(fx), finv(fy), finv(fz)], axis=-1) * _WHITE
    return np.clip(xyz @ np.linalg.inv(_M_RGB_TO_XYZ).T, 0.0, None)


def luminance(lin_rgb: np.ndarray) -> np.ndarray:
    return np.asarray(lin_rgb) @ _LUMA


def chromaticity(lin_rgb: np.ndarray) -> np.ndarray:
    """(r, g, b) / (r + g + b): unchanged by light level and shading, only by light colour."""
    a = np.asarray(lin_rgb, np.float32)
    return a / np.maximum(a.sum(axis=-1, keepdims=True), np.float32(1e-6))


def segment_distance(p: np.ndarray, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Distance of each point of ``p`` (N, 3) from the segment a-b: for chromaticities,
    how far a colour is from every mix of colours ``a`` and ``b`` (two prints meeting
    at an edge, or a colour whitened by glare toward neutral)."""
    ab = np.asarray(b, np.float64) - a
    t = np.clip(((p - a) @ ab) / max(float(ab @ ab), 1e-12), 0, 1)
    return np.linalg.norm(p - (a + t[:, None] * ab), axis=1)


@dataclass
class FrameBalance:
    """This frame's light relative to the survey: channel gains and a quadratic light field."""

    gains: np.ndarray  # (3,)
    coef: np.ndarray  # (6,) log light field in 1, x, y, x^2, xy, y^2 (board coordinates / scale)
    scale: float  # board mm per unit of the polynomial's coordinates
    inliers: float  # fraction of the fitting points that agreed (low: hands, a wrong pose, a dark frame)
    residual: float  # robust spread of the fit in log units

    def field(self, xy: np.ndarray) -> np.ndarray:
        xy = np.asarray(xy, np.float64).reshape(-1, 2) / self.scale
        x, y = xy[:, 0], xy[:, 1]
        basis = np.stack([np.ones_like(x), x, y, x * x, x * y, y * y], axis=1)
        return np.exp(basis @ self.coef)

    def normalise(self, lin: np.ndarray, xy: np.ndarray) -> np.ndarray:
        """Observed linear RGB at board points ``xy`` (N,2) -> survey-normalised linear RGB."""
        f = self.field(xy).astype(np.float32)
        return np.asarray(lin, np.float32) / (self.gains.astype(np.float32)[None, :] * f[:, None])

    @staticmethod
    def identity(gains: np.ndarray) -> "FrameBalance":
        return FrameBalance(np.asarray(gains, float), np.zeros(6), 100.0, 1.0, 0.0)


class ColourModel:
    """The survey's references and the per-frame balance against them.

    ``refs`` maps reference keys (see the module docstring) to CIELAB; ``ref_lin`` to
    survey-normalised linear RGB. For Blox, ``space_names`` (n, n) and ``space_lin``
    (n, n, 3) give each surveyed space."""

    def __init__(self, survey: dict[str, Any]) -> None:
        if not survey or "white_balance" not in survey:
            raise ValueError("the calibration has no colour survey: run `bloxcam calibrate board FRAME` first")
        self.survey = survey
        self.survey_gains = np.array(survey["white_balance"]["gains"], float)
        self.refs: dict[str, np.ndarray] = {}
        for name, lab_v in (survey.get("colors") or {}).items():
            self.refs[f"space:{name}"] = np.array(lab_v, float)
        for name, entry in (survey.get("pieces") or {}).items():
            if entry and entry.get("lab") is not None:
                self.refs[name] = np.array(entry["lab"], float)
        self.ref_lin = {k: lab_to_linear(v) for k, v in self.refs.items()}
        spaces = survey.get("spaces")
        self.space_names: list[list[str]] | None = spaces["names"] if spaces else None
        self.space_lab = np.array(spaces["lab"], float) if spaces else None
        self.space_lin = lab_to_linear(self.space_lab) if spaces else None

    # ----------------------------------------------------------------- balance
    def balance(self, observed_lin: np.ndarray, expected_lin: np.ndarray, xy: np.ndarray, *,
                iterations: int = 4, scale: float = 100.0, seek_mode: bool = False,
                prior: FrameBalance | None = None) -> FrameBalance:
        """Fit ``observed = expected * G * I(xy)`` robustly (see the module docstring).

        ``observed_lin``/``expected_lin`` (N,3) linear RGB, ``xy`` (N,2) board mm.
        Points darker than a tenth of the brightest expected colour carry little
        signal (noise, JPEG) and are left out.

        The plain fit starts from medians, so it holds while at least half the points
        show the board. With ``seek_mode`` (points of several expected colours, such
        as a Blox board's spaces) it starts instead from the largest set of points that
        agree on one light: an arm covering most of the board gives each space colour
        its own ratio (skin over white, over grey, over black), while the board that
        is still visible agrees across all colours. ``prior`` (the balance of a recent
        frame) is one more candidate start, preferred when it explains nearly as many
        points: the light seldom changes between frames, a hand often does."""
        obs = np.asarray(observed_lin, np.float64).reshape(-1, 3)
        exp_ = np.asarray(expected_lin, np.float64).reshape(-1, 3)
        xy = np.asarray(xy, np.float64).reshape(-1, 2)
        ok = np.isfinite(obs).all(axis=1) & (luminance(exp_) > 0.1 * max(float(luminance(exp_).max()), 1e-6))
        ok &= (obs > 1e-4).all(axis=1)
        obs, exp_, xy = obs[ok], exp_[ok], xy[ok]
        if len(obs) < 8:
            return FrameBalance.identity(1.0 / self.survey_gains)
        lr = np.log(obs) - np.log(np.maximum(exp_, 1e-5))  # (N,3) log ratio per channel
        lum = lr.mean(axis=1)
        chan = lr - lum[:, None]  # colour of the light, up to a level
        x, y = xy[:, 0] / scale, xy[:, 1] / scale
        basis = np.stack([np.ones_like(x), x, y, x * x, x * y, y * y], axis=1)
        # Start from medians (robust to up to half the points being pieces or hands),
        # then alternate: weights from residuals, weighted least squares.
        coef = np.zeros(6)
        coef[0] = float(np.median(lum))
        cg = np.median(chan, axis=0)
        start: np.ndarray | None = None
        if seek_mode or prior is not None:
            elum = np.log(np.maximum(luminance(exp_), 1e-6))
            coef, cg, start = _mode_start(lum, chan, basis, coef, cg, seek_mode, prior, scale, elum)
        w = np.ones(len(lum))
        sigma = 0.1
        for it in range(iterations + 1):
            res = np.sqrt((lum - basis @ coef) ** 2 + np.sum((chan - cg) ** 2, axis=1))
            if it == 0 and start is not None and start.sum() >= 8:
                ref = res[start]
            else:
                ref = res if it == 0 else res[w > 0.5] if np.any(w > 0.5) else res
            sigma = max(1.4826 * float(np.median(ref)), 0.03)
            # Tukey's biweight: points beyond 4 sigma (pieces, hands) get no weight.
            u = res / (4.0 * sigma)
            w = np.where(u < 1, (1 - u * u) ** 2, 0.0)
            if it == iterations:
                break
            sw = np.sqrt(w)
            # A little ridge keeps the quadratic tame where few points are inliers.
            A = np.vstack([basis * sw[:, None], np.diag([0, 0.05, 0.05, 0.2, 0.2, 0.2])])
            bvec = np.concatenate([lum * sw, np.zeros(6)])
            coef = np.linalg.lstsq(A, bvec, rcond=None)[0]
            cg = np.sum(chan * w[:, None], axis=0) / max(w.sum(), 1e-9)
        gains = np.exp(cg)
        gains = gains / np.exp(np.mean(np.log(gains)))  # level lives in the field
        return FrameBalance(gains, coef, scale, float(np.mean(w > 0.3)), sigma)

    # ---------------------------------------------------------------- classify
    def lab_of(self, lin_norm: np.ndarray) -> np.ndarray:
        return lab(lin_norm)

    def classify(self, lab_values: np.ndarray, keys: list[str], *, sigma: float = SIGMA_DE,
                 lightness_weight: float = 1.0) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Nearest reference among ``keys`` for each colour (N,3) CIELAB.

        Returns (index into keys (N,), confidence (N,), distances (N, len(keys))).
        ``lightness_weight`` < 1 lets shading (which mostly changes L) matter less."""
        labs = np.asarray(lab_values, float).reshape(-1, 3)
        refs = np.array([self.refs[k] for k in keys], float)
        wts = np.array([lightness_weight, 1.0, 1.0])
        d = np.sqrt((((labs[:, None, :] - refs[None, :, :]) * wts) ** 2).sum(axis=2))
        idx = np.argmin(d, axis=1)
        conf = confidence_from_distances(d, sigma)
        return idx, conf, d


#: a point agrees with a candidate light when its log level is this close (a light
#: field across the board is not modelled by a constant candidate: loose) ...
MODE_LEVEL_TOL = 0.3
#: ... and its log colour ratio this close (the light's colour is the same everywhere: tight)
MODE_CHROMA_TOL = 0.07
#: single points whose own light is tried as a start (spread over the board)
MODE_SEEDS = 32
#: a start (the prior, else the median) that this share of the points agrees with is taken at once
MODE_EASY_SHARE = 0.6
#: the prior (a recent frame's balance) wins unless another start explains this many times more points ...
PRIOR_PREFERENCE = 1.3
#: ... and at least this share of all points (a new light agrees almost everywhere; an arm
#: over one space colour agrees only on that colour's share of the board)
MODE_MIN_SHARE = 0.45
#: a start whose agreeing points are all of one expected colour (log luminance range
#: below this) is probably something uniform lying over that colour: its count is cut
#: by MODE_ONE_COLOUR_FACTOR (any start that several colours agree with goes first)
MODE_COLOUR_RANGE = 0.5
MODE_ONE_COLOUR_FACTOR = 0.05


def _mode_start(lum: np.ndarray, chan: np.ndarray, basis: np.ndarray, coef: np.ndarray, cg: np.ndarray,
                seek: bool, prior: FrameBalance | None, scale: float, elum: np.ndarray
                ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The start of the robust fit that the most points agree with (see ``balance``):
    among the median start, a spread of single points' own lights and ``prior``.
    ``elum``: log luminance of each point's expected colour. Returns the start's
    (coef, log gains, agreeing points)."""
    n = len(lum)
    # Most frames: the median start (or the prior) already agrees with most points.
    quick = [(np.asarray(prior.coef, float), np.log(np.maximum(prior.gains, 1e-9)))] \
        if prior is not None and abs(prior.scale - scale) < 1e-9 else []
    quick.append((np.asarray(coef, float), np.asarray(cg, float)))
    for c0, g0 in quick:
        g0 = g0 - g0.mean()
        ok = (np.abs(lum - basis @ c0) < MODE_LEVEL_TOL) & (np.sqrt(np.sum((chan - g0) ** 2, axis=1)) < MODE_CHROMA_TOL)
        if ok.sum() >= MODE_EASY_SHARE * n:
            return c0, g0, ok
    coefs, logg, is_prior = [np.asarray(coef, float)], [np.asarray(cg, float)], [False]
    if seek:
        idx = np.linspace(0, n - 1, min(MODE_SEEDS, n)).astype(int)
        c = np.zeros((len(idx), 6))
        c[:, 0] = lum[idx]
        coefs += list(c)
        logg += list(chan[idx])
        is_prior += [False] * len(idx)
    if prior is not None and abs(prior.scale - scale) < 1e-9:
        pg = np.log(np.maximum(prior.gains, 1e-9))
        coefs.append(np.asarray(prior.coef, float))
        logg.append(pg - pg.mean())
        is_prior.append(True)
    C, G = np.array(coefs), np.array(logg)
    # Every candidate at once: (points, candidates) agreement.
    d_lum = np.abs(lum[:, None] - basis @ C.T)
    d_chan = np.sqrt(np.sum((chan[:, None, :] - G[None, :, :]) ** 2, axis=2))
    agree = (d_lum < MODE_LEVEL_TOL) & (d_chan < MODE_CHROMA_TOL)
    score = agree.sum(axis=0).astype(float)
    hi = np.where(agree, elum[:, None], -np.inf).max(axis=0)
    lo = np.where(agree, elum[:, None], np.inf).min(axis=0)
    score = np.where((score > 0) & (hi - lo < MODE_COLOUR_RANGE), MODE_ONE_COLOUR_FACTOR * score, score)
    j = int(np.argmax(score))
    if is_prior[-1]:
        k = len(is_prior) - 1
        if score[k] > 0 and not (score[j] > PRIOR_PREFERENCE * score[k] and score[j] >= MODE_MIN_SHARE * n):
            j = k
    c, g, sel = C[j], G[j], agree[:, j]
    if not is_prior[j] and j != 0 and sel.sum() >= 8:
        # A single point's light has no field: refit level and field on its agreeing points.
        A = np.vstack([basis[sel], np.diag([0, 0.05, 0.05, 0.2, 0.2, 0.2])])
        c = np.linalg.lstsq(A, np.concatenate([lum[sel], np.zeros(6)]), rcond=None)[0]
        g = chan[sel].mean(axis=0)
    agree = sel
    return np.asarray(c, float), np.asarray(g, float), agree


def confidence_from_distances(d: np.ndarray, sigma: float = SIGMA_DE) -> np.ndarray:
    """Posterior of the nearest candidate under equal priors and Gaussian noise of ``sigma``."""
    d = np.asarray(d, float)
    z = -(d - d.min(axis=-1, keepdims=True)) ** 2 / (2 * sigma * sigma)
    p = np.exp(z)
    return p.max(axis=-1) / p.sum(axis=-1)


def confidence_from_costs(costs: np.ndarray, temperature: float) -> np.ndarray:
    """Posterior of the lowest of several hypothesis costs (negative log-likelihoods scaled
    by ``temperature``), along the last axis."""
    c = np.asarray(costs, float)
    z = -(c - c.min(axis=-1, keepdims=True)) / max(temperature, 1e-9)
    p = np.exp(z)
    return p.max(axis=-1) / p.sum(axis=-1)


def centred_unit_rows(rows: np.ndarray) -> np.ndarray:
    """Rows minus their mean, scaled to unit length: the dot product of two such rows
    is their normalised correlation (template matching of shapes and glyphs)."""
    rows = rows - rows.mean(axis=1, keepdims=True)
    return rows / (np.linalg.norm(rows, axis=1, keepdims=True) + 1e-6)
