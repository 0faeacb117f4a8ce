"""``bloxcam print-kit``: the board markers and the lens sheet, at true scale."""

from __future__ import annotations

import argparse


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser("print-kit", help="write the markers and the ChArUco lens sheet as PDF and 300 dpi PNG",
                              description="Write bloxcam-kit.pdf (true scale), markers.png and charuco.png (300 dpi). "
                                          "Print at actual size and check the 100 mm ruler.")
    p.add_argument("--out", default="kit", help="output directory (default: ./kit)")
    p.add_argument("--kit", default=None, help="your kit file (default: the nominal kit)")
    p.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    from calibration.kit import KitError, load_kit
    from calibration.printkit import write_kit
    from service.cli import CliError

    try:
        kit = load_kit(args.kit)
    except KitError as exc:
        raise CliError(str(exc)) from None
    for path in write_kit(kit, args.out):
        print(path)
    print("print at actual size (no 'fit to page'), then check the 100 mm ruler")
    return 0
