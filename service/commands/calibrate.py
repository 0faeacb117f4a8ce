"""``bloxcam calibrate lens FRAMES...`` and ``bloxcam calibrate board FRAME``."""

from __future__ import annotations

import argparse
from pathlib import Path

DEFAULT_FILE = "calibration.json"


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser("calibrate", help="lens calibration and board survey",
                              description="Calibrate the camera lens from ChArUco frames, or survey the board "
                                          "(pose and colours) from a frame of the empty board.")
    sub = p.add_subparsers(dest="what", metavar="WHAT")
    lens = sub.add_parser("lens", help="intrinsics and distortion from frames of the ChArUco sheet")
    lens.add_argument("frames", nargs="+", help="image files of the lens sheet, tilted in various ways")
    board = sub.add_parser("board", help="board pose and colour survey from a frame of the empty board")
    board.add_argument("frame", help="image file of the empty board with its markers")
    board.add_argument("--game", default="blox", choices=["blox", "bloxo", "blockers", "blockout", "bloxx"])
    board.add_argument("--markerless", action="store_true", help="find the board by its outline (no markers)")
    for q in (lens, board):
        q.add_argument("--calibration", "-c", default=DEFAULT_FILE,
                       help=f"the table's calibration file to create or update (default: {DEFAULT_FILE})")
        q.add_argument("--kit", default=None, help="your kit file (default: the nominal kit)")
        q.add_argument("--camera-model", default="cm3", help="cm3, cm3-wide or webcam: the default lens used "
                                                             "when there is no lens calibration (default: cm3)")
    p.set_defaults(handler=run)


def _read(path: str):
    import cv2

    from service.cli import CliError

    img = cv2.imread(path, cv2.IMREAD_COLOR)
    if img is None:
        raise CliError(f"cannot read image {path}")
    return img


def _existing(path: Path):
    from calibration.store import CalibrationError, load_calibration
    from service.cli import CliError

    if not path.exists():
        return None
    try:
        return load_calibration(path)
    except CalibrationError as exc:
        raise CliError(str(exc)) from None


def run(args: argparse.Namespace) -> int:
    from service.cli import CliError

    if args.what is None:
        raise CliError("say what to calibrate: `bloxcam calibrate lens FRAMES...` or `bloxcam calibrate board FRAME`")
    from calibration.camera import default_intrinsics
    from calibration.kit import KitError, load_kit
    from calibration.store import Calibration, save_calibration

    try:
        kit = load_kit(args.kit)
    except KitError as exc:
        raise CliError(str(exc)) from None
    path = Path(args.calibration)
    cal = _existing(path)
    if args.what == "lens":
        from calibration.lens import LensError, calibrate_lens

        frames = [(f, _read(f)) for f in args.frames]
        try:
            res = calibrate_lens(frames, kit)
        except LensError as exc:
            raise CliError(str(exc)) from None
        print(res.report())
        lens = {"rms_px": res.rms_px, "frames": [f.__dict__ for f in res.frames], "warnings": res.warnings}
        if cal is None:
            cal = Calibration(game="blox", camera=res.intrinsics, camera_model=args.camera_model, kit=kit, lens=lens)
        else:
            cal.camera, cal.lens, cal.kit = res.intrinsics, lens, kit
            cal.pose = None  # a pose solved with other intrinsics is not valid any more
        save_calibration(cal, path)
        print(f"saved {path}")
        return 0

    from calibration.pose import MarkerError, estimate_pose
    from calibration.survey import SurveyError, survey

    image = _read(args.frame)
    h, w = image.shape[:2]
    if cal is not None and not cal.camera.is_default and (cal.camera.width, cal.camera.height) == (w, h):
        intr = cal.camera
        print(f"camera: lens calibration from {path} (reprojection {cal.camera.rms_px or 0:.3f} px)")
    else:
        try:
            intr = default_intrinsics(args.camera_model, w, h)
        except ValueError as exc:
            raise CliError(str(exc)) from None
        print(f"camera: no lens calibration, using the default {args.camera_model} lens at {w}x{h} "
              "(run `bloxcam calibrate lens` for accurate geometry)")
    try:
        if args.markerless:
            from calibration.markerless import BoardNotFound, find_board

            try:
                pose, _ = find_board(image, kit, args.game, intr)
            except BoardNotFound as exc:
                raise CliError(f"board not found without markers: {exc}") from None
        else:
            pose = estimate_pose(image, kit, args.game, intr, min_markers=4)
    except MarkerError as exc:
        raise CliError(str(exc)) from None
    print(f"board pose: {pose.method}, reprojection error {pose.reprojection_px:.3f} px, "
          f"confidence {pose.confidence:.2f}")
    try:
        # R-BLOX-14: the space colours are surveyed, overriding the edition's default map.
        data = survey(image, kit, args.game, pose, intr)
    except SurveyError as exc:
        raise CliError(f"colour survey failed: {exc}") from None
    gains = data["white_balance"]["gains"]
    print(f"white balance gains R G B: {gains[0]:.3f} {gains[1]:.3f} {gains[2]:.3f} ({data['white_balance']['against']})")
    for name, lab in data.get("colors", {}).items():
        print(f"  {name:8s} L {lab[0]:6.1f}  a {lab[1]:6.1f}  b {lab[2]:6.1f}")
    if args.game == "blox":
        from calibration.tower_view import tower_view

        view = tower_view(kit, pose, intr)
        print(view.summary())
        if view.warning() is not None:
            data["warnings"] = [*data.get("warnings", []), view.warning()]
    for warning in data.get("warnings", []):
        print(f"warning: {warning}")
    if cal is None:
        cal = Calibration(game=args.game, camera=intr, camera_model=args.camera_model, kit=kit)
    cal.game, cal.camera, cal.pose, cal.survey, cal.kit = args.game, intr, pose, data, kit
    save_calibration(cal, path)
    print(f"saved {path}")
    return 0
