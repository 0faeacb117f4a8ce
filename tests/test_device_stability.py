"""Block Out! stability detector (R-BLOCKOUT-3, R-BLOCKOUT-4) and the trace simulator.

Seeds used here and while tuning are below 10 000; bench/stability.py uses 20 000+ (held out).
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from device.accelcsv import read_csv
from device.stability import (StabilityConfig, StabilityDetector, _trailing_var, _WeightedWindow, detect,
                              motion_level, settle_weights)
from device.tracesim import BLOCK_WIDTH, CHIPS, _tip, simulate

FIXTURES = Path(__file__).parent / "fixtures" / "blockout"
MINE = ["fall-during-count", "knocks-then-stood", "elbow-then-stood", "fall-while-placing"]
G = 9.80665


def _run(trace, cfg=StabilityConfig(), **kw):
    return detect(zip(trace.t, trace.acc[:, 0], trace.acc[:, 1], trace.acc[:, 2]), cfg, **kw)


def _match(truth, events):
    """Compare per R-BLOCKOUT-3: same sequence; count start within 30 ms; fall between
    the block leaving and shortly after its landing."""
    assert [e["event"] for e in events] == [e["event"] for e in truth], (truth, events)
    for want, got in zip(truth, events):
        if want["event"] in ("counting", "stood"):
            assert abs(got["t"] - want["t"]) <= 0.03, (want, got)
        elif want["event"] == "fell":
            assert want["t"] - 0.05 <= got["t"] <= want["t_impact"] + 0.7, (want, got)
            assert got["detected"] >= got["t"]
        else:
            assert abs(got["t"] - want["t"]) <= 0.15, (want, got)


@pytest.mark.parametrize("name", MINE)
def test_committed_fixtures_replay_to_their_truth(name):
    folder = FIXTURES / name
    truth = [json.loads(x) for x in (folder / "truth.jsonl").read_text().splitlines() if x.strip()]
    events = detect(read_csv(folder / "accel.csv"))
    _match(truth, events)
    for e in events:
        assert e["kind"] == "stability" and isinstance(e["t"], float)


@pytest.mark.parametrize("seed", range(20, 32))
def test_simulated_traces_against_truth(seed):
    tr = simulate(seed)
    _match(tr.events, _run(tr))


def test_stood_is_three_seconds_after_counting_R_BLOCKOUT_3():
    tr = simulate(211, placements=1, fall="none")
    ev = _run(tr)
    counting = [e for e in ev if e["event"] == "counting"]
    stood = [e for e in ev if e["event"] == "stood"]
    assert counting and stood
    assert stood[0]["t"] == pytest.approx(counting[0]["t"] + 3.0, abs=1e-6)
    ev2 = _run(tr, StabilityConfig(count_s=2.0))
    c2 = [e for e in ev2 if e["event"] == "counting"][0]
    s2 = [e for e in ev2 if e["event"] == "stood"][0]
    assert s2["t"] == pytest.approx(c2["t"] + 2.0, abs=1e-6)


# -- hand-made signals: one signature at a time --------------------------------------


def _quiet(seconds, rate=500.0, seed=0, tilt=(0.1, -0.05)):
    rng = np.random.default_rng(seed)
    t = np.arange(1, int(seconds * rate) + 1) / rate
    acc = np.tile([tilt[0], tilt[1], G], (len(t), 1)) + rng.normal(0, 0.066, (len(t), 3))
    return t, acc


def _ring(t, acc, t0, amp, f=110.0, tau=0.012):
    s = t - t0
    m = s >= 0
    acc[m, 2] += amp * np.exp(-s[m] / tau) * np.sin(2 * math.pi * f * s[m])
    acc[m, 0] += 0.3 * amp * np.exp(-s[m] / tau) * np.sin(2 * math.pi * f * s[m] + 1)


def _events(t, acc, cfg=StabilityConfig(), **kw):
    return detect(np.column_stack([t, acc]), cfg, **kw)


def test_a_knock_on_the_table_changes_nothing():
    t, acc = _quiet(6)
    _ring(t, acc, 3.0, 6.0)  # one short impulse, tilt unchanged
    assert _events(t, acc) == []


def test_an_elbow_tilting_the_table_changes_nothing():
    t, acc = _quiet(8)
    ramp = np.clip((t - 3.0) / 0.3, 0, 1) - np.clip((t - 5.0) / 0.3, 0, 1)
    acc[:, 0] += 0.015 * ramp  # 0.09 degree
    assert _events(t, acc) == []


def _fall_signal():
    t, acc = _quiet(6)
    acc[t > 3.0, 1] += 0.12  # the base's resting tilt moves as blocks leave
    for k, t0 in enumerate((3.15, 3.22, 3.27, 3.35)):  # blocks land and bounce
        _ring(t, acc, t0, 4.0 / (k + 1))
    return t, acc


def test_tilt_change_and_train_of_impacts_is_a_fall():
    t, acc = _fall_signal()
    ev = _events(t, acc)
    assert [e["event"] for e in ev] == ["fell"]
    assert ev[0]["t"] == pytest.approx(3.15, abs=0.01)
    assert ev[0]["detected"] - ev[0]["t"] < 0.1


def test_camera_that_still_sees_the_stack_vetoes_a_fall():
    t, acc = _fall_signal()
    calls = []

    def same_height(when):
        calls.append(when)
        return 4.0

    assert _events(t, acc, stack_height=same_height) == []
    assert calls
    lower = _events(t, acc, stack_height=lambda when: 4.0 if when < 3.1 else 1.0)
    assert [e["event"] for e in lower] == ["fell"]
    unseen = _events(t, acc, stack_height=lambda when: None)
    assert [e["event"] for e in unseen] == ["fell"]


def test_a_broken_camera_hook_does_not_break_the_detector():
    t, acc = _fall_signal()

    def boom(when):
        raise RuntimeError("vision crashed")

    assert [e["event"] for e in _events(t, acc, stack_height=boom)] == ["fell"]


def test_thresholds_are_configuration():
    t, acc = _quiet(6)
    _ring(t, acc, 3.0, 6.0)
    _ring(t, acc, 3.45, 6.0)  # a second impact: a train (default train_s 0.6)
    assert [e["event"] for e in _events(t, acc)] == ["fell"]
    assert _events(t, acc, StabilityConfig(train_s=0.2)) == []  # two separate knocks
    assert _events(t, acc, StabilityConfig(impact_level=50.0)) == []


def test_rate_is_inferred_or_given():
    tr = simulate(7, placements=1, fall="count")
    a = _run(tr)
    b = _run(tr, StabilityConfig(rate_hz=tr.rate))
    assert a == b


# -- simulator ------------------------------------------------------------------------


def test_simulation_is_deterministic_and_seeded():
    a, b, c = simulate(3), simulate(3), simulate(4)
    assert np.array_equal(a.acc, b.acc) and a.events == b.events
    assert a.acc.shape != c.acc.shape or not np.array_equal(a.acc, c.acc)


@pytest.mark.parametrize("chip", sorted(CHIPS))
def test_simulated_noise_is_the_chip_noise_floor(chip):
    tr = simulate(11, chip=chip)
    quiet = tr.t < 1.0
    sd = (tr.acc[quiet] - tr.clean[quiet]).std(axis=0)
    assert sd == pytest.approx(CHIPS[chip]["sigma"], rel=0.15)
    assert tr.rate == CHIPS[chip]["rate"]


def test_truth_settle_is_the_motion_level_crossing():
    tr = simulate(211, placements=1, fall="none")
    cfg = StabilityConfig()
    level = motion_level(tr.clean, tr.rate, cfg)
    t_settle = [e["t"] for e in tr.events if e["event"] == "counting"][0]
    i = int(np.searchsorted(tr.t, t_settle))
    hold = int(cfg.hold_s * tr.rate)
    assert (level[i : i + hold] < cfg.settle_level).all()
    assert level[i - 1] >= cfg.settle_level


def _ring_down_trace(noise_seed, rate=500.0):
    """A hand wobbling a block on the base for 1 s, letting go over 30 ms, then the
    base ringing down freely (10 and 12.5 Hz rocking, damping ratio 0.08 and 0.1) under
    MPU-6050-like noise; and the true settle time (R-BLOCKOUT-3), the noise-free
    motion level's crossing, as the simulator defines it."""
    cfg = StabilityConfig()
    t = np.arange(1, int(6.0 * rate) + 1) / rate
    clean = np.tile([0.1, -0.05, G], (len(t), 1))
    t_on, t_rel = 1.5, 2.5
    hand = (t >= t_on) & (t < t_rel)
    env = np.clip((t_rel - t[hand]) / 0.03, 0, 1)
    clean[hand, 0] += 0.6 * env * np.sin(2 * math.pi * 6.0 * (t[hand] - t_on))
    clean[hand, 1] += 0.4 * env * np.sin(2 * math.pi * 4.5 * (t[hand] - t_on) + 1.0)
    free = t >= t_rel
    s = t[free] - t_rel
    for ax, (f, zeta, amp) in enumerate(((10.0, 0.08, 1.0), (12.5, 0.1, 0.8))):
        w = 2 * math.pi * f
        clean[free, ax] += amp * np.exp(-zeta * w * s) * np.sin(w * s)
    below = motion_level(clean, rate, cfg) < cfg.settle_level
    hold = int(round(cfg.hold_s * rate))
    i = int(np.searchsorted(t, t_rel))
    truth = next(float(t[k]) for k in range(i, len(t)) if below[k : k + hold + 1].all())
    acc = clean + np.random.default_rng(noise_seed).normal(0, 0.066, clean.shape)
    return t, acc, truth


