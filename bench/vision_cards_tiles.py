"""Bloxo card and Blockers! tile recognition (issue 9): accuracy on freshly rendered
scenes and time per frame on one core.

    python bench/vision_cards_tiles.py [--setups 3] [--seed 7000000] [--speed-only] [--games bloxo,blockers] [--out FILE]

Accuracy: for every camera set-up (seeded; camera models cycle webcam, cm3,
cm3-wide) and every conditions preset of ``calibration.render.PRESETS`` (all the
conditions of table-kit.md), a random scene is rendered, JPEG/PNG-decoded like a
recorded frame, and read by a recogniser whose calibration comes, as a user's does,
from a rendered empty-board frame (default lens of the camera model, marker pose,
colour survey). The seeds (default from 7,000,000) were never used while developing.

Speed: a 30-card Bloxo tableau and a full Blockers! board (81 tiles), 1280x720, the
recogniser's ``process`` timed per frame after a warm-up (as on a running table),
OpenCV and BLAS limited to one thread (run it under ``taskset -c 0`` for one core); CPU
time of the process is reported next to wall time (the machine may be shared), with how
often the shared pose check ran (the recognisers re-check the pose only when the
markers' image changed) and its cost. Four figures per game:

* an unchanged frame (the still table: the previous reading is reused);
* every item new (``cpu_ms_median_no_reuse``): nothing reused from the previous frame,
  every card's shapes or every tile's face read from scratch;
* every item new with reuse on (``cpu_ms_median_all_changed``): frames alternating
  between two different scenes of the same size, so that each frame is first tried as
  a partial read, found changed all over, and read in full, keeping what the next
  frame would reuse: the worst case on a running table (after the camera was bumped);
* one new card or tile placed (``cpu_ms_median_one_new``): frames alternating between
  the scene without its last card/tile and with it, each rendered with fresh sensor
  noise (same layout), read with reuse on as on a running table: every frame is a
  changed frame, one item in it changed, the others keep their per-item readings only
  where their image is unchanged (see vision.cards / vision.tiles).

Prints the figures and writes ``bench/results/vision_cards_tiles.json``.
"""

from __future__ import annotations

import os

for _v in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_v, "1")

import argparse  # noqa: E402
import json  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
from collections import defaultdict  # noqa: E402
from pathlib import Path  # noqa: E402

import cv2  # noqa: E402
import numpy as np  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from calibration.camera import default_intrinsics  # noqa: E402
from calibration.kit import load_kit  # noqa: E402
from calibration.pose import estimate_pose  # noqa: E402
from calibration.render import scene as sc  # noqa: E402
from calibration.render import states as st  # noqa: E402
from calibration.store import Calibration  # noqa: E402
from calibration.survey import survey  # noqa: E402

MODELS = ("webcam", "cm3", "cm3-wide")


def user_calibration(kit, game: str, setup, seed: int) -> Calibration:
    """What ``bloxcam calibrate board`` makes from a frame of the empty board."""
    cond = sc.sample_conditions(seed, "neutral", area=kit.area_mm(game), kit=kit)
    frame = sc.render_frame(setup, st.empty_state(kit, game), cond, seed).image
    intr = default_intrinsics(setup.model, frame.shape[1], frame.shape[0])
    pose = estimate_pose(frame, kit, game, intr, min_markers=4)
    return Calibration(game=game, camera=intr, camera_model=setup.model, kit=kit, pose=pose,
                       survey=survey(frame, kit, game, pose, intr))


def scene_state(kit, game: str, rng: np.random.Generator) -> dict:
    if game == "bloxo":
        return st.bloxo_state(kit, rng, cards=int(rng.integers(3, 25)))
    return st.blockers_state(kit, rng, tiles=int(rng.integers(10, 70)))


def accuracy(game: str, setups: int, seed0: int) -> dict:
    import importlib

    mod = importlib.import_module(f"vision.{game}")
    kit = load_kit()
    by: dict[str, dict[str, list[int]]] = defaultdict(lambda: defaultdict(lambda: [0, 0]))
    frames = 0
    for k in range(setups):
        seed = seed0 + k
        model = MODELS[k % len(MODELS)]
        setup = sc.sample_setup(kit, game, seed, model=model)
        cal = user_calibration(kit, game, setup, seed)
        for j, preset in enumerate(sc.PRESETS):
            s2 = seed * 100 + j
            rng = np.random.default_rng(s2)
            state = scene_state(kit, game, rng)
            cond = sc.sample_conditions(s2, preset, area=kit.area_mm(game), kit=kit)
            r = sc.render_frame(setup, state, cond, s2)
            ok, buf = cv2.imencode(".png", r.image)
            image = cv2.imdecode(buf, cv2.IMREAD_COLOR)
            rec = mod.Recognizer(cal)
            rec.process(image, -1.001, 0)  # a still scene watched for the stable time
            obs = rec.process(image, 0.0, 0)
            m = dict(mod.score(r.truth, obs))
            m["commit_false"] = (int(obs["stable"] and not r.truth["stable"]), int(not r.truth["stable"]))
            m["commit_missed"] = (int(r.truth["stable"] and not obs["stable"]), int(r.truth["stable"]))
            for name, (e, t) in m.items():
                by[preset][name][0] += e
                by[preset][name][1] += t
            frames += 1
    total: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    for cond in by.values():
        for name, (e, t) in cond.items():
            total[name][0] += e
            total[name][1] += t
    return {"frames": frames, "setups": setups, "seeds": [seed0, seed0 + setups - 1],
            "total": {k: {"errors": e, "total": t, "rate": e / t if t else None} for k, (e, t) in sorted(total.items())},
            "by_condition": {c: {k: [e, t] for k, (e, t) in sorted(m.items())} for c, m in sorted(by.items())}}


