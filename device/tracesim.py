"""Physically based simulation of the Block Out! base, as its accelerometer feels it.

Model (table-kit.md): a base on four soft feet carrying the stack. It rocks about two
horizontal axes and bounces vertically; each is a damped oscillator (rocking 9-15 Hz,
bounce 20-32 Hz, damping ratio 0.08-0.2) pulled toward an equilibrium set by the
loads: the resting tilt is ``theta0 + c * moment`` with ``c`` the feet's rotational
compliance and ``moment`` the sum of ``m g r`` over blocks at horizontal offset
``r``, plus the hand's forces. The sensor under the base, z up, reads
``g * tilt + h * tilt'' `` horizontally and ``g + z''`` vertically, plus table
vibration, averaged over each output period, plus the chip's noise (MPU-6050:
400 ug/sqrt(Hz) over its 184 Hz low-pass; ADXL345 at 400 Hz: 1.5 LSB rms x/y,
2.2 LSB rms z at 3.9 mg/LSB, per their data sheets), a zero-g offset and
quantisation.

Events:
- placement: a small contact tap; the hand then holds the block for 0.4-1.4 s,
  pressing or partly supporting it, with tremor (3-12 Hz horizontal and vertical
  forces at the stack top); release ramps the hand's force to zero in 10-30 ms and the
  base rings down freely;
- fall: the top ``k`` blocks tip as a rigid group about their support's edge
  (:func:`_tip`: the exponential escape from balance, ``rho^2 phi'' = g h sin phi``).
  The base feels the contact force, not the group: the normal force ``N`` at the edge
  and the friction reaction at the support's height (lever = that height + the feet's
  axis below the top), which tilts the base against the fall while the group
  accelerates outward; both vanish as the group leaves (``N`` reaches zero, ~70
  degrees), the truth time (R-BLOCKOUT-3: a block leaves the stack). A vertical load
  change shows only as ringing (an accelerometer reads motion), a moment change as a
  tilt step plus ringing; for light blocks both are within the chips' noise. The
  blocks then fall from their pose at departure (with the downward speed the group's
  rotation gives each), to where the toppled group lays them: on the base when that
  is within its 60 mm half-width (always, for a low short group: a block reaches only
  as far as it is from the edge), else on the table; they land with an impulse
  ``m v``: a high-frequency ring (80-180 Hz) plus a kick, then bounce (restitution
  0.2-0.45); blocks landing on the base stay on it;
- knock: a short table impulse (60-160 Hz ring, tilt unchanged);
- elbow: the table top tilts by 0.03-0.1 degrees over 0.15-0.4 s, holds, releases.

Truth: ``placed`` at contact; ``counting`` at the first moment after release when
the noise-free signal's motion level (:func:`device.stability.motion_level`: its
wobble energy over a raised-cosine window, ``settle_taper``, which follows a
ring-down's envelope whatever its phase) is below ``settle_level`` and stays there
``hold_s``; ``stood`` 3.0 s later unless a block left first; ``fell`` when the first
block leaves (with ``t_impact``, its first landing). ``cfg`` of :func:`simulate` is
that definition (the detector's defaults unless given).

Deterministic: everything random comes from ``random.Random(seed)``.
"""

from __future__ import annotations

import json
import math
import random
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from device.accel import STANDARD_GRAVITY as G
from device.stability import COUNT_S, StabilityConfig, motion_level

SUBSTEPS = 4
BLOCK_HEIGHTS = {"small": 0.025, "medium": 0.05, "large": 0.075}
BLOCK_WIDTH = 0.025  # m, every block's footprint is 25 x 25 mm (table-kit.md)
WOOD_DENSITY = 550.0  # kg/m^3
BASE_MASS = 0.35  # kg
LEVER_BELOW_TOP = 0.04  # m, rocking axis (feet) below the base's top surface
BASE_HALF = 0.06  # m, half the base's 120 mm side (table-kit.md)
TABLE_BELOW_TOP = 0.0225  # m, the table's surface below the base's top surface

