"""Block Out! stability detector: placed, counting, stood, fell (R-BLOCKOUT-3, R-BLOCKOUT-4).

The accelerometer under the base measures motion, not load, so the detector reads
signatures (all thresholds in :class:`StabilityConfig`):

- **motion level** ``S``: the RMS over the last ``window_s`` of the base's motion
  below ``lowpass_hz`` (the band of its rocking and bouncing on its soft feet),
  summed over the three axes, with the sensor's own noise variance removed. The
  settle level, over ``settle_window_s`` weighted by a raised cosine
  (``settle_taper``), is also the *definition* of settled used for ground truth
  (:func:`motion_level`), so a simulator and the detector agree on what "the stack
  has settled" means.
- **impacts**: the part of the signal above ``highpass_hz`` (table and base ringing
  after an impact), judged against the chip's own high-band noise ``sigma_hf``
  (measured during calibration, followed on quiet stretches). An impact's onset is a
  sample rising above ``new_impact_snr`` sigma_hf *and* above ``new_impact_ratio``
  times the envelope of the ring before it (its peaks over ``ring_window_s``): a
  ring decays and never climbs back out of its own envelope, whereas another block
  landing or a bounce adds energy above it. An impact whose ring reaches
  ``impact_snr`` sigma_hf (and ``impact_level``) is an *impulse*.

State machine:

``idle`` (stack resting or empty) --motion above ``active_level`` for
``place_confirm_s``, not the ringing of a knock--> ``placing``: emit **placed**
(t = onset of the motion: where S last rose above ``place_onset_level``). The placing
hand wobbles, so ``S`` stays up; when it drops below ``settle_level`` and stays there
``hold_s``, the hand has let go and the
stack settled: emit **counting** (t = the moment S crossed, the count's start,
R-BLOCKOUT-3; ``count_confirm_s`` after it; with ``settle_fit_s`` the crossing is then
re-taken on the base's free ring-down fitted to the samples around it, which the
sensor noise moves far less: :meth:`StabilityDetector._settle_fit`). ``count_s`` later
emit **stood**
(t = count start + 3.0 s).

**fell** in any state, at an impulse when either (a) the base was already moving
before it (``S`` over the ``precursor_s`` before the impulse above
``precursor_level``, or the tilt off the resting tilt by ``tilt_level``; these windows end
before the impact's onset): a stack tipping and unloading the base, then blocks landing;
or (b) another impact's onset follows within ``train_s``: a train of impacts (decided at
that onset), or the base rings longer than one impact can (its peak decayed at
``ring_tau_s``): blocks landing within each other's ring; or (c) a lone
impulse after which the resting tilt has moved by ``fall_tilt`` (``train_s`` later); or (d) an
impact that reaches ``base_hit_g`` within ``rise_s``: something landed on the base itself
(decided at that sample); or (e) while the hand is on the stack (placing, not yet
released; its tremor keeps the base moving, so (a) says nothing then), an impact that
reaches ``hand_impact_snr`` sigma_hf within ``rise_s``: a block knocked off and landing
(decided at that sample). The hand's own release is a load step over 10-30 ms whose
high band stays below that; a weaker impulse then is judged by (b)-(d). A lone impulse out of a still
base that leaves the tilt as it was is a knock on the table and changes nothing; an
elbow moves the tilt slowly without impulses and changes nothing. ``t`` of ``fell``
is the first impact; ``detected`` when the decision was made.

An optional camera hook, ``stack_height(t) -> float | None`` (blocks or mm; None =
not seen), confirms a fall: if the camera sees the stack no lower than before the
impulse, the fall is vetoed and treated as a knock.
"""

from __future__ import annotations

import dataclasses
import itertools
import math
from collections import deque
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable, Mapping, Sequence

import numpy as np

from device.accel import STANDARD_GRAVITY
from device.events import stability_event

COUNT_S = 3.0  # R-BLOCKOUT-3