def test_settle_time_from_the_fitted_ring_down_is_within_10ms_R_BLOCKOUT_3():
    """The count starts at the true settle (R-BLOCKOUT-3). The noisy S's own crossing
    (settle_fit_s=0) errs by up to ~15 ms on a slowly decaying ring; the free ring-down
    fitted back to the release (the default) keeps every one of these within 10 ms."""
    fitted, raw = [], []
    for noise_seed in range(12):
        t, acc, truth = _ring_down_trace(noise_seed)
        for cfg, errs in ((StabilityConfig(), fitted), (StabilityConfig(settle_fit_s=0.0), raw)):
            ev = detect(zip(t, acc[:, 0], acc[:, 1], acc[:, 2]), cfg)
            assert [e["event"] for e in ev] == ["placed", "counting", "stood"]
            errs.append(ev[1]["t"] - truth)
    assert max(abs(e) for e in fitted) <= 0.010
    assert sum(abs(e) for e in fitted) < sum(abs(e) for e in raw)
    assert max(abs(e) for e in raw) > 0.010  # the case is a hard one for the old estimate


def _ring_down_settle(cfg, rate, f, zeta, phase):
    """The settle time (noise-free motion level's crossing, held hold_s) of a base
    released at 0.5 s to ring down freely: one rocking mode ``f`` Hz, damping ratio
    ``zeta``, starting at ``phase``."""
    t = np.arange(1, int(2.5 * rate) + 1) / rate
    clean = np.tile([0.1, -0.05, G], (len(t), 1))
    free = t >= 0.5
    w = 2 * math.pi * f
    clean[free, 0] += 2.0 * np.exp(-zeta * w * (t[free] - 0.5)) * np.sin(w * (t[free] - 0.5) + phase)
    below = motion_level(clean, rate, cfg) < cfg.settle_level
    hold = int(round(cfg.hold_s * rate))
    return next(float(t[k]) for k in range(len(t)) if t[k] > 0.5 and below[k : k + hold + 1].all())


