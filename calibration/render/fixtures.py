"""Writing rendered scenes as fixtures (observation.md: ``fixtures/<game>/<name>/``).

* :func:`write_setup` renders a camera set-up's ``calibration/`` frames: ChArUco lens
  frames and one frame of the empty board under neutral light.
* :func:`write_scene` writes a single-frame (or few-frame) scene.
* :func:`render_sequence` renders a whole game from a ``truth.jsonl`` of stable
  observations: each stable state is held for a few frames, and between two states a
  hand reaches in over the cells that change, the change happens under the hand, and
  the hand leaves. The output's ``truth.jsonl`` has one observation per frame.

Set-ups are shared: a scene's ``calibration/`` is a relative symbolic link to the
set-up's folder, so the frames are stored once.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import cv2
import numpy as np

from calibration.render import scene as sc
from calibration.render import textures as tx
from calibration.render.states import empty_state

JPEG_QUALITY = 90


def _write_image(path: Path, image: np.ndarray, quality: int = JPEG_QUALITY) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    params = [cv2.IMWRITE_JPEG_QUALITY, quality] if path.suffix == ".jpg" else []
    if not cv2.imwrite(str(path), image, params):
        raise OSError(f"could not write {path}")


def _dump_jsonl(path: Path, rows: list[dict[str, Any]]) -> None:
    path.write_text("".join(json.dumps(r, separators=(",", ":")) + "\n" for r in rows), "utf-8")


def _meta(setup: sc.SetUp, how: str, frames: list[dict[str, Any]], **extra: Any) -> dict[str, Any]:
    return {"format": "bloxcam-fixture", "version": 1, "game": setup.game, "edition": "default",
            "made_by": "calibration.render (synthetic, deterministic from the seeds below)", "how": how,
            "kit": setup.kit.raw, "setup": setup.to_json(), "frames": frames, **extra}


def write_setup(setup: sc.SetUp, out: str | Path, seed: int, *, lens_frames: int = 8) -> Path:
    """``out/calibration/``: lens_XX.jpg (ChArUco), board.jpg (empty board), meta.json."""
    cal = Path(out) / "calibration"
    cal.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng([seed, 505])
    rows = []
    for k in range(lens_frames):
        R, t = sc.random_sheet_pose(setup, rng)
        cond = sc.sample_conditions(seed * 100 + k, "neutral", kit=setup.kit)
        img, corners = sc.render_charuco(setup, R, t, cond, seed * 100 + k)
        name = f"lens_{k:02d}.jpg"
        _write_image(cal / name, img, 95)
        rows.append({"file": name, "sheet_rvec": cv2.Rodrigues(R)[0].ravel().tolist(), "sheet_tvec": t.tolist(),
                     "conditions": cond.to_json()})
    state = empty_state(setup.kit, setup.game)
    cond = sc.sample_conditions(seed, "neutral", area=setup.kit.area_mm(setup.game), kit=setup.kit)
    r = sc.render_frame(setup, state, cond, seed)
    _write_image(cal / "board.jpg", r.image, 95)
    meta = _meta(setup, "camera set-up: lens sheet frames and the empty board", rows,
                 board={"file": "board.jpg", "truth": r.truth, "conditions": cond.to_json()})
    (cal / "meta.json").write_text(json.dumps(meta, indent=1) + "\n", "utf-8")
    return cal


def _link_calibration(scene_dir: Path, setup_dir: Path) -> None:
    link = scene_dir / "calibration"
    target = setup_dir / "calibration"
    if link.resolve() == target.resolve():
        return
    if link.is_symlink() or link.exists():
        link.unlink()
    link.symlink_to(os.path.relpath(target, scene_dir), target_is_directory=True)


def write_scene(setup: sc.SetUp, states: list[dict[str, Any]], conds: list[sc.Conditions], seeds: list[int],
                out: str | Path, *, setup_dir: str | Path | None = None, fps: float = 2.0) -> Path:
    """A fixture of ``len(states)`` frames (one state, conditions and seed each)."""
    d = Path(out)
    (d / "frames").mkdir(parents=True, exist_ok=True)
    truths, frames = [], []
    for i, (state, cond, seed) in enumerate(zip(states, conds, seeds)):
        r = sc.render_frame(setup, state, cond, seed, frame=i, t=i / fps)
        name = f"frames/{i:06d}.jpg"
        _write_image(d / name, r.image)
        truths.append(r.truth)
        frames.append({"file": name, **r.meta})
    _dump_jsonl(d / "truth.jsonl", truths)
    meta = _meta(setup, "rendered single scenes", frames,
                 calibration="calibration/ (link to the set-up's calibration frames)" if setup_dir else None)
    (d / "meta.json").write_text(json.dumps(meta, indent=1) + "\n", "utf-8")
    if setup_dir is not None:
        _link_calibration(d, Path(setup_dir))
    return d


def changed_points(kit: Any, game: str, a: dict[str, Any], b: dict[str, Any]) -> list[tuple[float, float]]:
    """Board-frame centres (mm) of what differs between two states."""
    pts: list[tuple[float, float]] = []
    grid = kit.grid(game)
    if grid and "cells" in a and "cells" in b:
        n, s = grid
        for r in range(n):
            for c in range(n):
                if a["cells"][r][c] != b["cells"][r][c]:
                    pts.append(((c + 0.5) * s, (r + 0.5) * s))
    elif game == "bloxo":
        ox, oy = tx.card_layout(kit)
        old = {tuple(card["at"]): card for card in a.get("cards", [])}
        for card in b.get("cards", []):
            if old.get(tuple(card["at"])) != card:
                x, y = card["at"]
                pts.append((ox + x * kit.bloxo.card_mm, oy + y * kit.bloxo.card_mm))
    if not pts:
        w, h = kit.area_mm(game)
        pts.append((w / 2, h / 2))
    return pts


def render_sequence(truth_path: str | Path | list[dict[str, Any]], setup: sc.SetUp, out: str | Path, seed: int, *,
                    stable_frames: int = 3, hand_frames: int = 4, fps: float = 4.0,
                    setup_dir: str | Path | None = None, preset: str = "neutral") -> Path:
    """Render a game fixture from stable observations (a truth.jsonl path or a list).

    Consecutive equal states are merged. For every state: ``stable_frames`` still
    frames; between states, ``hand_frames`` frames with a hand reaching in over the
    changed cells (the pieces change at the middle frame, under the hand) and going
    away. Frames with a hand are ``stable: false`` and list their covered cells."""
    if isinstance(truth_path, (str, Path)):
        rows = [json.loads(line) for line in Path(truth_path).read_text("utf-8").splitlines() if line.strip()]
    else:
        rows = list(truth_path)
    states: list[dict[str, Any]] = []
    for row in rows:
        st = row.get("state", row)
        if row.get("stable", True) is False:
            continue
        if not states or st != states[-1]:
            states.append(st)
    if not states:
        raise ValueError("no stable observations to render")
    d = Path(out)
    (d / "frames").mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng([seed, 606])
    base = sc.sample_conditions(seed, preset, area=setup.kit.area_mm(setup.game), kit=setup.kit)
    area = setup.kit.area_mm(setup.game)
    truths, frames = [], []
    colors = states[0].get("colors")

    def emit(state: dict[str, Any], cond: sc.Conditions, k: int) -> None:
        i = len(truths)
        st = dict(state)
        if setup.game == "blox" and "colors" not in st and colors is not None:
            st = {"colors": colors, **st}
        # The pieces of one board state stay put from frame to frame; only the noise changes.
        layout = seed * 10000 + states.index(state)
        r = sc.render_frame(setup, st, cond, seed * 10000 + i, frame=i, t=i / fps, layout_seed=layout)
        truth = dict(r.truth)
        truth["state"] = state  # exactly as given (colours may be omitted after the first)
        name = f"frames/{i:06d}.jpg"
        _write_image(d / name, r.image)
        truths.append(truth)
        frames.append({"file": name, "phase": k, **r.meta})

    for k, state in enumerate(states):
        for _ in range(stable_frames):
            emit(state, base, k)
        if k + 1 == len(states):
            break
        pts = np.array(changed_points(setup.kit, setup.game, state, states[k + 1]))
        target = tuple(float(v) for v in pts.mean(axis=0))
        hand = sc.random_hand(rng, area)
        hand.target = target
        for j in range(hand_frames):
            # In from far away, down over the cells, back out.
            phase = (j + 1) / (hand_frames + 1)
            reach = 1 - abs(2 * phase - 1)
            h = sc.Hand(target=(target[0], target[1] + (1 - reach) * 350), height=hand.height + (1 - reach) * 60,
                        side=hand.side, radius=hand.radius, skin=hand.skin, spread=hand.spread)
            cond = sc.Conditions(**{**base.__dict__, "hands": [h]})
            emit(state if phase < 0.5 else states[k + 1], cond, k)
    _dump_jsonl(d / "truth.jsonl", truths)
    meta = _meta(setup, f"rendered game sequence: {len(states)} stable states, hands between them", frames,
                 fps=fps, calibration="calibration/ (link to the set-up's calibration frames)" if setup_dir else None)
    (d / "meta.json").write_text(json.dumps(meta, indent=1) + "\n", "utf-8")
    if setup_dir is not None:
        _link_calibration(d, Path(setup_dir))
    return d