@dataclass(frozen=True)
class StabilityConfig:
    """Every threshold of the detector. Accelerations in m/s^2, times in seconds.

    Defaults suit the kit (table-kit.md: base on soft feet, MPU-6050 or ADXL345 at
    400-500 Hz); they were tuned on simulated traces with seeds below 10 000 only.
    """

    rate_hz: float | None = None
    """Sample rate; None = inferred from the first samples' timestamps."""
    lowpass_hz: float = 50.0
    """Upper edge of the base's motion band (rocking 8-16 Hz, bounce 20-35 Hz)."""
    window_s: float = 0.1
    """RMS window of the activity level (about one period of the slowest rocking):
    short, so a knock's ringing leaves it quickly."""
    settle_window_s: float = 0.25
    """RMS window of the settle level S, longer so that the sensor noise moves the
    moment S crosses settle_level as little as possible."""
    settle_taper: float = 1.0
    """Shape of that window (:func:`settle_weights`): its n samples weigh
    ``1 - settle_taper * (1 + cos(2 pi (k + 1/2) / n)) / 2``, k = 0..n-1; 1 = Hann (the
    default), 0 = rectangular. Settled means the stack's wobble energy is below a level,
    which for a ring-down is its envelope, not where the window's edges happen to cut
    the wobble: a window that holds only 2-3 periods of the 9-15 Hz rocking and stops
    abruptly lets S sway at twice the mode's frequency, so its crossing jumps by up to
    ~20 ms with the ring's phase (a rectangular window), whereas weights that fade to zero at
    both ends leak almost nothing of that and S decays with the envelope. The truth and
    the detector use this same weighted S, its noise variance measured on the same
    weights."""
    settle_level: float = 0.20
    """S below this = settled (20 mg RMS; the noise floor alone is ~0.06-0.08, removed)."""
    hold_s: float = 0.2
    """Settled means S below settle_level from that moment on for at least this long
    (the definition of the settle time, R-BLOCKOUT-3; the simulator's truth uses it)."""
    count_confirm_s: float = 0.5
    """The detector emits counting only after S has stayed below settle_level this
    long (the ringing of an impulse excepted), so a lull of a wobbling hand that is
    still on the stack is not taken for its release; the count's start is back-dated
    to the crossing, so this delays only the decision, not the count."""
    settle_fit_s: float = 0.6
    """How far before the crossing's window the settle fit may reach back (0.6: back to
    the release on the kit); 0 = no fit: the count starts at the crossing of the noisy
    S. The fit takes the stood error within 10 ms from ~97% to 100% of counts on the
    development seeds 1000-1299 (its largest from 22 ms to 10 ms); it costs ~0.1 s of
    CPU at the confirmation (more on a Pi), so a live sensor is read on a thread of its
    own (service.runner.AccelRunner: the ADXL345's FIFO holds only 80 ms). After the
    hand lets go the base rings down freely, each axis a damped sinusoid about its new
    rest (table-kit.md: a base rocking and bouncing on soft feet), so the clean signal over the crossing's
    window is estimated by fitting one on each axis, its frequency and decay from the
    samples themselves, over the longest span back towards the release that the model
    explains (see settle_fit_resid), up to the data at confirmation; S is then
    recomputed on the fit. The ring is strongest just after the release, so the fit's
    amplitude at the window is better known than the window's own samples tell it."""
    settle_fit_step_s: float = 0.02
    """The fit's span grows back towards the release by this much at a time."""
    settle_fit_resid: float = 2.5
    """...as long as the fit's residual over the piece just added, mean square per axis
    relative to that axis's calibrated noise (low-passed), averaged over the axes, stays
    below this: the hand's tremor before its release, or a knock's ring, is not a free
    ring-down and stops the span there. The whole span's residual must also stay below
    it, else the crossing of the noisy S is kept."""
    settle_fit_guard_s: float = 0.04
    """The fitted crossing must lie within this of the noisy S's crossing (whose error is
    ~0.01-0.025 s at worst), else the latter is kept."""
    active_level: float = 0.25
    """S above this (while idle) may be a hand placing a block."""
    place_confirm_s: float = 0.20
    """...for this long in total (a knock's ringing dies sooner and is excluded; a
    hand stays), counting the time above active_level within one stretch of motion."""
    place_onset_level: float = 0.1
    """A placement's time (the hand's contact) is where the stretch of motion it confirms
    began: S above this (half settle_level, ~3x the noise-corrected S's scatter on a
    still base) without a break since. A gentle hand can hold S near active_level for
    most of a second before it confirms; the motion started with its touch."""
    place_gap_s: float = 0.0
    """Gap below active_level that ends a stretch of motion while idle. 0 = the time
    above must be continuous. (0.2 with active_level 0.2 catches a gentle hand that
    holds S in and out of 0.2-0.25, but took an elbow's push for a placement on the
    development seeds; left at 0.)"""
    count_s: float = COUNT_S
    """The count, R-BLOCKOUT-3."""
    highpass_hz: float = 70.0
    """Impulses are judged above this frequency, clear of the base's own modes."""
    impact_level: float = 0.5
    """Floor of the impulse trigger (m/s^2, high-passed magnitude), whatever the noise
    estimate says: a guard against a corrupt calibration, not the working level."""
    impact_snr: float = 8.0
    """An impulse (a knock, a landing) reaches this many times the high-band noise RMS
    ``sigma_hf`` (the 3-axis RMS above highpass_hz, measured on the chip itself, see
    hf_noise_rms). Both kit chips have sigma_hf ~0.09-0.10 (data-sheet floors), so
    this is ~0.75-0.8 there; a noisier chip or rate scales it."""
    new_impact_snr: float = 4.0
    """A new impact (another block, a bounce) rises above this many sigma_hf (a 3-axis
    noise magnitude exceeds 4 sigma_hf about once in 10^6 samples even with one axis
    dominant, the ADXL345's z; it matters only within train_s of an impulse)..."""
    new_impact_ratio: float = 2.0
    """...and above this many times the envelope of the ring before it (its peak over
    the last ring_window_s), added in quadrature to that floor. A ring decays: it never
    comes back above the peaks of its own last half-period, whatever its decay rate
    (4-20 ms, 1/e, on the kit; the rate is not assumed). The factor covers sampling a
    60-180 Hz ring at 400-500 Hz (a sampled peak can be ~0.7 of the true one), the
    beat of a knock's two tones and noise riding on the ring. Another block or a
    bounce adds fresh energy above it."""
    ring_window_s: float = 0.012
    """That window: half a period of the slowest ring the high band passes (60 Hz,
    8.3 ms) plus a sample, so it always holds one of the ring's peaks. It ends a
    sample before the one judged: an impact's ring builds up over a sample (the chip
    averages over its output period), so its rise is judged against the envelope from
    before it."""
    ring_noise_snr: float = 2.5
    """The envelope is that peak with this many sigma_hf removed in quadrature: about
    the largest of the noise's own magnitudes over the window's 5-6 samples, which
    would otherwise hold it up on a quiet base. (3.5 let a weak 60 Hz knock's tail plus
    a noise peak through on a hand-made ADXL345 trace; see the tests.)"""
    ring_tau_s: float = 0.02
    """The longest 1/e decay time of one impact's ring at the sensor (the kit's table and
    base ring 60-180 Hz and decay in 4-20 ms, device.tracesim). Within train_s of a lone
    impulse, the high band above new_impact_ratio times the impulse's peak decayed at this
    rate since (noise floor in quadrature) is more ring than one impact leaves: a fall
    (blocks landing one after another, each within the last one's ring, rise out of no
    windowed envelope but keep the base ringing). Development seeds: knocks (57, seeds
    1000-1069) reach at most 0.48 of that bound, squared; the two dense-train falls missed
    without it (seeds 1641, 1951) 2.0 and 9.6; no false fall over the 874 knocks of seeds
    1000-1499 and 3000-3499. 0 = off."""
    rise_s: float = 0.008
    """An impact's ring builds to its peak within this (half a period of the slowest,
    60 Hz, ring); samples within it of an onset belong to that impact."""
    hf_noise_rms: float | None = None
    """sigma_hf fixed by configuration; None = measured during calib_s, then followed
    on quiet stretches (noise_tau_s)."""
    hf_noise_min_rms: float = 0.03
    """sigma_hf is never taken below this (a third of the kit chips'): a calibration on
    a still, noiseless input (a replay padded with a constant reading) must not make
    every noise sample an impact."""
    noise_tau_s: float = 1.0
    """Time constant of the online sigma_hf estimate, updated only on quiet stretches
    (the base settled, samples below impact_level, no impulse for noise_guard_s); about
    400-500 samples, so ~5% scatter."""
    noise_guard_s: float = 0.2
    """...no impulse within this."""
    merge_s: float = 0.015
    """High band above new_impact_snr within this = still ringing (no placement is
    recognised and a fallen stack is not quiet during it)."""
    train_s: float = 0.6
    """Another impact (new_impact_snr / new_impact_ratio: a weaker bounce counts)
    within this time of an impulse makes a train of impacts: a fall."""
    precursor_s: float = 0.30
    """Window before an impulse in which base motion means the stack was going."""
    precursor_gap_s: float = 0.004
    """Samples this close before the impact's onset are excluded from the windows read
    before an impulse (precursor, departure): the impact's own rise. As an impulse is
    decided up to rise_s after its onset, those windows end rise_s + this before it
    (with only this, a weak knock whose first peak missed impact_snr put its own ring's
    start in the precursor window and was taken for a fall)."""
    precursor_level: float = 0.07
    """S over the precursor window above this = the base was moving."""
    tilt_level: float = 0.05
    """Resting tilt (low-passed x/y) moved by this before an impulse = stack tipping."""
    departure_window_s: float = 0.1
    """Window before an impulse searched for the departure signature: a block tipping
    and leaving moves the contact force on the base, so the base's tilt steps and it
    rings at its rocking/bounce modes just before its landing (device.tracesim)."""
    departure_ref_s: float = 0.4
    """Reference window before departure_window_s: the base as it rested."""
    departure_tilt: float = 0.045
    """Mean x/y over departure_window_s off the reference by this = the load moved
    (tilt step). Knocks out of a still base reach ~0.035 at the chips' noise floors."""
    departure_ring: float = 0.08
    """sqrt of the 3-axis variance over departure_window_s minus the reference's above
    this = the base rang before the impulse. Knocks out of a still base: ~0.045."""
    base_hit_g: float = 1.0
    """An impact whose ring reaches this (in g, high-band magnitude) within ``rise_s`` of
    its onset struck the base itself: a fall, decided at once. Something landing on
    the base (a block, 0.1-1 m/s) rings it at tens of m/s^2, while a knock on the table
    reaches the sensor through the base's soft feet, which pass little above their
    20-35 Hz bounce mode (the kit's knocks stay under ~0.7 g there, device.tracesim).
    A lighter landing is still caught by the train or the tilt rule, later."""
    hand_impact_snr: float = 10.0
    """While the hand is on the stack (placing, not yet released) an impulse is a fall
    only if its ring reaches this many sigma_hf within rise_s of its onset (decided at
    that sample; a weaker one is then judged as a lone impulse, rules b-d). The hand's
    own release takes its force off over 10-30 ms: a load step, whose share above
    highpass_hz is small and over within a couple of samples (~2 sigma_hf typically;
    8.7 at most on the development seeds, seed 1093: a base rocking hard under the
    tremor, released at the top of its swing), whereas a block knocked off and landing
    rings the base or table at 80-180 Hz for several cycles (the weakest first landing
    of a "hold" fall on those seeds, an 8.6 g block from 75 mm onto the table on the
    ADXL345, seed 1639, reaches 11.4 within rise_s). Midway between, in ratio."""
    fall_tilt: float = 0.04
    """Resting tilt moved by this after a lone impulse = blocks left the stack."""
    fall_quiet_s: float = 0.5
    """After a fall, S below settle_level this long before watching for placements."""
    height_lead_s: float = 0.15
    """The camera's stack height "before" a fall is read this long before the first
    impact, longer than most flights (70-200 ms from a raised support), so it sees
    the stack whole."""
    calib_s: float = 0.8
    """Initial still period used to measure the sensor's noise and the resting tilt."""
    stood_guard_s: float = 0.25
    """stood is emitted this long after the count ends (t is still the count's end),
    so a block that left just before the end but lands after it still counts as a
    fall (R-BLOCKOUT-3: a fall at any moment of the count)."""
    fall_lead_s: float = 0.03
    """Time taken, from a block leaving the stack to its first impact, when deciding
    whether it left before the count ended: a group toppling from the base lays its
    lowest block on the base within a few ms; one falling from higher up flies
    ~sqrt(2 h / g), 70-200 ms. The short figure errs towards "stood, then fell"."""
    noise_var: float | None = None
    """Total (3-axis) low-passed noise variance, used for every window; None =
    measured during calib_s, per window."""

    def __post_init__(self) -> None:
        if not 0.0 <= self.settle_taper <= 1.0:
            raise ValueError(f"settle_taper must be between 0 and 1, not {self.settle_taper!r}")

    def with_overrides(self, values: Mapping[str, Any]) -> StabilityConfig:
        """This configuration with some fields replaced (a table's [stability] section,
        ``bloxcam stability --set``). Every value must be a finite number >= 0 (rate_hz
        above 0), or None for a field that is measured when None. Raises ValueError
        naming the field."""
        fields = {f.name: f for f in dataclasses.fields(self)}
        clean: dict[str, float | None] = {}
        for name, value in values.items():
            if name not in fields:
                raise ValueError(f"unknown threshold {name!r}; expected one of {', '.join(sorted(fields))}")
            if value is None and fields[name].default is None:
                clean[name] = None
                continue
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value < 0:
                raise ValueError(f"{name} must be a number >= 0, not {value!r}")
            if name == "rate_hz" and value == 0:
                raise ValueError("rate_hz must be above 0 (leave it out to infer it)")
            clean[name] = float(value)
        return dataclasses.replace(self, **clean)

    def with_settings(self, pairs: Iterable[str]) -> StabilityConfig:
        """This configuration with ``NAME=VALUE`` settings applied (``--set`` of
        ``bloxcam stability`` and of bench/stability.py): VALUE a number, or ``none``
        for a field that is measured when None. Raises ValueError saying which."""
        values: dict[str, float | None] = {}
        for pair in pairs:
            name, sep, value = pair.partition("=")
            if not sep:
                raise ValueError(f"--set wants NAME=VALUE, not {pair!r}")
            try:
                values[name] = None if value.lower() == "none" else float(value)
            except ValueError:
                raise ValueError(f"--set {name}: {value!r} is not a number") from None
        try:
            return self.with_overrides(values)
        except ValueError as exc:
            raise ValueError(f"--set NAME=VALUE: {exc}") from None