CHIPS: dict[str, dict[str, Any]] = {
    # noise sigma per axis in m/s^2, LSB in m/s^2, full-scale in m/s^2
    "mpu6050": {"rate": 500.0, "sigma": (400e-6 * G * math.sqrt(184 * math.pi / 2),) * 3,
                "lsb": G / 4096.0, "full": 8 * G, "bias": 0.5},
    "adxl345": {"rate": 400.0, "sigma": (1.5 * 0.0039 * G, 1.5 * 0.0039 * G, 2.2 * 0.0039 * G),
                "lsb": 0.0039 * G, "full": 16 * G, "bias": 0.4},
}


def block_mass(size: str) -> float:
    return WOOD_DENSITY * BLOCK_WIDTH * BLOCK_WIDTH * BLOCK_HEIGHTS[size]


@dataclass
class Trace:
    """A simulated recording: ``t`` (n,), ``acc`` (n, 3) as the chip reports,
    ``clean`` (n, 3) noise-free, ``events`` the true stability events, ``meta``."""

    t: np.ndarray
    acc: np.ndarray
    clean: np.ndarray
    events: list[dict[str, Any]]
    meta: dict[str, Any] = field(default_factory=dict)

    @property
    def rate(self) -> float:
        return float(self.meta["rate_hz"])

    def write_fixture(self, folder: Path) -> None:
        """``accel.csv`` (t,ax,ay,az) + ``truth.jsonl`` + ``meta.json`` (observation.md)."""
        folder.mkdir(parents=True, exist_ok=True)
        from device.accelcsv import write_csv  # noqa: PLC0415

        write_csv(folder / "accel.csv", zip(self.t, self.acc[:, 0], self.acc[:, 1], self.acc[:, 2]))
        with open(folder / "truth.jsonl", "w") as f:
            for e in self.events:
                f.write(json.dumps(e) + "\n")
        (folder / "meta.json").write_text(json.dumps(self.meta, indent=1) + "\n")


def _expm2(a: np.ndarray) -> np.ndarray:
    """Matrix exponential by scaling and squaring with a Taylor series (small matrices)."""
    norm = max(1.0, float(np.abs(a).sum(axis=1).max()))
    k = max(0, int(math.ceil(math.log2(norm))) + 1)
    s = a / (2**k)
    out = np.eye(len(a))
    term = np.eye(len(a))
    for i in range(1, 14):
        term = term @ s / i
        out = out + term
    for _ in range(k):
        out = out @ out
    return out