def speed(game: str, items: int, seed: int, model: str, repeats: int = 30) -> dict:
    import importlib

    mod = importlib.import_module(f"vision.{game}")
    kit = load_kit()
    setup = sc.sample_setup(kit, game, seed, model=model)
    cal = user_calibration(kit, game, setup, seed)
    rng = np.random.default_rng(seed)
    if game == "bloxo":
        state = st.bloxo_state(kit, rng, cards=items)
    else:
        state = st.blockers_state(kit, rng, tiles=items)
    cond = sc.sample_conditions(seed, "neutral", area=kit.area_mm(game), kit=kit)
    r = sc.render_frame(setup, state, cond, seed)
    rec = mod.Recognizer(cal)
    for k in range(3):  # warm-up: warp maps and templates built once per pose
        rec.process(r.image, k * 0.1, k)
    wall, cpu, pose_cpu = [], [], []
    obs = None
    update = rec.view.update

    def timed_update(frame):  # the shared per-frame pose check (vision.board), timed apart
        c = time.process_time()
        out = update(frame)
        pose_cpu.append(time.process_time() - c)
        return out

    rec.view.update = timed_update
    for k in range(repeats):
        t0, c0 = time.perf_counter(), time.process_time()
        obs = rec.process(r.image, 1 + k * 0.1, 3 + k)
        wall.append(time.perf_counter() - t0)
        cpu.append(time.process_time() - c0)
    rec.view.update = update
    # the same frame read from scratch each time (no reading reused from a previous frame)
    cold = []
    for owner in (rec, getattr(rec, "reader", None)):
        if owner is not None and hasattr(owner, "reuse"):
            owner.reuse = False
    for k in range(max(5, repeats // 3)):
        c0 = time.process_time()
        rec.process(r.image, 10 + k * 0.1, 100 + k)
        cold.append(time.process_time() - c0)
    for owner in (rec, getattr(rec, "reader", None)):
        if owner is not None and hasattr(owner, "reuse"):
            owner.reuse = True
    # every item new with reuse on, as in play when the whole table changed at once: two
    # different scenes of the same size, alternating (each frame is read in full after
    # the partial read finds too much changed)
    if game == "bloxo":
        other_state = st.bloxo_state(kit, np.random.default_rng(seed + 7), cards=items)
    else:
        other_state = st.blockers_state(kit, np.random.default_rng(seed + 7), tiles=items)
    pair = [r.image, sc.render_frame(setup, other_state, cond, seed + 7).image]
    for k in range(2):  # warm-up
        rec.process(pair[k], 15 + k * 0.1, 150 + k)
    all_new = []
    for k in range(max(5, repeats // 3)):
        c0 = time.process_time()
        rec.process(pair[k % 2], 16 + k * 0.1, 160 + k)
        all_new.append(time.process_time() - c0)
    # one new card/tile: the scene without its last item and with it, alternating,
    # every frame with its own sensor noise (the layout fixed)
    fewer = _without_last(state)
    alt = [sc.render_frame(setup, fewer if k % 2 == 0 else state, cond, seed + 1 + k, layout_seed=seed)
           for k in range(4)]
    one_new = []
    for k in range(4):  # warm-up on these frames
        rec.process(alt[k % 4].image, 20 + k * 0.1, 200 + k)
    obs_one = None
    partial0 = getattr(rec.reader, "partial_reads", 0)
    matched = []
    for k in range(repeats):
        c0 = time.process_time()
        obs_one = rec.process(alt[k % 4].image, 21 + k * 0.1, 210 + k)
        one_new.append(time.process_time() - c0)
        matched.append(getattr(rec.reader, "matched", None))
    # how the changed frames were read: Bloxo, how many were segmented only around the
    # change; Blockers!, how many faces were matched again per frame
    how = {"partial_reads": getattr(rec.reader, "partial_reads", 0) - partial0} if game == "bloxo" else \
        {"faces_matched_median": float(np.median(matched)) if None not in matched else None}
    m_one = mod.score(alt[(repeats - 1) % 4].truth, obs_one)
    m = mod.score(r.truth, obs)
    return {"game": game, "items": items, "frame": f"{r.image.shape[1]}x{r.image.shape[0]}", "camera": model,
            "wall_ms_median": 1000 * float(np.median(wall)), "wall_ms_p90": 1000 * float(np.percentile(wall, 90)),
            "cpu_ms_median": 1000 * float(np.median(cpu)),
            "pose_check_cpu_ms_median": 1000 * float(np.median(pose_cpu)) if pose_cpu else None,
            "pose_checks": len(pose_cpu), "frames_timed": repeats,
            "pose_status": rec.view.status,
            "cpu_ms_median_no_reuse": 1000 * float(np.median(cold)) if cold else None,
            "cpu_ms_median_all_changed": 1000 * float(np.median(all_new)),
            "cpu_ms_median_one_new": 1000 * float(np.median(one_new)),
            "cpu_ms_p90_one_new": 1000 * float(np.percentile(one_new, 90)),
            "one_new_read_errors": {k: list(v) for k, v in m_one.items()},
            "one_new_reading": how,
            "load_average": list(os.getloadavg()),
            "read_errors": {k: list(v) for k, v in m.items()}}


def _without_last(state: dict) -> dict:
    """The scene with its last card (Bloxo) or last tile in reading order (Blockers!) taken away."""
    out = json.loads(json.dumps(state))
    if "cards" in out:
        out["cards"] = out["cards"][:-1]
        return out
    cells = out["cells"]
    for r in range(len(cells) - 1, -1, -1):
        for c in range(len(cells[r]) - 1, -1, -1):
            if cells[r][c] is not None:
                cells[r][c] = None
                return out
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--setups", type=int, default=3, help="camera set-ups per game (x 11 presets)")
    ap.add_argument("--seed", type=int, default=7_000_000, help="first seed (fresh scenes)")
    ap.add_argument("--speed-only", action="store_true")
    ap.add_argument("--games", default="bloxo,blockers", help="comma-separated: bloxo, blockers")
    ap.add_argument("--out", type=Path, default=Path(__file__).resolve().parent / "results" / "vision_cards_tiles.json",
                    help="results file (default bench/results/vision_cards_tiles.json)")
    args = ap.parse_args()
    games = set(args.games.split(","))
    if not games <= {"bloxo", "blockers"}:
        ap.error(f"unknown game in --games: {', '.join(sorted(games - {'bloxo', 'blockers'}))}")
    cv2.setNumThreads(1)
    out: dict = {"speed": [], "accuracy": {}}
    for game, items, model in (("bloxo", 30, "webcam"), ("blockers", 81, "cm3")):
        if game not in games:
            continue
        s = speed(game, items, args.seed + 900, model)
        out["speed"].append(s)
        cold = "" if s["cpu_ms_median_no_reuse"] is None else \
            f", every item new (nothing reused) {s['cpu_ms_median_no_reuse']:.1f} ms, every item new (the whole " \
            f"scene changed, reuse on) {s['cpu_ms_median_all_changed']:.1f} ms"
        cold += f", one new item placed {s['cpu_ms_median_one_new']:.1f} ms (p90 {s['cpu_ms_p90_one_new']:.1f}, " \
                f"{s['one_new_reading']}, errors {s['one_new_read_errors']})"
        pose = "" if s["pose_check_cpu_ms_median"] is None else f", {s['pose_check_cpu_ms_median']:.1f} ms each"
        print(f"speed {game:8s} {items:3d} items {s['frame']} {model:8s}: wall median {s['wall_ms_median']:.1f} ms "
              f"(p90 {s['wall_ms_p90']:.1f}), cpu median {s['cpu_ms_median']:.1f} ms; pose checked in "
              f"{s['pose_checks']} of {s['frames_timed']} frames (markers unchanged otherwise){pose} "
              f"(status {s['pose_status']}){cold}; "
              f"load average {s['load_average'][0]:.1f}; errors {s['read_errors']}")
    if not args.speed_only:
        for game, base in (("bloxo", args.seed), ("blockers", args.seed + 500)):
            if game not in games:
                continue
            t0 = time.perf_counter()
            acc = accuracy(game, args.setups, base)
            acc["seconds"] = round(time.perf_counter() - t0, 1)
            out["accuracy"][game] = acc
            print(f"\naccuracy {game}: {acc['frames']} scenes (seeds {acc['seeds'][0]}..{acc['seeds'][1]}, "
                  f"x100 + preset index)")
            for name, v in acc["total"].items():
                rate = "-" if v["rate"] is None else f"{100 * v['rate']:.3f}%"
                print(f"  {name:18s} {v['errors']:5d} / {v['total']:<6d} {rate}")
            for cond, m in acc["by_condition"].items():
                bad = {k: tuple(v) for k, v in m.items() if v[0]}
                print(f"    {cond:12s} {bad if bad else 'no errors'}")
    res = args.out
    res.parent.mkdir(parents=True, exist_ok=True)
    if args.speed_only and res.exists():
        # a speed run replaces the speed figures only, not the recorded accuracy
        out["accuracy"] = json.loads(res.read_text("utf-8")).get("accuracy", {})
    res.write_text(json.dumps(out, indent=1) + "\n", "utf-8")
    print(f"\nwritten {res}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