# ---------------------------------------------------------------------------------
# Filters (second-order Butterworth sections by the bilinear transform).


def _butter2(fc: float, fs: float, kind: str) -> tuple[tuple[float, float, float], tuple[float, float]]:
    k = math.tan(math.pi * min(fc, 0.45 * fs) / fs)
    q = math.sqrt(2.0)
    norm = 1.0 / (1.0 + q * k + k * k)
    if kind == "low":
        b = (k * k * norm, 2 * k * k * norm, k * k * norm)
    else:
        b = (norm, -2 * norm, norm)
    a = (2 * (k * k - 1) * norm, (1 - q * k + k * k) * norm)
    return b, a


class Biquad:
    """A second-order section over 3-vectors, one sample at a time."""

    def __init__(self, fc: float, fs: float, kind: str) -> None:
        (self.b0, self.b1, self.b2), (self.a1, self.a2) = _butter2(fc, fs, kind)
        self.x1 = self.x2 = self.y1 = self.y2 = None  # type: ignore[assignment]

    def reset(self, x: Sequence[float]) -> None:
        """Start at rest on ``x`` (no start-up transient)."""
        x = list(x)
        dc = (self.b0 + self.b1 + self.b2) / (1 + self.a1 + self.a2)
        self.x1 = list(x)
        self.x2 = list(x)
        self.y1 = [v * dc for v in x]
        self.y2 = [v * dc for v in x]

    def __call__(self, x: Sequence[float]) -> list[float]:
        if self.x1 is None:
            self.reset(x)
        y = [
            self.b0 * x[i] + self.b1 * self.x1[i] + self.b2 * self.x2[i] - self.a1 * self.y1[i] - self.a2 * self.y2[i]
            for i in range(3)
        ]
        self.x2, self.x1 = self.x1, list(x)
        self.y2, self.y1 = self.y1, y
        return y


