"""``bloxcam stability accel.csv``: Block Out! stability events of a recording, as JSON Lines."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "stability",
        help="print Block Out! stability events (placed/counting/stood/fell) of an accel.csv",
        description="Run the stability detector over a t,ax,ay,az recording (observation.md) "
        "and print its events as JSON Lines. Thresholds: --set NAME=VALUE (see "
        "device.stability.StabilityConfig).",
    )
    p.add_argument("csv", help="accel.csv, or a fixture folder holding one")
    p.add_argument("--set", action="append", default=[], metavar="NAME=VALUE",
                   help="override a StabilityConfig field, e.g. --set settle_level=0.25")
    p.set_defaults(handler=run)


def _config(pairs: list[str]):  # noqa: ANN202
    from device.stability import StabilityConfig  # noqa: PLC0415
    from service.cli import CliError  # noqa: PLC0415

    try:
        return StabilityConfig().with_settings(pairs)
    except ValueError as exc:
        raise CliError(str(exc)) from None


def run(args: argparse.Namespace) -> int:
    from device.accelcsv import AccelCsvError, read_csv  # noqa: PLC0415
    from device.stability import StabilityDetector  # noqa: PLC0415
    from service.cli import CliError  # noqa: PLC0415

    path = Path(args.csv)
    if path.is_dir():
        path = path / "accel.csv"
    if not path.is_file():
        raise CliError(f"no such file: {path}")
    detector = StabilityDetector(_config(args.set))
    out = sys.stdout
    try:
        for row in read_csv(path):
            for event in detector.update(*row):
                out.write(json.dumps(event) + "\n")
    except AccelCsvError as exc:
        raise CliError(str(exc)) from None
    for event in detector.finish():
        out.write(json.dumps(event) + "\n")
    out.flush()
    return 0
