"""Recognition against a fixture's ground truth (``bloxcam evaluate FIXTURE_DIR...``).

A fixture (observation.md, "Fixtures") is a folder with ``frames/`` (or ``video.mp4``),
``truth.jsonl``, ``meta.json`` and ``calibration/``. The calibration is obtained the way
a user obtains theirs, from the fixture's ``calibration/`` frames only
(:func:`calibration_from_dir`): the ChArUco frames give the lens (the camera model's
default lens when there are too few), the empty-board frame gives the pose and the
colour survey. ``meta.json``'s true intrinsics and pose are never used for recognition.

Frames are decoded with OpenCV (``cv2.imread``, ``cv2.VideoCapture``), run through
``vision.make_recognizer(game, ...)`` and compared with ``truth.jsonl`` by
``vision.<game>.score``. Two checks are the evaluator's own, for every game:

* ``commit_false``: frames the recogniser judged ``stable`` whose truth is not stable
  (a hand over the board, pieces moving): such a frame would commit a state. Must be 0.
* ``commit_missed``: truth-stable frames not judged stable (a slower commit, not wrong).

Fixtures of independent single scenes (no ``fps`` in meta.json) are not a video: each
frame is shown to the recogniser as a camera would show a scene put in front of it and
then held still for ``stable_seconds``: the frame is processed once as the change from
the scene before (which the motion gate sees as motion), then at the start and at the
end of ``stable_seconds`` of stillness. (``bloxcam recognize`` shows a photo to a fresh
recogniser, which has no scene before.) Sequences (``fps`` given, or a video) run frame
by frame in time order.

Results are broken down by condition: the conditions preset of each frame as
recorded in meta.json (``frames[i].conditions.name``), else the fixture's name.
"""

from __future__ import annotations

import copy
import json
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterator

import cv2
import numpy as np

IMAGE_SUFFIXES = (".png", ".jpg", ".jpeg", ".bmp", ".tif", ".tiff")


class FixtureError(ValueError):
    """A fixture folder that cannot be evaluated (missing files, bad JSON, no calibration)."""


_CAL_CACHE: dict[tuple[str, str], Any] = {}


def _read_json(path: Path) -> Any:
    try:
        return json.loads(path.read_text("utf-8"))
    except FileNotFoundError:
        raise FixtureError(f"{path} is missing") from None
    except json.JSONDecodeError as exc:
        raise FixtureError(f"{path} is not valid JSON: {exc}") from None


def read_image(path: str | Path) -> np.ndarray:
    """A BGR frame from an image file; FixtureError saying why when it cannot be read."""
    p = Path(path)
    if not p.exists():
        raise FixtureError(f"image not found: {p}")
    img = cv2.imread(str(p), cv2.IMREAD_COLOR)
    if img is None or img.size == 0:
        raise FixtureError(f"cannot decode image {p} (not an image, or a damaged file)")
    return img


def calibration_from_dir(cal_dir: str | Path, game: str | None = None, *, camera_model: str | None = None) -> Any:
    """A :class:`calibration.store.Calibration` from a fixture's ``calibration/`` frames.

    ``lens_*`` images: lens calibration (if at least calibration.lens.MIN_FRAMES are
    usable, else the camera model's default lens); ``board.*``: pose (all four markers)
    and colour survey. The kit is the one recorded with the frames (meta.json ``kit``),
    else the bundled kit; the camera model names the default lens (what a user tells
    ``bloxcam calibrate --camera-model``). Computed once per folder; every caller gets its
    own copy, so one that changes it (a pose, a survey entry) cannot change another's."""
    from calibration.camera import default_intrinsics
    from calibration.kit import KitError, kit_from_dict, load_kit
    from calibration.lens import MIN_FRAMES, LensError, calibrate_lens
    from calibration.pose import MarkerError, estimate_pose
    from calibration.store import Calibration
    from calibration.survey import SurveyError, survey

    d = Path(cal_dir).resolve()
    key = (str(d), game or "")
    if key in _CAL_CACHE:
        return copy.deepcopy(_CAL_CACHE[key])
    if not d.is_dir():
        raise FixtureError(f"no calibration folder {cal_dir}")
    meta = _read_json(d / "meta.json") if (d / "meta.json").exists() else {}
    try:
        kit = kit_from_dict(meta["kit"], f"{d / 'meta.json'} (kit)") if meta.get("kit") else load_kit()
    except KitError as exc:
        raise FixtureError(str(exc)) from None
    game = game or meta.get("game") or "blox"
    model = camera_model or (meta.get("setup") or {}).get("camera_model") or "cm3"
    boards = [p for p in sorted(d.iterdir()) if p.stem == "board" and p.suffix.lower() in IMAGE_SUFFIXES]
    if not boards:
        raise FixtureError(f"{d} has no board.* frame of the empty board")
    board = read_image(boards[0])
    h, w = board.shape[:2]
    lens_files = [p for p in sorted(d.iterdir()) if p.stem.startswith("lens") and p.suffix.lower() in IMAGE_SUFFIXES]
    lens_info = None
    intr = None
    if len(lens_files) >= MIN_FRAMES:
        try:
            res = calibrate_lens([(p.name, cv2.imread(str(p), cv2.IMREAD_COLOR)) for p in lens_files], kit)
            if (res.intrinsics.width, res.intrinsics.height) == (w, h):
                intr = res.intrinsics
                lens_info = {"rms_px": res.rms_px, "frames": len(lens_files)}
        except LensError:
            intr = None
    if intr is None:
        intr = default_intrinsics(model, w, h)
    try:
        pose = estimate_pose(board, kit, game, intr, min_markers=4)
        data = survey(board, kit, game, pose, intr)
    except (MarkerError, SurveyError) as exc:
        raise FixtureError(f"{boards[0]}: {exc}") from None
    cal = Calibration(game=game, camera=intr, camera_model=model, kit=kit, pose=pose, survey=data, lens=lens_info,
                      table=d.parent.name)
    _CAL_CACHE[key] = cal
    return copy.deepcopy(cal)