@pytest.mark.parametrize("rate", [500.0, 400.0])
def test_settle_time_follows_the_ring_downs_envelope_not_its_phase_R_BLOCKOUT_3(rate):
    """Settled (R-BLOCKOUT-3) = the stack's wobble energy below settle_level. Free
    ring-downs with the same envelope but a different phase settle at the same moment
    (within a sample) under the default raised-cosine window; with a rectangular one
    (settle_taper=0), holding 2-3 rocking periods, the crossing jumps by 8-20 ms with
    the phase at which the window's edges cut the wobble."""
    phases = np.linspace(0, 2 * math.pi, 12, endpoint=False)
    for f, zeta in ((9.0, 0.08), (12.0, 0.12), (15.0, 0.16)):
        hann = [_ring_down_settle(StabilityConfig(), rate, f, zeta, p) for p in phases]
        rect = [_ring_down_settle(StabilityConfig(settle_taper=0.0), rate, f, zeta, p) for p in phases]
        assert max(hann) - min(hann) <= 1.0 / rate + 1e-9, (f, zeta, hann)
        assert max(rect) - min(rect) >= 0.008, (f, zeta, rect)  # the premise


def test_detectors_settle_window_is_the_reference_definition():
    """The detector's running settle level is motion_level's weighted variance, sample
    for sample, for any taper (the noise variance it removes is measured on the same
    weights during calibration)."""
    rng = np.random.default_rng(3)
    x = rng.normal(0, 0.3, (5000, 3)) + np.array([0.1, -0.05, G])
    x[2500:, 0] += 0.5  # the tilt steps
    for taper in (0.0, 0.5, 1.0):
        win = _WeightedWindow(125, taper)
        ref = _trailing_var(x, settle_weights(125, taper))
        got = []
        for row in x:
            win.push(row)
            got.append(win.var())
        assert got[:124] == [0.0] * 124  # not yet a whole window
        assert got[124:] == pytest.approx(ref[124:], rel=1e-9)  # past a drift reset (4096) too
    assert settle_weights(125, 0.0) == pytest.approx(np.full(125, 1 / 125))
    hann = settle_weights(125, 1.0)
    assert hann.sum() == pytest.approx(1.0) and hann.min() > 0 and hann[0] < 1e-3 * hann.max()
    with pytest.raises(ValueError, match="settle_taper must be between 0 and 1"):
        StabilityConfig().with_overrides({"settle_taper": 1.5})