def settle_weights(n: int, taper: float) -> np.ndarray:
    """The settle window's weights over its ``n`` samples, oldest first, summing to 1:
    a raised cosine of depth ``taper`` (StabilityConfig.settle_taper; 1 = Hann sampled
    at the samples' midpoints, so every sample is still weighed; 0 = rectangular)."""
    a, b, phase = _settle_shape(n, taper)
    return (a - b * np.cos(2 * math.pi * np.arange(n) / n + phase)) / (n * a)


def _settle_shape(n: int, taper: float) -> tuple[float, float, float]:
    """The settle window's weight of sample k (oldest 0) is ``a - b cos(2 pi k / n + phase)``
    before normalisation (they sum to ``n a``): a constant plus one harmonic of the
    window, which lets a running window slide it (:class:`_WeightedWindow`)."""
    return 1.0 - taper / 2, taper / 2, math.pi / n


def settle_window(rate_hz: float, cfg: StabilityConfig) -> np.ndarray:
    """The settle window's weights at ``rate_hz`` (settle_window_s, settle_taper)."""
    return settle_weights(max(2, int(round(cfg.settle_window_s * rate_hz))), cfg.settle_taper)


def motion_level(acc: np.ndarray, rate_hz: float, cfg: StabilityConfig = StabilityConfig()) -> np.ndarray:
    """S(t) per sample: the ``lowpass_hz`` low-passed acceleration's RMS about its mean
    over the trailing ``settle_window_s``, both weighted by :func:`settle_window`, summed
    over axes (no noise correction). The reference definition of "settled"
    (S < settle_level): the stack's wobble energy, following a ring-down's envelope
    whatever its phase against the window."""
    acc = np.asarray(acc, dtype=float)
    lp = Biquad(cfg.lowpass_hz, rate_hz, "low")
    lp.reset(acc[0])
    out = np.empty_like(acc)
    for i in range(len(acc)):
        out[i] = lp(acc[i])
    return np.sqrt(np.maximum(_trailing_var(out, settle_window(rate_hz, cfg)), 0.0))


def _trailing_var(x: np.ndarray, w: np.ndarray) -> np.ndarray:
    """Per sample, the variance of (m, 3) ``x`` over the trailing ``len(w)`` samples
    about their mean, both weighted by ``w`` (oldest first; over the first samples,
    the window's newest weights), summed over axes."""
    x = x - x[0]
    m = len(x)
    kernel = w[::-1]
    weight = np.convolve(np.ones(m), kernel)[:m]
    var = np.zeros(m)
    for k in range(3):
        mean = np.convolve(x[:, k], kernel)[:m] / weight
        var += np.convolve(x[:, k] ** 2, kernel)[:m] / weight - mean * mean
    return var


# A free ring-down on one axis, s seconds from the start of the span:
#     c + exp(-a s) (p cos(w s) + q sin(w s))
# (c, p, q) are linear, solved exactly for any (a, w); (a, w) by Levenberg-Marquardt.


