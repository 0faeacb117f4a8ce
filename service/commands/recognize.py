"""``bloxcam recognize GAME IMAGE --calibration FILE``: print the observation of one frame."""

from __future__ import annotations

import argparse
import json

from service.cli import CliError


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "recognize", help="recognise one image and print its observation (JSON)",
        description="Read one image of the table with the table's calibration and print the observation "
                    "(observation.md). A photo is treated as a still scene: it is stable unless something (a "
                    "hand) covers the board.")
    p.add_argument("game", help="blox, bloxo or blockers")
    p.add_argument("image", help="image file (PNG, JPEG, ...)")
    p.add_argument("--calibration", "-c", required=True, help="the table's calibration file")
    p.add_argument("--overlay", metavar="PNG", help="also write the image with what was recognised drawn on it")
    p.add_argument("--compact", action="store_true", help="one line of JSON")
    p.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    import cv2

    from calibration.store import CalibrationError, load_calibration
    from vision import make_recognizer
    from vision.evaluate import FixtureError, read_image

    try:
        cal = load_calibration(args.calibration)
    except CalibrationError as exc:
        raise CliError(str(exc)) from None
    if cal.game != args.game:
        raise CliError(f"{args.calibration} is a calibration for {cal.game}, not {args.game} "
                       f"(run `bloxcam calibrate board FRAME --game {args.game}`)")
    if cal.survey is None or cal.pose is None:
        raise CliError(f"{args.calibration} has no board survey: run `bloxcam calibrate board FRAME` first")
    try:
        image = read_image(args.image)
    except FixtureError as exc:
        raise CliError(str(exc)) from None
    try:
        rec = make_recognizer(args.game, cal, stable_seconds=1.0)
        # A photo is a still scene: show it to the recogniser as held for a second.
        rec.process(image, 0.0, 0)
        obs = rec.process(image, 1.0 + 1e-3, 0)
    except ValueError as exc:
        raise CliError(str(exc)) from None
    obs["t"] = 0.0
    print(json.dumps(obs, separators=(",", ":")) if args.compact else json.dumps(obs, indent=1))
    if args.overlay:
        if not cv2.imwrite(args.overlay, rec.overlay(image, obs)):
            raise CliError(f"cannot write {args.overlay}")
    return 0