@pytest.mark.parametrize("seed", [1028, 1089])
def test_count_start_within_10ms_where_the_rectangular_window_missed_R_BLOCKOUT_3(seed):
    """Development seeds 1028 and 1089: under the rectangular window's definition of
    settled (settle_taper=0, truth and detector alike) a count started 16 ms off its
    true settle, the crossing of a level that sways with the wobble's phase; under the
    default raised-cosine window every count is within 10 ms."""
    rect = StabilityConfig(settle_taper=0.0)
    for cfg in (rect, StabilityConfig()):
        tr = simulate(seed, cfg=cfg)
        truth = [e["t"] for e in tr.events if e["event"] == "counting"]
        got = [e["t"] for e in _run(tr, cfg) if e["event"] == "counting"]
        assert len(got) == len(truth) > 0
        errs = [abs(g - w) for g, w in zip(got, truth)]
        if cfg is rect:
            assert max(errs) > 0.012  # the premise
        else:
            assert max(errs) <= 0.010 + 1e-9, errs


def test_placement_tilts_the_base_slightly():
    """table-kit.md: the stack's load tilts the base a fraction of a degree."""
    tr = simulate(211, placements=1, fall="none")
    placed = tr.events[0]["t"]
    before = tr.clean[tr.t < placed - 0.1][-200:, :2].mean(axis=0)
    after = tr.clean[tr.t > tr.events[-1]["t"]][:200, :2].mean(axis=0)
    shift = np.degrees(np.linalg.norm(after - before) / G)
    assert 0.001 < shift < 1.0