def _ring_linear(s: np.ndarray, a: float, w: float, y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    e = np.exp(-a * s)
    basis = np.column_stack([np.ones_like(s), e * np.cos(w * s), e * np.sin(w * s)])
    gram = basis.T @ basis
    lin = np.linalg.solve(gram + np.eye(3) * (1e-12 * np.trace(gram) + 1e-30), basis.T @ y)
    return lin, y - basis @ lin


def _ring_fit(y: np.ndarray, rate: float, w_max: float, start: tuple[float, float] | None = None,
              iters: int = 20) -> tuple[float, float, np.ndarray, np.ndarray]:
    """Least-squares damped sinusoid plus constant through ``y`` (one axis, sampled at
    ``rate`` from s = 0): ``(a, w, (c, p, q), residual)``, decay ``a >= 0`` (1/s),
    angular frequency ``0 <= w <= w_max``. ``start`` is a previous fit's ``(a, w)``;
    without it the search starts at the spectrum's peak with a few decay rates."""
    n = len(y)
    s = np.arange(n) / rate
    if start is None:
        spec = np.abs(np.fft.rfft(y - y.mean(), 8 * n))
        freq = np.fft.rfftfreq(8 * n, 1.0 / rate) * 2 * math.pi
        band = (freq > 0) & (freq <= w_max)
        w0 = float(freq[band][np.argmax(spec[band])])
        starts = [(a0, w0) for a0 in (3.0, 10.0, 30.0)]
    else:
        starts = [start]
    best: tuple[float, float, np.ndarray, np.ndarray] | None = None
    for a, w in starts:
        lin, r = _ring_linear(s, a, w, y)
        cost = float(r @ r)
        lam = 1e-3
        for _ in range(iters):
            e = np.exp(-a * s)
            cs, sn = np.cos(w * s), np.sin(w * s)
            _, p, q = lin
            ring = e * (p * cs + q * sn)
            jac = np.column_stack([np.ones(n), e * cs, e * sn, -s * ring, s * e * (q * cs - p * sn)])
            jtj = jac.T @ jac
            jtr = jac.T @ r
            damp = np.diag(np.diag(jtj) + 1e-12 * np.trace(jtj) + 1e-30)
            improved = False
            while lam < 1e8:
                step = np.linalg.solve(jtj + lam * damp, jtr)
                na, nw = max(0.0, a + float(step[3])), min(w_max, max(0.0, w + float(step[4])))
                nlin, nr = _ring_linear(s, na, nw, y)
                ncost = float(nr @ nr)
                if ncost < cost:
                    small = cost - ncost < 1e-7 * cost
                    a, w, lin, r, cost = na, nw, nlin, nr, ncost
                    lam = max(lam / 10, 1e-9)
                    improved = True
                    break
                lam *= 10
            if not improved or small:
                break
        if best is None or cost < float(best[3] @ best[3]):
            best = (a, w, lin, r)
    assert best is not None
    return best


def _ring_eval(fit: tuple[float, float, np.ndarray, np.ndarray], k: np.ndarray, rate: float) -> np.ndarray:
    a, w, (c, p, q), _ = fit
    s = k / rate
    e = np.exp(-a * s)
    return c + e * (p * np.cos(w * s) + q * np.sin(w * s))


# ---------------------------------------------------------------------------------


@dataclass
class _Window:
    """Running mean/variance of 3-vectors over the last n samples."""

    n: int
    buf: deque = field(default_factory=deque)
    s1: list[float] = field(default_factory=lambda: [0.0, 0.0, 0.0])
    s2: list[float] = field(default_factory=lambda: [0.0, 0.0, 0.0])
    ref: list[float] | None = None
    pushes: int = 0

    def push(self, x: Sequence[float]) -> None:
        if self.ref is None:
            self.ref = list(x)
        d = [x[i] - self.ref[i] for i in range(3)]
        self.buf.append(d)
        for i in range(3):
            self.s1[i] += d[i]
            self.s2[i] += d[i] * d[i]
        if len(self.buf) > self.n:
            o = self.buf.popleft()
            for i in range(3):
                self.s1[i] -= o[i]
                self.s2[i] -= o[i] * o[i]
        self.pushes += 1
        if self.pushes % 4096 == 0:  # shed floating-point drift
            self.s1 = [sum(v[i] for v in self.buf) for i in range(3)]
            self.s2 = [sum(v[i] * v[i] for v in self.buf) for i in range(3)]

    def var(self) -> float:
        m = len(self.buf)
        if m < 2:
            return 0.0
        return max(0.0, sum(self.s2[i] / m - (self.s1[i] / m) ** 2 for i in range(3)))

    def mean(self) -> list[float]:
        m = max(1, len(self.buf))
        assert self.ref is not None
        return [self.ref[i] + self.s1[i] / m for i in range(3)]


class _WeightedWindow:
    """Running variance of 3-vectors over the last n samples about their mean, both
    weighted by :func:`settle_weights` (the settle level S^2 of the samples), in constant
    time a sample: the weights are a constant plus one harmonic of the window, so the
    weighted sums are plain running sums plus running sums of ``x exp(2 pi i k / n)``,
    which slide by taking the oldest sample off, the newest on, and turning the phase
    back one step."""

    def __init__(self, n: int, taper: float) -> None:
        self.n = n
        self.w = settle_weights(n, taper)
        a, b, phase = _settle_shape(n, taper)
        self._a, self._b = a / (n * a), b / (n * a)
        self._phase = complex(math.cos(phase), math.sin(phase))
        self._turns = [complex(math.cos(2 * math.pi * k / n), math.sin(2 * math.pi * k / n)) for k in range(n)]
        self._back = self._turns[-1]  # exp(-2 pi i / n)
        self.count = 0
        self._ref: list[float] | None = None
        self._buf: deque = deque([0.0, 0.0, 0.0] for _ in range(n))
        self._s1 = [0.0, 0.0, 0.0]
        self._s2 = [0.0, 0.0, 0.0]
        self._c1 = [0j, 0j, 0j]
        self._c2 = [0j, 0j, 0j]

    def push(self, x: Sequence[float]) -> None:
        if self._ref is None:
            self._ref = list(x)
        d = [x[i] - self._ref[i] for i in range(3)]
        old = self._buf.popleft()
        self._buf.append(d)
        back = self._back
        for i in range(3):
            o, v = old[i], d[i]
            self._s1[i] += v - o
            self._s2[i] += v * v - o * o
            self._c1[i] = (self._c1[i] - o + v) * back
            self._c2[i] = (self._c2[i] - o * o + v * v) * back
        self.count += 1
        if self.count % 4096 == 0:  # shed floating-point drift
            for i in range(3):
                col = [v[i] for v in self._buf]
                self._s1[i] = sum(col)
                self._s2[i] = sum(v * v for v in col)
                self._c1[i] = sum(v * z for v, z in zip(col, self._turns))
                self._c2[i] = sum(v * v * z for v, z in zip(col, self._turns))

    def full(self) -> bool:
        return self.count >= self.n

    def var_axes(self) -> list[float]:
        a, b, ph = self._a, self._b, self._phase
        out = []
        for i in range(3):
            mean = a * self._s1[i] - b * (ph * self._c1[i]).real
            out.append(max(0.0, a * self._s2[i] - b * (ph * self._c2[i]).real - mean * mean))
        return out

    def var(self) -> float:
        return sum(self.var_axes()) if self.full() else 0.0


class StabilityDetector:
    """Feed samples with :meth:`update` (``t, ax, ay, az``); it returns the events
    decided at that sample (plain dicts, observation.md's stability shape). Call
    :meth:`finish` at the end of a recording to flush a pending ``stood``."""

    def __init__(
        self,
        config: StabilityConfig = StabilityConfig(),
        stack_height: Callable[[float], float | None] | None = None,
    ) -> None:
        self.cfg = config
        self.stack_height = stack_height
        self.state = "calibrating"
        self.blocks = 0  # blocks placed since the last fall, as the detector saw them
        self.knocks = 0
        self.vetoed = 0
        self._rate = config.rate_hz
        self._first_ts: list[float] = []
        self._pending: list[tuple[float, float, float, float]] = []
        self._ready = False

    # -- set-up -----------------------------------------------------------------------
    def _setup(self, rate: float) -> None:
        c = self.cfg
        self._rate = rate
        self._dt = 1.0 / rate
        self._lp = Biquad(c.lowpass_hz, rate, "low")
        self._hp = Biquad(c.highpass_hz, rate, "high")
        self._win = _Window(max(2, int(round(c.window_s * rate))))
        self._swin = _WeightedWindow(max(2, int(round(c.settle_window_s * rate))), c.settle_taper)
        self._pre = _Window(max(2, int(round((c.precursor_s - c.precursor_gap_s) * rate))))
        gap = self._gap_samples(rate)
        self._delay: deque = deque(maxlen=gap + 1)  # low-passed samples, for the gap
        self._tilt_now: deque = deque(maxlen=max(2, int(round(0.03 * rate))))
        reach = int(round((c.departure_window_s + c.departure_ref_s) * rate))
        self._hist: deque = deque(maxlen=max(4, reach + gap + 1))
        self._calib: dict[str, list[float]] = {"win": [], "swin": [], "pre": []}
        self._calib_axes: list[list[float]] = []
        self._noise_axes: list[float] | None = None  # per-axis low-passed noise variance
        # Low-passed samples (t, x, y, z) back to the settle fit's reach before a
        # crossing confirmed count_confirm_s later.
        self._lp_hist: deque = deque(maxlen=int(math.ceil((c.settle_fit_s + c.settle_window_s + c.count_confirm_s
                                                            + c.settle_fit_step_s) * rate)) + 2)
        self._noise = c.noise_var
        self._noise_s = c.noise_var
        self._noise_pre = c.noise_var
        self._rest: list[float] | None = None
        self._t0: float | None = None
        self._ready = True
        # state
        self._active_since: float | None = None
        self._stir_since: float | None = None  # idle: S above place_onset_level since
        self._onset: float | None = None
        self._below_since: float | None = None
        self._count_start: float | None = None
        self._count_done_at: float | None = None
        self._quiet_since: float | None = None
        self._last_hf: float = -1e9  # last time HF was above new_impact_snr sigma_hf
        self._run_fired = False  # the current impact has reached the impulse level
        self._ring: deque = deque(maxlen=max(2, int(math.ceil(c.ring_window_s * rate))) + 1)  # high band, for the envelope
        self._onset_t: float = -1e9  # last impact onset
        self._run_peak: tuple[float, float] = (0.0, -1e9)  # (hf, t): the last impact's peak within rise_s
        self._hf_var = c.hf_noise_rms**2 if c.hf_noise_rms is not None else None
        self._hf_calib: list[float] = []
        self._impulse: tuple[float, list[float], float | None] | None = None  # t, rest, height
        self._knock_until: float = -1e9
        self._post: list[list[float]] = []
        self._last_imp_t: float = -1e9  # last impulse (any), for the ringing it leaves
        self._active_total = 0.0
        self._active_last = -1e9
        self._base_hit = c.base_hit_g * STANDARD_GRAVITY  # m/s^2

    def _gap_samples(self, rate: float) -> int:
        """Samples left out at the end of the windows read before an impulse: the impulse
        is decided up to ``rise_s`` after its impact's onset, and ``precursor_gap_s``
        before the onset the impact's own ring is already building (and the low-pass
        spreads it), so the windows end ``rise_s + precursor_gap_s`` before the impulse:
        what they see happened before the impact began."""
        return max(1, int(round((self.cfg.rise_s + self.cfg.precursor_gap_s) * rate)))

    def _s(self) -> float:
        """Activity level (short window), noise removed."""
        return math.sqrt(max(0.0, self._win.var() - (self._noise or 0.0)))

    # -- main entry ---------------------------------------------------------------------
    def update(self, t: float, ax: float, ay: float, az: float) -> list[dict[str, Any]]:
        t, ax, ay, az = float(t), float(ax), float(ay), float(az)
        if not self._ready:
            self._pending.append((t, ax, ay, az))
            if self._rate is None:
                if len(self._pending) < 32:
                    return []
                dts = np.diff([p[0] for p in self._pending])
                self._rate = 1.0 / float(np.median(dts))
            self._setup(self._rate)
            out: list[dict[str, Any]] = []
            pending, self._pending = self._pending, []
            for p in pending:
                out += self._step(*p)
            return out
        return self._step(t, ax, ay, az)

    def run(self, samples: Iterable[Sequence[float]]) -> list[dict[str, Any]]:
        out: list[dict[str, Any]] = []
        for s in samples:
            out += self.update(float(s[0]), float(s[1]), float(s[2]), float(s[3]))
        return out + self.finish()

    def finish(self) -> list[dict[str, Any]]:
        """End of data: a count that already reached 3.0 s stood."""
        out: list[dict[str, Any]] = []
        if self._ready and self.state == "counting" and self._count_done_at is not None:
            out.append(stability_event("stood", self._count_start + self.cfg.count_s, detected=self._last_t))
            self.state = "idle"
        return out

    # -- per sample ---------------------------------------------------------------------
    def _step(self, t: float, ax: float, ay: float, az: float) -> list[dict[str, Any]]:
        c = self.cfg
        self._last_t = t
        x = (ax, ay, az)
        lp = self._lp(x)
        hp = self._hp(x)
        self._win.push(lp)
        self._swin.push(lp)
        self._delay.append(lp)
        if len(self._delay) == self._delay.maxlen:
            self._pre.push(self._delay[0])
        self._tilt_now.append(lp)
        self._hist.append(lp)
        self._lp_hist.append((t, *lp))
        hf = math.sqrt(hp[0] ** 2 + hp[1] ** 2 + hp[2] ** 2)
        if self._t0 is None:
            self._t0 = t
        if self.state == "calibrating":
            # Each window's noise variance is measured on its own: removing a window's
            # mean removes a share of low-passed noise that depends on its length (and,
            # for the settle window, its weights).
            for key, w in (("win", self._win), ("pre", self._pre)):
                if len(w.buf) == w.n:
                    self._calib[key].append(w.var())
            if self._swin.full():
                axes = self._swin.var_axes()
                self._calib["swin"].append(sum(axes))
                self._calib_axes.append(axes)
            self._hf_calib.append(hf * hf)
            if t - self._t0 >= c.calib_s:
                if self._hf_var is None:
                    self._hf_var = float(np.mean(self._hf_calib))
                if self._noise is None:
                    est = {k: float(np.mean(v)) if v else 0.0 for k, v in self._calib.items()}
                    self._noise, self._noise_s, self._noise_pre = est["win"], est["swin"], est["pre"] or est["swin"]
                if self._calib_axes:
                    self._noise_axes = [float(v) for v in np.mean(np.asarray(self._calib_axes), axis=0)]
                else:
                    self._noise_axes = [(self._noise_s or 0.0) / 3] * 3
                self._rest = self._pre.mean() if self._pre.buf else self._win.mean()
                self.state = "idle"
                self._quiet_since = t
            return []
        events: list[dict[str, Any]] = []
        s = self._s()

        # ---- impulses: falls, knocks -------------------------------------------------
        # An impact's onset rises out of the noise and out of the envelope of the rings
        # before it; its samples within rise_s are that impact's own ring building up.
        # An impact reaching impact_snr sigma_hf is an impulse.
        sig = max(c.hf_noise_min_rms, math.sqrt(self._hf_var or 0.0))
        # The ring's envelope: its peaks over the last ring_window_s, the noise's share
        # removed in quadrature (so the noise's own peaks do not hold it up). A new
        # impact must beat new_impact_ratio times that, with the noise riding on it.
        # (The sample just before is left out: an impact's ring builds up over it.)
        peak = max(itertools.islice(self._ring, 0, max(0, len(self._ring) - 1)), default=0.0)
        env_pred = math.sqrt(max(0.0, peak * peak - (c.ring_noise_snr * sig) ** 2))
        self._ring.append(hf)
        floor = c.new_impact_snr * sig
        new_run = False
        if hf > floor:
            self._last_hf = t
            if (hf * hf > (c.new_impact_ratio * env_pred) ** 2 + floor * floor
                    and t - self._onset_t > c.rise_s):
                new_run = True
                self._run_fired = False
                self._onset_t = t
                self._run_peak = (hf, t)
            elif t - self._onset_t <= c.rise_s and hf > self._run_peak[0]:
                self._run_peak = (hf, t)
        if (c.hf_noise_rms is None and hf < c.impact_level and t - self._last_imp_t > c.noise_guard_s
                and s < c.settle_level and self.state in ("idle", "counting") and self._hf_var is not None):
            # A quiet stretch: follow the chip's high-band noise (temperature, supply, or
            # a calibration on a still, noiseless input).
            self._hf_var += (hf * hf - self._hf_var) * min(1.0, self._dt / c.noise_tau_s)
        new_impulse = (hf > max(c.impact_level, c.impact_snr * sig) and not self._run_fired
                       and t - self._onset_t <= c.rise_s)
        if new_impulse:
            self._run_fired = True
            self._last_imp_t = t
        if self.state != "fallen":
            if self._impulse is not None and new_run and t - self._impulse[0] <= c.train_s:
                # Another impact (a bounce, another block) while the first still
                # counts: a train of impacts.
                t_first, _, h0 = self._impulse
                events += self._fall(t_first, t, "train of impacts", h0)
            elif new_impulse:
                events += self._on_impulse(t, lp, hf, sig)
            elif (self._impulse is not None and t - self._onset_t > c.rise_s and t - self._impulse[0] <= c.train_s
                  and self._outlasts_ring(t, hf, floor)):
                # More ring than one impact leaves: blocks landing one on another's ring.
                t_first, _, h0 = self._impulse
                events += self._fall(t_first, t, "ring outlasting one impact", h0)
            elif self._impulse is not None and t - self._onset_t <= c.rise_s and hf >= self._base_hit:
                t_first, _, h0 = self._impulse
                events += self._fall(t_first, t, "impact on the base itself", h0)
            elif (self._impulse is not None and t - self._onset_t <= c.rise_s and self._hand_on(t)
                  and hf >= c.hand_impact_snr * sig):
                t_first, _, h0 = self._impulse
                events += self._fall(t_first, t, "impact with the hand on the stack", h0)
            elif self._impulse is not None:
                events += self._follow_impulse(t, lp)

        # ---- placements and the count -----------------------------------------------
        if self.state == "idle":
            events += self._idle(t, s, lp)
        elif self.state == "placing":
            events += self._placing(t, self._swin.var() - (self._noise_s or 0.0))
        elif self.state == "counting":
            events += self._counting(t)
        elif self.state == "fallen":
            if s < c.settle_level and t - self._last_hf > c.merge_s:
                if self._quiet_since is None:
                    self._quiet_since = t
                elif t - self._quiet_since >= c.fall_quiet_s:
                    self.state = "idle"
                    self._rest = self._win.mean()
                    self._active_since = None
            else:
                self._quiet_since = None
        return events

    # -- impulses ---------------------------------------------------------------------------
    def _departure(self) -> bool:
        """The departure signature just before an impulse (R-BLOCKOUT-3: a block left
        the stack): over ``departure_window_s`` (minus the impulse's own rise) the base's
        mean tilt differs from the reference window before it, or it rang there. Judged
        only at an impulse, so its false-alarm rate is per knock, not per sample; a knock
        out of a still base has neither (its own ringing starts with its impulse)."""
        c = self.cfg
        if len(self._hist) < self._hist.maxlen:
            return False
        rate = self._rate or 1.0
        h = np.asarray(self._hist)
        gap = self._gap_samples(rate)
        nw = max(2, int(round(c.departure_window_s * rate)))
        win = h[-gap - nw : -gap]
        ref = h[: -gap - nw]
        step = float(np.hypot(*(win[:, :2].mean(axis=0) - ref[:, :2].mean(axis=0))))
        ring = math.sqrt(max(0.0, float(win.var(axis=0).sum() - ref.var(axis=0).sum())))
        return step > c.departure_tilt or ring > c.departure_ring

    def _outlasts_ring(self, t: float, hf: float, floor: float) -> bool:
        """The high band is above what the impact's own ring can still hold: its peak
        decayed at the slowest ring's rate (``ring_tau_s``) since, times
        new_impact_ratio, with the noise floor in quadrature. A ring never outlasts that
        bound, whatever it beats; blocks landing and bouncing one after another keep the
        base ringing past it even when no single landing rises out of the envelope of
        the ones before (the windowed test of a new impact)."""
        c = self.cfg
        if c.ring_tau_s <= 0:
            return False
        peak, t_peak = self._run_peak
        bound = c.new_impact_ratio * peak * math.exp(-(t - t_peak) / c.ring_tau_s)
        return hf * hf > bound * bound + floor * floor

    def _released(self, t: float) -> bool:
        """Placing, but S has been below settle_level for hold_s: the hand has let go
        and the stack settled; only the count's confirmation is pending."""
        return self.state == "placing" and self._below_since is not None and t - self._below_since >= self.cfg.hold_s

    def _hand_on(self, t: float) -> bool:
        """Placing and not yet released: the hand is (or may be) on the stack."""
        return self.state == "placing" and not self._released(t)

    def _precursor(self) -> bool:
        c = self.cfg
        if self._departure():
            return True
        pre_s = math.sqrt(max(0.0, self._pre.var() - (self._noise_pre or 0.0)))
        if pre_s > c.precursor_level:
            return True
        if self._rest is not None and len(self._pre.buf) == self._pre.n:
            m = self._pre.mean()
            return math.hypot(m[0] - self._rest[0], m[1] - self._rest[1]) > c.tilt_level
        return False

    def _height(self, t: float) -> float | None:
        if self.stack_height is None:
            return None
        try:
            return self.stack_height(t)
        except Exception:  # noqa: BLE001 - the camera hook must not break the detector
            return None

    def _on_impulse(self, t: float, lp: list[float], hf: float, sig: float) -> list[dict[str, Any]]:
        h0 = self._height(t - self.cfg.height_lead_s)
        if self._hand_on(t):
            # The hand keeps the base moving, so the precursor tests say nothing here; a
            # landing rings strongly, the hand's own release only a little (hand_impact_snr).
            if hf >= self.cfg.hand_impact_snr * sig:
                return self._fall(t, t, "impact with the hand on the stack", h0)
        elif self._precursor():
            return self._fall(t, t, "impact after the base moved", h0)
        if hf >= self._base_hit:
            return self._fall(t, t, "impact on the base itself", h0)
        self._impulse = (t, list(self._rest or lp), h0)
        self._post = []
        self._knock_until = t + self.cfg.train_s
        return []

    def _follow_impulse(self, t: float, lp: list[float]) -> list[dict[str, Any]]:
        assert self._impulse is not None
        c = self.cfg
        t_i, rest, h0 = self._impulse
        if t - t_i >= c.train_s - 0.25:
            self._post.append(lp)
        if t - t_i < c.train_s:
            return []
        self._impulse = None
        moving = self._s() > c.active_level
        if self._post and not moving:
            m = np.mean(np.asarray(self._post), axis=0)
            if math.hypot(m[0] - rest[0], m[1] - rest[1]) > c.fall_tilt:
                return self._fall(t_i, t, "tilt changed after an impact", h0)
        if moving and self.state == "idle":
            # Not a knock: the tap of a block set on the stack, and the hand stayed.
            self.state = "placing"
            self.blocks += 1
            self._below_since = None
            return [stability_event("placed", t_i, detected=round(t, 6))]
        self.knocks += 1
        return []

    def _fall(self, t_fall: float, t_now: float, why: str, h0: float | None) -> list[dict[str, Any]]:
        c = self.cfg
        h1 = self._height(t_now)
        if h0 is not None and h1 is not None and h1 >= h0:
            self.vetoed += 1  # the camera still sees the whole stack: a knock
            self._impulse = None
            self.knocks += 1
            return []
        out: list[dict[str, Any]] = []
        if self._released(t_fall):
            # Settled before the fall, the count not yet confirmed: it had started.
            assert self._below_since is not None
            start = self._settle_fit(t_fall - c.departure_window_s)
            out.append(stability_event("counting", start, detected=round(t_now, 6)))
        elif self.state == "counting" and self._count_start is not None:
            end = self._count_start + c.count_s
            if t_fall - c.fall_lead_s >= end:
                # The count had ended before the block left: it stood, then fell.
                out.append(stability_event("stood", end, detected=t_now))
        self._impulse = None
        self.state = "fallen"
        self.blocks = 0
        self._quiet_since = None
        self._count_start = None
        self._count_done_at = None
        self._active_since = None
        self._below_since = None
        out.append(stability_event("fell", t_fall, detected=round(t_now, 6), why=why))
        return out

    # -- placements -----------------------------------------------------------------------
    def _idle(self, t: float, s: float, lp: list[float]) -> list[dict[str, Any]]:
        c = self.cfg
        if t < self._knock_until or t - self._last_hf < c.merge_s:
            self._active_since = None  # a knock's ringing, not a hand
            self._stir_since = None
            return []
        if s <= c.place_onset_level:
            self._stir_since = None
        elif self._stir_since is None:
            self._stir_since = t
        if s > c.active_level:
            if self._active_since is None:
                self._active_since = t
                self._active_total = 0.0
            self._active_total += self._dt
            self._active_last = t
            if self._active_total >= c.place_confirm_s:
                self.state = "placing"
                self.blocks += 1
                self._below_since = None
                # The hand touched when the motion began, not when it grew strong. S^2 grows
                # with the share of its window the motion fills, so a motion at about
                # active_level reaches place_onset_level that share of window_s after it began.
                if self._stir_since is not None:
                    onset = self._stir_since - c.window_s * (c.place_onset_level / max(c.active_level, 1e-9)) ** 2
                else:
                    onset = self._active_since - c.window_s / 2
                self._active_since = None
                return [stability_event("placed", onset, detected=round(t, 6))]
        else:
            if self._active_since is not None and t - self._active_last > c.place_gap_s:
                self._active_since = None
            if self._active_since is None and s < c.settle_level and self._rest is not None:
                # Follow slow drift of the resting tilt (temperature, an elbow).
                m = self._win.mean()
                self._rest = [0.995 * self._rest[i] + 0.005 * m[i] for i in range(3)]
        return []

    def _placing(self, t: float, s2: float) -> list[dict[str, Any]]:
        c = self.cfg
        # An impulse's ringing (a knock while the stack stands) lifts S for about a
        # window; it is not the hand, so it neither ends nor feeds the settle.
        ringing = t - self._last_imp_t < c.settle_window_s + 0.05
        if s2 < c.settle_level**2:
            if self._below_since is None:
                self._below_since = t
            elif t - self._below_since >= c.count_confirm_s:
                start = self._settle_fit(t)
                self.state = "counting"
                self._count_start = start
                self._count_done_at = None
                return [stability_event("counting", start, detected=round(t, 6))]
        elif not ringing:
            self._below_since = None
        return []

    def _settle_fit(self, end: float) -> float:
        """The settle time (R-BLOCKOUT-3): the first sample from which S stayed below
        settle_level, the crossing the truth takes on the noise-free signal.

        The noisy S's crossing (``_below_since``, noise variance removed) errs by the
        window's signal-noise cross term, correlated over the whole window, which no
        local fit of S averages out. So the signal itself is estimated: after the
        release the base rings down freely, one damped sinusoid per axis about its rest,
        strongest just after the release; fitted (frequency and decay from the samples)
        over the longest span back towards the release that the model explains (up to
        ``settle_fit_s`` before the crossing's window, grown ``settle_fit_step_s`` at a
        time while the piece added fits to within ``settle_fit_resid`` times the noise)
        and forward to ``end`` (or the last impulse), it gives S on the clean estimate,
        whose crossing is taken. The noisy crossing is kept when the fit is poor, the
        data too short, or the fitted crossing more than ``settle_fit_guard_s`` away."""
        assert self._below_since is not None
        c = self.cfg
        raw = self._below_since
        if c.settle_fit_s <= 0 or self._noise_axes is None or not self._lp_hist:
            return raw
        rate = self._rate or 1.0
        if self._last_imp_t > raw - c.settle_window_s:
            end = min(end, self._last_imp_t - c.precursor_gap_s)
        hist = np.asarray(self._lp_hist)
        ts, lp = hist[:, 0], hist[:, 1:]
        n = self._swin.n
        hold = max(1, int(round(c.hold_s * rate)))
        j = int(np.searchsorted(ts, raw - 0.5 / rate))  # the crossing's sample
        i1 = int(np.searchsorted(ts, end + 0.5 / rate))  # past the last sample used
        i0 = j - n + 1  # the crossing's window
        if i0 < 0 or i1 - j < hold:
            return raw
        noise = np.maximum(np.asarray(self._noise_axes), 1e-12)
        w_max = 2 * math.pi * min(c.lowpass_hz, 0.45 * rate)
        fits = [_ring_fit(lp[i0:i1, k], rate, w_max) for k in range(3)]
        step = max(1, int(round(c.settle_fit_step_s * rate)))
        reach = i0 - int(round(c.settle_fit_s * rate))
        while i0 - step >= max(0, reach):
            grown = []
            for k, f in enumerate(fits):
                y = lp[i0 - step : i1, k]
                g = _ring_fit(y, rate, w_max, start=(f[0], f[1]))
                if np.mean(g[3][:step] ** 2) / noise[k] > c.settle_fit_resid:
                    # A ring too weak to be found on the shorter span (the noise's own
                    # peak was fitted) shows as the span reaches its stronger start:
                    # search afresh there.
                    fresh = _ring_fit(y, rate, w_max)
                    if fresh[3] @ fresh[3] < g[3] @ g[3]:
                        g = fresh
                grown.append(g)
            added = float(np.mean([np.mean(f[3][:step] ** 2) / noise[k] for k, f in enumerate(grown)]))
            if added > c.settle_fit_resid:
                break
            fits, i0 = grown, i0 - step
        whole = float(np.mean([np.mean(f[3] ** 2) / noise[k] for k, f in enumerate(fits)]))
        if whole > c.settle_fit_resid:
            return raw
        span = np.arange(i1 - i0, dtype=float)
        model = np.column_stack([_ring_eval(f, span, rate) for f in fits])
        below = _trailing_var(model, self._swin.w) < c.settle_level**2
        below[: n - 1] = False  # only windows wholly inside the span
        for m in range(n - 1, len(below)):
            t_m = float(ts[i0 + m])
            if t_m > raw + c.settle_fit_guard_s:
                break
            if t_m >= raw - c.settle_fit_guard_s and below[m : m + hold].all():
                return t_m
        return raw

    def _counting(self, t: float) -> list[dict[str, Any]]:
        c = self.cfg
        assert self._count_start is not None
        end = self._count_start + c.count_s
        if t >= end and self._count_done_at is None:
            self._count_done_at = t
        if self._count_done_at is not None and t >= end + c.stood_guard_s and self._impulse is None:
            self.state = "idle"
            self._rest = self._win.mean()
            self._active_since = None
            return [stability_event("stood", end, detected=round(t, 6))]
        return []


def detect(samples: Iterable[Sequence[float]], config: StabilityConfig = StabilityConfig(),
           stack_height: Callable[[float], float | None] | None = None) -> list[dict[str, Any]]:
    """All events of a whole recording (rows ``t, ax, ay, az``)."""
    return StabilityDetector(config, stack_height).run(samples)