@dataclass
class Fixture:
    path: Path
    game: str
    meta: dict[str, Any]
    truth: list[dict[str, Any]]
    frame_files: list[Path]
    video: Path | None
    sequence: bool

    def frames(self) -> Iterator[tuple[int, np.ndarray]]:
        if self.video is not None:
            cap = cv2.VideoCapture(str(self.video))
            if not cap.isOpened():
                raise FixtureError(f"cannot open video {self.video}")
            i = 0
            while True:
                ok, img = cap.read()
                if not ok:
                    break
                yield i, img
                i += 1
            cap.release()
            return
        for i, p in enumerate(self.frame_files):
            yield i, read_image(p)

    def condition(self, i: int) -> str:
        frames = self.meta.get("frames") or []
        if i < len(frames) and isinstance(frames[i], dict):
            name = (frames[i].get("conditions") or {}).get("name")
            if name:
                return str(name)
        return self.path.name


def load_fixture(path: str | Path) -> Fixture:
    p = Path(path)
    if not p.is_dir():
        raise FixtureError(f"no fixture folder {p}")
    meta = _read_json(p / "meta.json")
    game = meta.get("game")
    if not isinstance(game, str):
        raise FixtureError(f"{p / 'meta.json'} does not name the game")
    truth_path = p / "truth.jsonl"
    try:
        lines = truth_path.read_text("utf-8").splitlines()
    except FileNotFoundError:
        raise FixtureError(f"{truth_path} is missing") from None
    truth = []
    for k, line in enumerate(lines):
        if line.strip():
            try:
                truth.append(json.loads(line))
            except json.JSONDecodeError as exc:
                raise FixtureError(f"{truth_path}:{k + 1} is not valid JSON: {exc}") from None
    frames_dir = p / "frames"
    files = sorted(f for f in frames_dir.iterdir() if f.suffix.lower() in IMAGE_SUFFIXES) if frames_dir.is_dir() else []
    video = p / "video.mp4" if (p / "video.mp4").exists() else None
    if not files and video is None:
        raise FixtureError(f"{p} has no frames/ and no video.mp4")
    if files and len(files) != len(truth):
        raise FixtureError(f"{p}: {len(files)} frames but {len(truth)} truth lines")
    sequence = video is not None or "fps" in meta
    return Fixture(p, game, meta, truth, files, video, sequence)


def find_fixtures(paths: list[str | Path]) -> list[Path]:
    """Fixture folders: each path itself (if it has truth.jsonl) or those below it that
    have frames (folders of recordings without frames, such as engine-only game
    recordings, are skipped)."""
    out: list[Path] = []
    for raw in paths:
        p = Path(raw)
        if not p.exists():
            raise FixtureError(f"no such folder: {p}")
        if (p / "truth.jsonl").exists():
            out.append(p)
            continue
        found = sorted(q.parent for q in p.rglob("truth.jsonl")
                       if (q.parent / "frames").is_dir() or (q.parent / "video.mp4").exists())
        if not found:
            raise FixtureError(f"{p} holds no fixture (no truth.jsonl with frames/ or video.mp4)")
        out += found
    return out