@settings(max_examples=4, deadline=None)
@given(st.integers(min_value=0, max_value=9_999))
def test_event_grammar_holds_on_any_trace(seed):
    """placed before counting before stood; stood exactly count_s after counting;
    detection never precedes the event time except for the count start."""
    ev = _run(simulate(seed))
    state = "idle"
    last_count = None
    for e in ev:
        if e["event"] == "placed":
            assert state in ("idle", "fallen")
            state = "placing"
        elif e["event"] == "counting":
            assert state == "placing"
            state, last_count = "counting", e["t"]
        elif e["event"] == "stood":
            assert state == "counting" and e["t"] == pytest.approx(last_count + 3.0, abs=1e-6)
            state = "idle"
        else:
            state = "fallen"
        assert e["detected"] >= e["t"] - 1e-9


def test_detector_is_incremental():
    tr = simulate(200, placements=1)
    det = StabilityDetector()
    inc = []
    for row in zip(tr.t, tr.acc[:, 0], tr.acc[:, 1], tr.acc[:, 2]):
        inc += det.update(*row)
        for e in inc:
            assert e["detected"] <= row[0] + 1e-9  # nothing is decided from the future
    inc += det.finish()
    assert inc == _run(tr)


# -- the departure signature (R-BLOCKOUT-3: the stack falls when a block leaves it) ---


def test_tipping_group_loads_its_edge_within_friction_and_leaves_when_contact_ends():
    """A tipping group presses on its support's edge (N), pushes it back by friction
    no more than mu N, and leaves when N reaches zero: the departure."""
    m, h, mu = 0.043, 0.05, 0.3
    rho2 = (BLOCK_WIDTH**2 + (2 * h) ** 2) / 12 + h * h
    ns, fs, v_down, phi, w = _tip(m, h, rho2, 0.01, mu, 1 / 1600)
    assert ns[0] == pytest.approx(m * G, rel=1e-3)  # at first it still carries its weight
    assert (ns > 0).all() and ns[-1] < 0.3 * m * G  # slides off its face, most load gone
    assert (np.abs(fs) <= mu * ns + 1e-12).all()
    assert fs.min() < -0.1 * m * G  # the reaction pushes the support against the fall
    assert 0.1 < len(ns) / 1600 < 1.0 and v_down > 0
    assert 0.9 < phi <= math.pi / 2 + 0.02 and w > 0  # leaves well over (within a step), turning


def test_a_departure_moves_the_base_before_the_impact():
    """The base's tilt follows the group's contact force while it tips, before any
    impact: the simulator carries the departure signature, no marker."""
    tr = simulate(29)
    fell = [e for e in tr.events if e["event"] == "fell"][0]
    tip = tr.meta["fall_detail"]["tip_s"]
    rest = tr.clean[(tr.t > fell["t"] - tip - 0.4) & (tr.t < fell["t"] - tip), :2].mean(axis=0)
    tipping = tr.clean[(tr.t > fell["t"] - 0.1) & (tr.t < fell["t"]), :2]
    assert np.linalg.norm(tipping - rest, axis=1).max() > 0.05
    assert fell["t_impact"] > fell["t"] + 0.05


def test_tilt_step_before_a_lone_impulse_is_a_fall_at_once():
    """A lone impulse is a knock unless the base's load moved just before it."""
    t, acc = _quiet(6)
    acc[(t > 2.93) & (t < 3.03), 1] += 0.1  # the group tipping, then gone
    _ring(t, acc, 3.035, 6.0)
    ev = _events(t, acc)
    assert [e["event"] for e in ev] == ["fell"]
    assert ev[0]["detected"] - ev[0]["t"] < 0.01
    _, quiet = _quiet(6)
    _ring(t, quiet, 3.035, 6.0)
    assert _events(t, quiet) == []