def _oscillator(f: float, zeta: float, dt: float, u: np.ndarray, kicks: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """x'' + 2 zeta w x' + w^2 x = w^2 u(t), u held over each step (exact discretisation);
    ``kicks`` are velocity jumps (impulses / mass). Starts at rest on u[0]."""
    w = 2 * math.pi * f
    a = np.array([[0.0, 1.0, 0.0], [-w * w, -2 * zeta * w, w * w], [0.0, 0.0, 0.0]])
    e = _expm2(a * dt)
    p00, p01, g0 = e[0, 0], e[0, 1], e[0, 2]
    p10, p11, g1 = e[1, 0], e[1, 1], e[1, 2]
    n = len(u)
    xs = np.empty(n)
    vs = np.empty(n)
    x, v = float(u[0]), 0.0
    ul = u.tolist()
    kl = kicks.tolist()
    for i in range(n):
        v += kl[i]
        x, v = p00 * x + p01 * v + g0 * ul[i], p10 * x + p11 * v + g1 * ul[i]
        xs[i] = x
        vs[i] = v
    acc = w * w * (u - xs) - 2 * zeta * w * vs
    return xs, acc


@dataclass
class _Block:
    size: str
    mass: float
    height: float
    r: np.ndarray  # horizontal offset of its centre (m)
    z: float  # height of its bottom face above the base (m)


class _Scene:
    """Accumulates forcing on a substep grid, then integrates."""

    def __init__(self, rng: random.Random, duration: float, chip: str) -> None:
        self.rng = rng
        self.chip = chip
        self.rate = CHIPS[chip]["rate"]
        self.fs = self.rate * SUBSTEPS
        self.dt = 1.0 / self.fs
        self.n = int(duration * self.fs)
        self.tt = np.arange(self.n) * self.dt
        self.moment = np.zeros((self.n, 2))  # N m about the two rocking axes
        self.force = np.zeros(self.n)  # extra downward force on the base (N)
        self.kick_t = np.zeros((self.n, 2))  # tilt-rate jumps (rad/s)
        self.kick_z = np.zeros(self.n)  # vertical velocity jumps (m/s)
        self.hf = np.zeros((self.n, 3))  # table/base ringing read directly (m/s^2)
        self.table_tilt = np.zeros((self.n, 2))  # rad
        r = rng
        self.f_t = (r.uniform(9, 15), r.uniform(9, 15))
        self.z_t = (r.uniform(0.08, 0.16), r.uniform(0.08, 0.16))
        self.f_z = r.uniform(20, 32)
        self.z_z = r.uniform(0.10, 0.20)
        self.c = r.uniform(0.4, 0.7)  # rad per N m
        self.theta0 = np.array([r.uniform(-0.01, 0.01), r.uniform(-0.01, 0.01)])
        self.h_s = 0.01
        self.mass = BASE_MASS
        self.inertia = 1.0 / (self.c * (2 * math.pi * np.mean(self.f_t)) ** 2)

    def idx(self, t: float) -> int:
        return max(0, min(self.n, int(round(t * self.fs))))

    def span(self, t0: float, t1: float) -> slice:
        return slice(self.idx(t0), self.idx(t1))

    def add_static_load(self, t0: float, m: float, r: np.ndarray, t1: float | None = None) -> None:
        sl = self.span(t0, t1 if t1 is not None else self.n / self.fs)
        self.force[sl] += m * G
        self.moment[sl] += m * G * r

    def add_pulse(self, t: float, impulse: float, r: np.ndarray, dur: float = 0.004) -> None:
        """A vertical half-sine force pulse (N s) at offset r, e.g. a tap or a landing."""
        sl = self.span(t, t + dur)
        k = np.arange(sl.stop - sl.start)
        if len(k) == 0:
            return
        shape = np.sin(math.pi * (k + 0.5) / len(k))
        shape = shape / (shape.sum() * self.dt)
        self.force[sl] += impulse * shape
        self.moment[sl] += impulse * shape[:, None] * r[None, :]

    def add_ring(self, t: float, amp: float, f: float, tau: float, direction: np.ndarray) -> None:
        i0 = self.idx(t)
        i1 = min(self.n, i0 + int(8 * tau * self.fs) + 1)
        s = self.tt[i0:i1] - self.tt[i0]
        d = direction / np.linalg.norm(direction)
        self.hf[i0:i1] += (amp * np.exp(-s / tau) * np.sin(2 * math.pi * f * s))[:, None] * d[None, :]

    def simulate(self) -> tuple[np.ndarray, np.ndarray]:
        """Noise-free chip output at ``rate``: times and (n, 3) m/s^2."""
        acc = np.zeros((self.n, 3))
        for ax in range(2):
            w2 = (2 * math.pi * self.f_t[ax]) ** 2
            u = self.theta0[ax] + self.c * self.moment[:, ax]
            theta, th_acc = _oscillator(self.f_t[ax], self.z_t[ax], self.dt, u, self.kick_t[:, ax])
            acc[:, ax] = G * (theta + self.table_tilt[:, ax]) + self.h_s * th_acc
            del w2
        w2 = (2 * math.pi * self.f_z) ** 2
        u = -self.force / (self.mass * w2)
        _, z_acc = _oscillator(self.f_z, self.z_z, self.dt, u, self.kick_z)
        acc[:, 2] = G + z_acc
        acc += self.hf
        # The chip's output is the average over each output period (its low-pass).
        m = self.n // SUBSTEPS
        out = acc[: m * SUBSTEPS].reshape(m, SUBSTEPS, 3).mean(axis=1)
        t = (np.arange(m) + 1) / self.rate
        return t, out


def _unit(rng: random.Random) -> np.ndarray:
    a = rng.uniform(0, 2 * math.pi)
    return np.array([math.cos(a), math.sin(a)])


def _wobble(rng: random.Random, tt: np.ndarray, rms: float) -> np.ndarray:
    """Band-limited hand tremor: six sinusoids 4-12 Hz, the given RMS."""
    sig = np.zeros_like(tt)
    for _ in range(6):
        sig += rng.uniform(0.5, 1.0) * np.sin(2 * math.pi * rng.uniform(4, 12) * tt + rng.uniform(0, 2 * math.pi))
    cur = float(np.sqrt(np.mean(sig**2))) or 1.0
    return sig * (rms / cur)


FALL_KINDS = ("none", "hold", "count", "after")


def simulate(seed: int, chip: str | None = None, cfg: StabilityConfig = StabilityConfig(),
             placements: int | None = None, fall: str | None = None) -> Trace:
    """One game segment: a few placements with counts, knocks and elbows, and usually
    a fall (``fall``: none, hold = while the hand is on, count = during the count,
    after = after it stood). Same arguments, same trace."""
    rng = random.Random(seed)
    chip = chip or rng.choice(sorted(CHIPS))
    n_place = rng.randint(1, 5)
    fall_kind = rng.choices(FALL_KINDS, [0.25, 0.15, 0.45, 0.15])[0]
    if placements is not None:
        n_place = placements
    if fall is not None:
        if fall not in FALL_KINDS:
            raise ValueError(f"fall must be one of {FALL_KINDS}")
        fall_kind = fall
    duration = 1.5 + max(n_place, 2) * 9.0 + 4.0  # room for a second placement (below)
    sc = _Scene(rng, duration, chip)

    sizes = ["small", "medium", "large"]
    free = [(c, s) for c in ("yellow", "black", "red") for s in sizes]
    rng.shuffle(free)
    stack: list[_Block] = []
    lean = np.zeros(2)
    n0 = rng.randint(0, 3)  # blocks already standing when the recording starts
    for _ in range(n0):
        _, size = free.pop()
        lean = lean + np.array([rng.gauss(0, 0.003), rng.gauss(0, 0.003)])
        z = sum(b.height for b in stack)
        b = _Block(size, block_mass(size), BLOCK_HEIGHTS[size], lean.copy(), z)
        stack.append(b)
        sc.add_static_load(0.0, b.mass, b.r)

    t = rng.uniform(1.2, 1.8)  # still start: the detector calibrates on it
    truth: list[dict[str, Any]] = []
    disturb: list[dict[str, Any]] = []
    plans = []  # (contact, release, release_end)
    hands: list[tuple[slice, np.ndarray, np.ndarray]] = []  # the hand's force and moment
    fall_at: float | None = None
    fall_place = rng.randrange(n_place)
    if fall_kind in ("count", "after") and n0 == 0 and fall_place == 0:
        # A lone block standing on the flat base cannot topple by itself (its centre of
        # mass is half a block inside its footprint; only a hand can tip it, a "hold"
        # fall), and the first block of a stack has no count to fall during
        # (R-BLOCKOUT-4): an unprovoked fall needs a stack of two or more.
        if n_place == 1:
            n_place = 2
        fall_place = rng.randrange(1, n_place)

    def maybe_disturb(t_from: float, t_to: float) -> None:
        """A knock or an elbow somewhere in a quiet stretch, clear of other activity."""
        if t_to - t_from < 1.2:
            return
        u = rng.random()
        if u < 0.35:
            tk = rng.uniform(t_from + 0.4, t_to - 0.7)
            amp = rng.uniform(1.0, 8.0)
            f = rng.uniform(60, 160)
            d = np.array([rng.gauss(0, 0.5), rng.gauss(0, 0.5), 1.0])
            sc.add_ring(tk, amp, f, rng.uniform(0.006, 0.02), d)
            sc.add_ring(tk, 0.4 * amp, f * rng.uniform(1.3, 1.8), rng.uniform(0.004, 0.01), d[[1, 0, 2]])
            sc.kick_t[sc.idx(tk)] += np.array([rng.gauss(0, 0.004), rng.gauss(0, 0.004)]) * amp
            sc.kick_z[sc.idx(tk)] += rng.gauss(0, 0.0003) * amp
            disturb.append({"type": "knock", "t": round(tk, 4), "amp": round(amp, 3)})
        elif u < 0.6:
            te = rng.uniform(t_from + 0.3, t_to - 1.0)
            rise = rng.uniform(0.15, 0.4)
            hold = min(rng.uniform(0.4, 2.0), t_to - te - 2 * rise - 0.2)
            if hold <= 0.1:
                return
            tilt = rng.uniform(0.0005, 0.0017) * _unit(rng)
            for a, b, sign in ((te, te + rise, 1), (te + rise + hold, te + 2 * rise + hold, -1)):
                sl = sc.span(a, b)
                k = np.linspace(0, 1, sl.stop - sl.start)
                ramp = 0.5 - 0.5 * np.cos(math.pi * k)
                sc.table_tilt[sl] += (ramp if sign > 0 else 1 - ramp)[:, None] * tilt[None, :]
            sc.table_tilt[sc.span(te + rise, te + rise + hold)] += tilt
            sc.add_pulse(te, rng.uniform(0.002, 0.01), np.zeros(2), dur=0.03)
            disturb.append({"type": "elbow", "t": round(te, 4), "until": round(te + 2 * rise + hold, 4)})

    for k in range(n_place):
        if not free:
            break
        gap = rng.uniform(0.8, 3.0)
        maybe_disturb(t, t + gap)
        t += gap
        _, size = free.pop()
        m = block_mass(size)
        z = sum(b.height for b in stack)
        lean = lean + np.array([rng.gauss(0, 0.004), rng.gauss(0, 0.004)])
        blk = _Block(size, m, BLOCK_HEIGHTS[size], lean.copy(), z)
        contact = t
        hold = rng.uniform(0.4, 1.4)
        release = contact + hold
        t_rel = rng.uniform(0.01, 0.03)
        # contact tap, then the block's weight rests on the stack
        sc.add_pulse(contact, m * rng.uniform(0.005, 0.03), blk.r, dur=0.012)
        sc.add_static_load(contact, m, blk.r)
        stack.append(blk)
        top = z + blk.height
        lever = top + LEVER_BELOW_TOP
        # the hand: a steady net force (pressing > 0, supporting < 0) plus tremor
        f_net = rng.uniform(-0.6 * m * G, 0.25)
        r_hand = blk.r + 0.01 * _unit(rng)
        sl = sc.span(contact, release + t_rel)
        tt = sc.tt[sl] - contact
        env = np.clip(tt / 0.06, 0, 1) * np.clip((release + t_rel - contact - tt) / t_rel, 0, 1)
        w_dir = _unit(rng)
        # Tremor moments: a hand on a tall stack pushes more gently (or the stack goes),
        # so the moment, not the force, is what stays in a narrow range.
        fh = _wobble(rng, tt, rng.uniform(0.035, 0.06)) / lever
        fh2 = _wobble(rng, tt, rng.uniform(0.003, 0.01)) / lever
        fv = env * (f_net + _wobble(rng, tt, rng.uniform(0.03, 0.1)))
        mom = fv[:, None] * r_hand[None, :]
        mom += (env * fh * lever)[:, None] * w_dir[None, :]
        mom += (env * fh2 * lever)[:, None] * np.array([-w_dir[1], w_dir[0]])[None, :]
        hands.append((sl, fv, mom))
        plans.append((contact, release, release + t_rel))
        truth.append({"kind": "stability", "event": "placed", "t": round(contact, 6)})

        if k == fall_place and fall_kind != "none":
            if fall_kind == "hold":
                fall_at = contact + rng.uniform(0.25, max(0.3, hold - 0.05))
            elif fall_kind == "count":
                fall_at = release + rng.uniform(0.6, 2.7)
            else:
                fall_at = release + rng.uniform(3.9, 5.0)
            break
        t = release + COUNT_S + rng.uniform(0.8, 1.6)
        if rng.random() < 0.4:
            maybe_disturb(release + 1.0, release + 2.8)

    end_t = (fall_at + 2.5) if fall_at is not None else t + 0.5
    fall_info: dict[str, Any] | None = None
    if fall_at is not None:
        fall_info = _fall(sc, rng, stack, fall_at)
        end_t = max(end_t, fall_info["last_impact"] + 1.5)
        if fall_kind == "hold" and hands:
            # The hand was still on the stack: its forces end as the stack goes.
            sl, fv, mom = hands[-1]
            cut = sc.idx(fall_info["t_leave"]) - sl.start
            if 0 <= cut < len(fv):
                fade = np.clip(1 - np.arange(len(fv) - cut) / (0.01 * sc.fs), 0, 1)
                fv[cut:] *= fade
                mom[cut:] *= fade[:, None]
    for sl, fv, mom in hands:
        sc.force[sl] += fv
        sc.moment[sl] += mom
    t_arr, clean = sc.simulate()
    keep = t_arr <= end_t
    t_arr, clean = t_arr[keep], clean[keep]

    spec = CHIPS[chip]
    nrng = np.random.default_rng(rng.getrandbits(63))
    bias = np.array([rng.uniform(-spec["bias"], spec["bias"]) for _ in range(3)])
    noisy = clean + bias + nrng.normal(0.0, 1.0, clean.shape) * np.array(spec["sigma"])
    noisy = np.clip(np.round(noisy / spec["lsb"]) * spec["lsb"], -spec["full"], spec["full"])

    events = _truth(truth, plans, fall_info, t_arr, clean, sc.rate, cfg)
    meta = {
        "how": "device.tracesim.simulate",
        "seed": seed,
        "chip": chip,
        "rate_hz": sc.rate,
        "base": {"f_tilt_hz": [round(f, 3) for f in sc.f_t], "zeta_tilt": [round(z, 3) for z in sc.z_t],
                 "f_bounce_hz": round(sc.f_z, 3), "zeta_bounce": round(sc.z_z, 3),
                 "compliance_rad_per_nm": round(sc.c, 4)},
        "blocks_at_start": n0,
        "placements": len(plans),
        "fall": fall_kind if fall_at is not None else "none",
        "disturbances": disturb,
        "fall_detail": None if fall_info is None else {
            k: round(float(v), 5) for k, v in fall_info.items() if k not in ("t_impact", "last_impact")},
        "noise_sigma": list(spec["sigma"]),
    }
    return Trace(t_arr, noisy, clean, events, meta)


def _tip(m: float, h_c: float, rho2: float, phi0: float, mu: float, dt: float
         ) -> tuple[np.ndarray, np.ndarray, float, float, float]:
    """A rigid group tipping about its support edge from ``phi0`` (rad past balance, at
    rest): returns per-step contact forces on the support, vertical ``N`` (down on the
    support) and horizontal ``F`` (on the support, positive along the fall direction),
    until the contact force vanishes (the group leaves), the COM's downward speed then, and
    the group's angle and angular speed at that moment (its pose as it leaves).

    Rigid body about a fixed edge: ``rho2 phi'' = g h_c sin phi`` (``rho2 = I_pivot/m``);
    the contact force is ``m (a_com + g)``: ``N = m (g - h_c (phi'' sin phi + phi'^2 cos phi))``,
    horizontal ``m h_c (phi'' cos phi - phi'^2 sin phi)``, pushing the support *against* the
    fall while the group accelerates outward. Friction caps the horizontal force at
    ``mu N`` (the edge slips); the group leaves when ``N`` reaches zero (for a uniform tall
    group near ``cos phi = 1/3``, about 70 degrees), or, for a group whose inertia keeps
    ``N`` just above zero, when its bottom face has turned vertical and it slides off
    the edge (``phi = pi / 2``), its remaining load released at once. Simplification:
    friction is checked in the support's frame, not the turning face's, so slip-off at
    moderate angles is not modelled (it would make departures, if anything, more
    abrupt)."""
    phi, w = phi0, 0.0
    ns, fs = [], []
    k = G * h_c / rho2
    while True:
        # semi-implicit Euler on a 0.6 ms grid: the motion's time scale is ~50 ms
        a = k * math.sin(phi)
        n = m * (G - h_c * (a * math.sin(phi) + w * w * math.cos(phi)))
        if n <= 0.0 or phi >= math.pi / 2:
            break
        fh = m * h_c * (a * math.cos(phi) - w * w * math.sin(phi))
        fh = max(-mu * n, min(mu * n, fh))
        ns.append(n)
        fs.append(-fh)
        w += a * dt
        phi += w * dt
    v_down = h_c * w * math.sin(phi)
    return np.array(ns), np.array(fs), v_down, phi, w


def _fall(sc: _Scene, rng: random.Random, stack: list[_Block], t0: float) -> dict[str, Any]:
    """The top ``k`` blocks (a rigid group) tip over their support's edge from t0,
    leave the stack when their contact force vanishes, fly, land and bounce.

    A stack falls because a group's centre of mass has crept over the edge of what
    carries it: the group then escapes that unstable balance exponentially, from a
    small angle ``phi0`` (log-uniform 0.003-0.03 rad; smaller angles only add quiet
    time before t0). So the edge is taken under the group's centre of mass ``r_f``, and
    the group's load, ``m g`` at ``r_f`` while it stood, becomes the contact force at the
    edge: ``N`` there, and the friction force at the support's height, whose lever
    about the feet is the support's height plus ``LEVER_BELOW_TOP``. Both go to zero as
    the group leaves (the truth time, R-BLOCKOUT-3). Wood on wood ``mu`` 0.25-0.5
    (static friction, engineering tables)."""
    k = len(stack) if rng.random() < 0.5 else rng.randint(1, len(stack))
    group = stack[-k:]
    m_f = sum(b.mass for b in group)
    r_f = sum(b.mass * b.r for b in group) / m_f
    z_s = group[0].z
    h_c = sum(b.mass * (b.z - z_s + b.height / 2) for b in group) / m_f
    inertia = sum(b.mass * ((BLOCK_WIDTH**2 + b.height**2) / 12 + (b.z - z_s + b.height / 2) ** 2) for b in group)
    phi0 = math.exp(rng.uniform(math.log(0.003), math.log(0.03)))
    mu = rng.uniform(0.25, 0.5)
    u = _unit(rng)
    ns, fs, v_down, phi_d, w_d = _tip(m_f, h_c, inertia / m_f, phi0, mu, sc.dt)
    t_leave = t0 + len(ns) * sc.dt
    lever = z_s + LEVER_BELOW_TOP
    sl_after = sc.span(t0, sc.n / sc.fs)
    sc.force[sl_after] -= m_f * G
    sc.moment[sl_after] -= m_f * G * r_f
    i0 = sc.idx(t0)
    i1 = min(sc.n, i0 + len(ns))
    ns, fs = ns[: i1 - i0], fs[: i1 - i0]
    sc.force[i0:i1] += ns
    sc.moment[i0:i1] += ns[:, None] * r_f[None, :] + (fs * lever)[:, None] * u[None, :]
    impacts = []
    half = BLOCK_WIDTH / 2
    for j, b in enumerate(group):
        # Each block starts from its pose as the group leaves (angle phi_d about the
        # edge: its centre ``d`` up the group's axis and ``half`` inside the edge), with
        # the downward speed the rotation gives it, and falls to where the toppled group
        # lays it: about ``d`` outward of the edge, a little further the higher the
        # group fell from. Within the base's half-width it lands on the base (lying on a
        # side, centre ``half`` above it), else on the table TABLE_BELOW_TOP lower. A
        # short or low group therefore always lands on the base: a block can only fall
        # as far as it reaches.
        d = b.z - z_s + b.height / 2
        x_out = d * math.sin(phi_d) - half * math.cos(phi_d)
        height = z_s + d * math.cos(phi_d) + half * math.sin(phi_d)
        v0 = max(0.0, w_d * x_out)
        r_land = r_f + u * (d + rng.uniform(0.3, 1.0) * z_s)
        on_base = float(np.linalg.norm(r_land)) < BASE_HALF
        drop = max(0.0005, height - half + (0.0 if on_base else TABLE_BELOW_TOP))
        v = math.sqrt(v0 * v0 + 2 * G * drop)
        t_land = t_leave + rng.uniform(0, 0.04) * j + (v - v0) / G
        gain = rng.uniform(1500, 3000) if on_base else rng.uniform(200, 500)
        e = rng.uniform(0.2, 0.45)
        for bounce in range(3):
            p = b.mass * v * (1 + e)
            ddir = np.array([rng.gauss(0, 0.4), rng.gauss(0, 0.4), 1.0])
            sc.add_ring(t_land, gain * p, rng.uniform(80, 180), rng.uniform(0.004, 0.012), ddir)
            if on_base:
                sc.add_pulse(t_land, p, r_land, dur=0.002)
            else:
                sc.kick_z[sc.idx(t_land)] += rng.gauss(0, 0.002) * p / 0.01
            impacts.append(t_land)
            v *= e
            t_land += 2 * v / G
        if on_base:
            sc.add_static_load(t_land, b.mass, r_land)
    return {"t_leave": t_leave, "t_impact": min(impacts), "last_impact": max(impacts), "blocks": k,
            "tip_s": t_leave - t0, "phi0": phi0, "mu": mu, "group_mass": m_f, "support_height": z_s}


def _settle_time(t: np.ndarray, level: np.ndarray, after: float, cfg: StabilityConfig) -> float | None:
    """First moment after ``after`` from which the motion level stays below
    ``settle_level`` for ``hold_s``: the stack has settled (R-BLOCKOUT-3)."""
    i = int(np.searchsorted(t, after))
    below = level[i:] < cfg.settle_level
    hold = int(round(cfg.hold_s * float(1.0 / np.median(np.diff(t[:50])))))
    run = 0
    for k, b in enumerate(below.tolist()):
        run = run + 1 if b else 0
        if run > hold:
            return float(t[i + k - run + 1])
    return None


def _truth(placed: list[dict[str, Any]], plans: list[tuple[float, float, float]], fall: dict[str, Any] | None,
           t: np.ndarray, clean: np.ndarray, rate: float, cfg: StabilityConfig) -> list[dict[str, Any]]:
    level = motion_level(clean, rate, cfg)
    out: list[dict[str, Any]] = []
    t_leave = fall["t_leave"] if fall else math.inf
    for ev, (contact, release, release_end) in zip(placed, plans):
        if contact >= t_leave:
            break
        out.append(ev)
        if t_leave <= release_end:
            break
        settle = _settle_time(t, level, release_end, cfg)
        if settle is None:
            break
        if settle >= t_leave:
            break
        out.append({"kind": "stability", "event": "counting", "t": round(settle, 6)})
        if settle + COUNT_S <= t_leave:
            out.append({"kind": "stability", "event": "stood", "t": round(settle + COUNT_S, 6)})
    if fall:
        out.append({"kind": "stability", "event": "fell", "t": round(t_leave, 6),
                    "t_impact": round(fall["t_impact"], 6), "blocks": fall["blocks"]})
    return out


def main(argv: list[str] | None = None) -> int:
    """``python -m device.tracesim --seed N --out DIR``: write a fixture folder."""
    import argparse  # noqa: PLC0415

    p = argparse.ArgumentParser(description="simulate a Block Out! accelerometer trace")
    p.add_argument("--seed", type=int, required=True)
    p.add_argument("--out", type=Path, required=True)
    p.add_argument("--chip", choices=sorted(CHIPS))
    p.add_argument("--placements", type=int)
    p.add_argument("--fall", choices=FALL_KINDS)
    a = p.parse_args(argv)
    tr = simulate(a.seed, a.chip, placements=a.placements, fall=a.fall)
    tr.write_fixture(a.out)
    print(f"{a.out}: {len(tr.t)} samples, {len(tr.events)} true events, {tr.meta['disturbances']}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
