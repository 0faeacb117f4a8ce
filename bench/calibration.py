"""Calibration benchmark on freshly rendered scenes (seeds never used in development).

Figures (issue 7):
* board-pose reprojection error with markers, median over all conditions (< 0.5 px);
* focal length error after lens calibration from rendered ChArUco frames (< 1%);
* markerless board corners within 3 px of the truth, on frames without hands (>= 95%);
* pose re-check time per 1280x720 frame on one core (< 5 ms).

Every frame goes through a real JPEG file on disk and cv2.imread, as a camera recording
would. Run: ``.venv/bin/python bench/calibration.py [--seed N]`` (writes
bench/results/calibration.json). ``--seed`` moves every frame to a fresh seed range, so
a final run can use seeds that no development run has seen.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

import cv2
import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from calibration.kit import load_kit  # noqa: E402
from calibration.lens import calibrate_lens  # noqa: E402
from calibration.markerless import BoardNotFound, find_board  # noqa: E402
from calibration.pose import MarkerError, PoseTracker, estimate_pose  # noqa: E402
from calibration.render import scene as sc  # noqa: E402
from calibration.render import states as st  # noqa: E402

BASE_SEED = 910_000  # bench-only seeds
MODELS = ("cm3", "cm3-wide", "webcam")


def _via_file(tmp: Path, image: np.ndarray, quality: int = 92) -> np.ndarray:
    p = tmp / "frame.jpg"
    cv2.imwrite(str(p), image, [cv2.IMWRITE_JPEG_QUALITY, quality])
    return cv2.imread(str(p))


def bench_pose(base: int, kit, tmp: Path) -> dict:
    rows = []
    seed = base
    for game in ("blox", "blockers", "bloxo"):
        for model in MODELS:
            seed += 1
            try:
                setup = sc.sample_setup(kit, game, seed, model=model)
            except ValueError:
                continue
            for preset in sc.PRESETS:
                seed += 1
                state = st.random_state(kit, game, np.random.default_rng(seed))
                cond = sc.sample_conditions(seed, preset, area=kit.area_mm(game), kit=kit)
                img = _via_file(tmp, sc.render_frame(setup, state, cond, seed).image)
                truth = setup.view().project(kit.area_corners(game))
                row = {"game": game, "model": model, "preset": preset, "seed": seed}
                try:
                    pose = estimate_pose(img, kit, game, setup.intr, min_markers=2)
                    est = pose.project(kit.area_corners(game), setup.intr)
                    row.update(found=len(pose.markers), reprojection_px=pose.reprojection_px,
                               corner_err_px=float(np.max(np.linalg.norm(est - truth, axis=1))))
                except MarkerError as exc:
                    row.update(found=len(exc.found), error=str(exc))
                rows.append(row)
    ok = [r for r in rows if "reprojection_px" in r]
    rep = np.array([r["reprojection_px"] for r in ok])
    cerr = np.array([r["corner_err_px"] for r in ok])
    by_preset = {}
    for p in sc.PRESETS:
        sel = [r for r in ok if r["preset"] == p]
        by_preset[p] = {"frames": sum(r["preset"] == p for r in rows), "posed": len(sel),
                        "median_reprojection_px": float(np.median([r["reprojection_px"] for r in sel])) if sel else None}
    return {"frames": len(rows), "posed": len(ok), "all_four_markers": sum(r["found"] == 4 for r in rows),
            "median_reprojection_px": float(np.median(rep)), "p90_reprojection_px": float(np.percentile(rep, 90)),
            "median_grid_corner_error_px": float(np.median(cerr)), "p90_grid_corner_error_px": float(np.percentile(cerr, 90)),
            "by_preset": by_preset, "failures": [r for r in rows if "error" in r]}


def bench_lens(base: int, kit, tmp: Path, frames: int = 10) -> dict:
    out = []
    for k, model in enumerate(MODELS):
        seed = base + 5000 + k
        setup = sc.sample_setup(kit, "blox", seed, model=model)
        rng = np.random.default_rng(seed)
        imgs = []
        for j in range(frames):
            R, t = sc.random_sheet_pose(setup, rng)
            cond = sc.sample_conditions(seed * 100 + j, None, kit=kit)
            cond.hands = []
            img, _ = sc.render_charuco(setup, R, t, cond, seed * 100 + j)
            imgs.append((f"{model}-{j:02d}", _via_file(tmp, img, 95)))
        res = calibrate_lens(imgs, kit)
        out.append({"model": model, "true_fx": setup.intr.fx, "fx": res.intrinsics.fx, "fy": res.intrinsics.fy,
                    "focal_error_pct": 100 * abs(res.intrinsics.fx / setup.intr.fx - 1),
                    "cx_error_px": abs(res.intrinsics.cx - setup.intr.cx), "rms_px": res.rms_px,
                    "frames_used": sum(f.accepted for f in res.frames), "frames": frames})
    return {"per_model": out, "max_focal_error_pct": max(r["focal_error_pct"] for r in out)}


def bench_markerless(base: int, kit, tmp: Path) -> dict:
    rows = []
    seed = base + 20000
    presets = [p for p in sc.PRESETS if p not in ("hands", "everything")]
    for game in ("blox", "blockers"):
        for model in MODELS:
            for rep in range(2):
                seed += 1
                setup = sc.sample_setup(kit, game, seed, model=model, markers=False)
                for preset in presets:
                    seed += 1
                    state = st.random_state(kit, game, np.random.default_rng(seed))
                    cond = sc.sample_conditions(seed, preset, area=kit.area_mm(game), kit=kit)
                    img = _via_file(tmp, sc.render_frame(setup, state, cond, seed).image)
                    truth = setup.view().project(kit.area_corners(game))
                    row = {"game": game, "model": model, "preset": preset, "seed": seed, "table": setup.table}
                    t0 = time.perf_counter()
                    try:
                        _, corners = find_board(img, kit, game, setup.intr)
                        row["seconds"] = time.perf_counter() - t0
                        row["corner_err_px"] = float(np.max(np.linalg.norm(corners - truth, axis=1)))
                    except BoardNotFound as exc:
                        row["error"] = str(exc)
                    rows.append(row)
    errs = np.array([r.get("corner_err_px", np.inf) for r in rows])
    within = float(np.mean(errs <= 3.0))
    by_preset = {p: float(np.mean([r.get("corner_err_px", np.inf) <= 3.0 for r in rows if r["preset"] == p]))
                 for p in presets}
    by_table = {}
    for r in rows:
        by_table.setdefault(r["table"], []).append(r.get("corner_err_px", np.inf) <= 3.0)
    secs = [r["seconds"] for r in rows if "seconds" in r]
    return {"frames": len(rows), "within_3px": within, "time_median_ms": 1000 * float(np.median(secs)),
            "time_p95_ms": 1000 * float(np.percentile(secs, 95)), "median_corner_err_px": float(np.median(errs)),
            "found": int(np.isfinite(errs).sum()), "by_preset": by_preset,
            "by_table": {k: float(np.mean(v)) for k, v in by_table.items()}}


def bench_check_time(base: int, kit, tmp: Path) -> dict:
    cv2.setNumThreads(1)
    out = {}
    for model in ("cm3", "webcam"):
        seed = base + 30000 + len(out)
        setup = sc.sample_setup(kit, "blox", seed, model=model, size=(1280, 720))
        img = _via_file(tmp, sc.render_frame(setup, st.random_state(kit, "blox", np.random.default_rng(seed)),
                                             sc.sample_conditions(seed, "neutral", kit=kit), seed).image)
        tracker = PoseTracker(kit, "blox", setup.intr, estimate_pose(img, kit, "blox", setup.intr))
        times = []
        statuses: dict[str, int] = {}
        for _ in range(200):
            t = time.perf_counter()
            check = tracker.check(img)
            times.append(time.perf_counter() - t)
            statuses[check.status.value] = statuses.get(check.status.value, 0) + 1
        t = time.perf_counter()
        for _ in range(20):
            estimate_pose(img, kit, "blox", setup.intr)
        full = (time.perf_counter() - t) / 20
        out[model] = {"check_median_ms": 1000 * float(np.median(times)), "check_p95_ms": 1000 * float(np.percentile(times, 95)),
                      "full_detection_ms": 1000 * full, "statuses": statuses, "shift_px": check.shift_px}
    cv2.setNumThreads(-1)
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seed", type=int, default=BASE_SEED, help=f"first seed of the range (default {BASE_SEED})")
    base = ap.parse_args(argv).seed
    kit = load_kit()
    t0 = time.time()
    with tempfile.TemporaryDirectory() as d:
        tmp = Path(d)
        results = {"seed": base, "pose": bench_pose(base, kit, tmp), "lens": bench_lens(base, kit, tmp),
                   "markerless": bench_markerless(base, kit, tmp), "pose_check": bench_check_time(base, kit, tmp)}
    results["seconds"] = time.time() - t0
    p, l, m, c = results["pose"], results["lens"], results["markerless"], results["pose_check"]
    print(f"board pose with markers: {p['posed']}/{p['frames']} frames posed ({p['all_four_markers']} with all four), "
          f"reprojection median {p['median_reprojection_px']:.3f} px (p90 {p['p90_reprojection_px']:.3f}), "
          f"grid corners vs truth median {p['median_grid_corner_error_px']:.3f} px (p90 {p['p90_grid_corner_error_px']:.3f})")
    for preset, v in p["by_preset"].items():
        med = v["median_reprojection_px"]
        print(f"  {preset:12s} posed {v['posed']}/{v['frames']}  median {med:.3f} px" if med is not None
              else f"  {preset:12s} posed 0/{v['frames']}")
    for r in l["per_model"]:
        print(f"lens {r['model']:9s}: focal error {r['focal_error_pct']:.3f}% (fx {r['fx']:.1f} vs {r['true_fx']:.1f}), "
              f"rms {r['rms_px']:.3f} px, {r['frames_used']}/{r['frames']} frames")
    print(f"markerless: {m['within_3px'] * 100:.1f}% of {m['frames']} hand-free frames within 3 px "
          f"(found {m['found']}, median {m['median_corner_err_px']:.2f} px); "
          f"{m['time_median_ms']:.0f} ms per frame median (p95 {m['time_p95_ms']:.0f})")
    print("  by preset: " + ", ".join(f"{k} {v * 100:.0f}%" for k, v in m["by_preset"].items()))
    print("  by table:  " + ", ".join(f"{k} {v * 100:.0f}%" for k, v in m["by_table"].items()))
    for model, v in c.items():
        print(f"pose check ({model}, 1280x720, one core): median {v['check_median_ms']:.2f} ms, "
              f"p95 {v['check_p95_ms']:.2f} ms; full marker detection {v['full_detection_ms']:.1f} ms; "
              f"statuses {v['statuses']}")
    out = ROOT / "bench" / "results" / "calibration.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(results, indent=1) + "\n")
    print(f"wrote {out.relative_to(ROOT)} in {results['seconds']:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