@pytest.mark.parametrize("seed", [539, 647])  # premise asserted below (sim seeds re-picked when lone-block falls were dropped)
def test_small_block_falling_from_a_low_stack_is_detected(seed):
    tr = simulate(seed, placements=1, fall="count")
    assert tr.meta["fall_detail"]["group_mass"] < 0.01 and tr.meta["fall_detail"]["support_height"] <= 0.05
    _match(tr.events, _run(tr))


@pytest.mark.parametrize("seed,kind", [(333, "knock"), (340, "knock"), (322, "elbow"), (368, "elbow")])
def test_knock_or_elbow_during_the_count_is_not_a_fall(seed, kind):
    tr = simulate(seed, placements=1)
    counting = [e["t"] for e in tr.events if e["event"] == "counting"][0]
    assert any(d["type"] == kind and counting < d["t"] < counting + 3.0 for d in tr.meta["disturbances"])
    _match(tr.events, _run(tr))


@pytest.mark.parametrize("seed", [501, 502])
def test_placing_hands_wobble_is_not_a_fall(seed):
    tr = simulate(seed, placements=3, fall="none")
    ev = _run(tr)
    assert not [e for e in ev if e["event"] == "fell"]
    _match(tr.events, ev)


def test_the_hands_release_is_not_a_fall_but_a_landing_under_the_hand_is_R_BLOCKOUT_3():
    """Seed 1093 (a "hold" fall on its third placement): the hand lets go of the first
    block while the base rocks hard under its tremor; taking that force off in 10-30 ms
    puts a short transient just over impact_snr in the high band, with the detector still
    "placing". It is not a fall (the stood that follows counts); the knocked-off blocks'
    landing under the hand later rings far above hand_impact_snr and is a fall at once."""
    tr = simulate(1093)
    first_count = [e["t"] for e in tr.events if e["event"] == "counting"][0]
    old = _run(tr, StabilityConfig(hand_impact_snr=StabilityConfig().impact_snr))
    assert [e for e in old if e["event"] == "fell" and e["t"] < first_count]  # the premise
    ev = _run(tr)
    _match(tr.events, ev)
    fell = [e for e in ev if e["event"] == "fell"][0]
    truth = [e for e in tr.events if e["event"] == "fell"][0]
    assert tr.meta["fall"] == "hold" and fell["why"] == "impact with the hand on the stack"
    assert fell["detected"] - truth["t_impact"] < 0.01


def test_a_light_block_knocked_off_by_the_placing_hand_is_a_fall_R_BLOCKOUT_3():
    """Seed 1639: an 8.6 g block leaves the stack under the hand and lands on the table,
    the weakest such landing on the development seeds (just over hand_impact_snr); no
    bounce or tilt change follows (the block that left is the one being placed), so
    only the hand rule catches it."""
    tr = simulate(1639)
    assert tr.meta["fall"] == "hold" and tr.meta["fall_detail"]["group_mass"] < 0.01
    ev = _run(tr)
    _match(tr.events, ev)
    assert ev[-1]["why"] == "impact with the hand on the stack"


# -- impacts judged against the chip's own noise and the ring's envelope ---------------


@pytest.mark.parametrize("noise_seed", range(4))
def test_a_knocks_ring_does_not_come_back_as_a_second_impact(noise_seed):
    """A weak, slowly decaying knock (two tones, as a table rings) fades through the
    noise; its tail never rises out of its own envelope, so it is no train of impacts
    and no fall. A bounce after the ring has died is a new impact: a train, decided at
    the bounce's onset."""
    t, acc = _quiet(6, seed=noise_seed)
    _ring(t, acc, 3.0, 1.6, f=65.0, tau=0.02)
    _ring(t, acc, 3.0, 0.6, f=105.0, tau=0.008)
    assert _events(t, acc) == []
    _ring(t, acc, 3.07, 1.0, f=120.0, tau=0.006)
    ev = _events(t, acc)
    assert [e["event"] for e in ev] == ["fell"]
    assert ev[0]["t"] == pytest.approx(3.0, abs=0.01)
    assert 3.07 <= ev[0]["detected"] <= 3.08