@dataclass
class Report:
    """Errors and totals per condition and metric, plus timing."""

    by_condition: dict[str, dict[str, list[int]]] = field(default_factory=lambda: defaultdict(lambda: defaultdict(lambda: [0, 0])))
    frames: int = 0
    seconds: float = 0.0
    failures: list[str] = field(default_factory=list)
    details: list[dict[str, Any]] = field(default_factory=list)

    def add(self, condition: str, metrics: dict[str, tuple[int, int]]) -> None:
        for name, (err, total) in metrics.items():
            cell = self.by_condition[condition][name]
            cell[0] += int(err)
            cell[1] += int(total)

    def totals(self) -> dict[str, list[int]]:
        out: dict[str, list[int]] = defaultdict(lambda: [0, 0])
        for metrics in self.by_condition.values():
            for name, (err, total) in metrics.items():
                out[name][0] += err
                out[name][1] += total
        return dict(out)

    def to_json(self) -> dict[str, Any]:
        def conv(m: dict[str, list[int]]) -> dict[str, Any]:
            return {k: {"errors": e, "total": t, "rate": (e / t if t else None)} for k, (e, t) in sorted(m.items())}

        return {"frames": self.frames, "seconds": self.seconds, "total": conv(self.totals()),
                "by_condition": {c: conv(m) for c, m in sorted(self.by_condition.items())},
                "failures": self.failures}

    def format(self) -> str:
        totals = self.totals()
        names = sorted(totals)
        lines = [f"{self.frames} frames, {self.seconds:.1f} s"]
        width = max([len(c) for c in self.by_condition] + [9])
        head = f"{'condition':<{width}}  " + "  ".join(f"{n:>16}" for n in names)
        lines.append(head)

        def cell(m: dict[str, list[int]], n: str) -> str:
            e, t = m.get(n, (0, 0))
            return f"{'-':>16}" if not t else f"{100 * e / t:7.3f}% {e:>3}/{t:<4}"

        for cond in sorted(self.by_condition):
            m = self.by_condition[cond]
            lines.append(f"{cond:<{width}}  " + "  ".join(cell(m, n) for n in names))
        lines.append(f"{'ALL':<{width}}  " + "  ".join(cell(totals, n) for n in names))
        lines.append("(error rate, errors/total; commit_false must be 0: a committed frame whose truth is not stable)")
        for f in self.failures:
            lines.append(f"FAILED {f}")
        return "\n".join(lines)


def evaluate_fixture(path: str | Path, report: Report | None = None, *, stable_seconds: float = 1.0,
                     calibration: Any = None, keep_details: bool = False) -> Report:
    """Run one fixture through its game's recogniser and add its figures to ``report``."""
    import time

    from vision import make_recognizer, recognizer_module

    report = report or Report()
    fx = load_fixture(path)
    module = recognizer_module(fx.game)
    cal = calibration or calibration_from_dir(fx.path / "calibration", fx.game)
    rec = make_recognizer(fx.game, cal, stable_seconds=stable_seconds)
    t0 = time.perf_counter()
    for i, image in fx.frames():
        if i >= len(fx.truth):
            break
        truth = fx.truth[i]
        t = float(truth.get("t", i))
        if not fx.sequence:
            # A single scene: it appears (the cut from the previous scene is motion, and
            # restarts the gate's clock), then the camera watches it still for
            # stable_seconds. Shown only twice, every scene after the first would be
            # judged on the frame the clock started and never committed.
            for lead in (2e-3, 1e-3):
                rec.process(image, t - stable_seconds - lead, int(truth.get("frame", i)))
        obs = rec.process(image, t, int(truth.get("frame", i)))
        metrics = dict(module.score(truth, obs))
        truth_stable = bool(truth.get("stable"))
        metrics["commit_false"] = (int(bool(obs.get("stable")) and not truth_stable), int(not truth_stable))
        metrics["commit_missed"] = (int(truth_stable and not obs.get("stable")), int(truth_stable))
        report.add(fx.condition(i), metrics)
        report.frames += 1
        if keep_details:
            report.details.append({"fixture": str(fx.path), "index": i, "condition": fx.condition(i),
                                   "metrics": metrics, "observation": obs, "truth": truth})
    report.seconds += time.perf_counter() - t0
    return report


def evaluate(paths: list[str | Path], *, stable_seconds: float = 1.0, calibration: Any = None) -> Report:
    report = Report()
    for p in find_fixtures(paths):
        evaluate_fixture(p, report, stable_seconds=stable_seconds, calibration=calibration)
    return report