def test_impact_trigger_follows_the_measured_noise_floor():
    """The impulse trigger is a multiple of the high-band noise measured during the
    initial still period, so a noisier chip does not fire on its own noise peaks and a
    quieter one still hears a small impact."""
    t, acc = _quiet(6)
    _ring(t, acc, 3.0, 1.2)
    _ring(t, acc, 3.2, 1.2)
    assert [e["event"] for e in _events(t, acc)] == ["fell"]
    noisy = acc + np.random.default_rng(5).normal(0, 0.2, acc.shape)  # ~3x the noise
    assert _events(t, noisy) == []  # its peaks pass 0.8, the old fixed trigger
    fixed = StabilityConfig(hf_noise_rms=0.1)  # noise floor given, not measured
    assert [e["event"] for e in _events(t, noisy, fixed)] != []


def test_a_weak_low_knock_at_the_adxl345_noise_floor_is_not_a_train():
    """A weak 60 Hz table knock (the high-pass halves it) fades into the ADXL345's
    noise (400 Hz, 1.5/1.5/2.2 LSB rms, 3.9 mg LSB): its tail plus a noise peak can
    pass a fixed bounce level after a calm gap (the detector before the ring envelope
    took one of these twelve for a fall), but never rises out of the ring's envelope."""
    lsb = 0.0039 * G
    for seed in range(12):
        rng = np.random.default_rng(seed)
        t = np.arange(1, 4 * 400 + 1) / 400.0
        acc = np.tile([0.1, -0.05, G], (len(t), 1)) + rng.normal(0, 1, (len(t), 3)) * np.array([1.5, 1.5, 2.2]) * lsb
        _ring(t, acc, 2.0, 2.2, f=60.0, tau=0.02)
        _ring(t, acc, 2.0, 0.88, f=90.0, tau=0.008)
        acc = np.round(acc / lsb) * lsb
        assert _events(t, acc) == [], seed


def test_an_impact_on_the_base_itself_is_a_fall_at_once():
    """A block landing on the base rings it at well over 1 g at the sensor; a knock on
    the table reaches it through the soft feet far weaker. So a lone impact that
    reaches ``base_hit_g`` out of a still base is a fall, decided within a few
    samples of its onset rather than at the next bounce or after the tilt settles;
    the same ring at half a g is a knock and changes nothing."""
    for noise_seed in range(3):
        t, acc = _quiet(6, seed=noise_seed)
        hit = acc.copy()
        _ring(t, hit, 3.0, 25.0)  # peaks at ~1.4 g through the high-pass
        ev = _events(t, hit)
        assert [e["event"] for e in ev] == ["fell"], noise_seed
        assert ev[0]["why"] == "impact on the base itself"
        assert ev[0]["t"] == pytest.approx(3.0, abs=0.004)
        assert ev[0]["detected"] - ev[0]["t"] <= 0.006
        knock = acc.copy()
        _ring(t, knock, 3.0, 5.0)
        assert _events(t, knock) == [], noise_seed


def test_base_hit_level_is_configuration_and_the_camera_still_vetoes_it():
    t, acc = _quiet(6)
    _ring(t, acc, 3.0, 25.0)
    assert _events(t, acc, StabilityConfig(base_hit_g=3.0)) == []  # a lone impulse, tilt unchanged
    assert _events(t, acc, stack_height=lambda when: 4.0) == []  # the camera sees the stack whole
    assert [e["event"] for e in _events(t, acc, stack_height=lambda when: 4.0 if when < 2.95 else 2.0)] == ["fell"]


def test_overrides_are_checked_and_leave_the_defaults_alone():
    base = StabilityConfig()
    cfg = base.with_overrides({"base_hit_g": 2, "hf_noise_rms": None, "settle_level": 0.25})
    assert (cfg.base_hit_g, cfg.hf_noise_rms, cfg.settle_level) == (2.0, None, 0.25)
    assert base.base_hit_g == 1.0 and cfg.train_s == base.train_s
    for bad, why in (({"bogus": 1}, "unknown threshold 'bogus'"), ({"train_s": -0.1}, "train_s must be a number >= 0"),
                     ({"train_s": None}, "train_s must be a number"), ({"rate_hz": 0}, "rate_hz must be above 0"),
                     ({"count_s": float("nan")}, "count_s must be a number"), ({"hold_s": True}, "hold_s")):
        with pytest.raises(ValueError, match=why):
            base.with_overrides(bad)


def test_settings_are_name_value_pairs_of_the_same_checks():
    """``--set NAME=VALUE`` (bloxcam stability, bench/stability.py) is with_overrides of
    the parsed numbers; ``none`` for a field measured when None."""
    base = StabilityConfig()
    cfg = base.with_settings(["base_hit_g=2", "hf_noise_rms=none", "settle_level=0.25"])
    assert cfg == base.with_overrides({"base_hit_g": 2, "hf_noise_rms": None, "settle_level": 0.25})
    for bad, why in ((["train_s"], "wants NAME=VALUE"), (["train_s=x"], "'x' is not a number"),
                     (["bogus=1"], "NAME=VALUE: unknown threshold 'bogus'"), (["train_s=-1"], "train_s must be")):
        with pytest.raises(ValueError, match=why):
            base.with_settings(bad)


# -- issue 10: faults found on the development seeds 1000-1999 ---------------------------


def test_a_weak_knock_whose_first_peak_misses_the_impulse_level_is_not_a_fall():
    """Seed 1250: a weak table knock (amp 1.7) while the stack rests; its ring reaches
    impact_snr only on its third sample, 12 ms after its onset. The windows read before
    an impulse must end before the impact began (rise_s + precursor_gap_s), else the
    knock's own first samples look like the base moving before it, and a knock becomes a
    fall. The stack's real fall later is still caught."""
    tr = simulate(1250)
    knock = [d["t"] for d in tr.meta["disturbances"] if d["type"] == "knock"][0]
    fell = [e for e in tr.events if e["event"] == "fell"][0]
    assert knock < fell["t"] - 1.0  # the premise: a knock well before the fall
    ev = _run(tr)
    assert not [e for e in ev if e["event"] == "fell" and abs(e["t"] - knock) < 0.1]
    _match(tr.events, ev)


@pytest.mark.parametrize("seed", [1641, 1951])
def test_blocks_landing_within_each_others_ring_are_a_fall_R_BLOCKOUT_3(seed):
    """Seeds 1641, 1951: a two-block group tips off a low support during the count and
    both land on the base within a few tens of ms. No landing rises out of the windowed
    envelope of the rings before it, nor reaches base_hit_g, and the group lands near
    where it stood (tilt nearly unchanged); but the base rings far longer than one
    impact's ring can (its peak decaying at ring_tau_s), which is a fall, decided within
    about 50 ms of the first landing."""
    tr = simulate(seed)
    truth = [e for e in tr.events if e["event"] == "fell"][0]
    assert tr.meta["fall"] == "count" and tr.meta["fall_detail"]["blocks"] == 2
    ev = _run(tr)
    _match(tr.events, ev)
    fell = [e for e in ev if e["event"] == "fell"][0]
    assert fell["why"] == "ring outlasting one impact"
    assert fell["detected"] - truth["t_impact"] < 0.06
    assert [e for e in _run(tr, StabilityConfig(ring_tau_s=0)) if e["event"] == "fell"] == []  # the rule does it


def test_a_gentle_hand_is_placed_when_its_motion_began():
    """Seed 1013: the first placement's hand holds the motion level around active_level
    for most of a second before it confirms; the block was set (the hand's contact) when
    the motion began, not 0.8 s later (place_onset_level)."""
    tr = simulate(1013)
    want = [e["t"] for e in tr.events if e["event"] == "placed"][0]
    got = [e["t"] for e in _run(tr) if e["event"] == "placed"][0]
    assert abs(got - want) < 0.05
