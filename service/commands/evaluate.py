"""``bloxcam evaluate FIXTURE_DIR...``: recognition against the fixtures' ground truth."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from service.cli import CliError


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "evaluate", help="run recognition over fixtures and compare with their truth.jsonl",
        description="Run each fixture's frames through its game's recogniser (calibrated from the fixture's "
                    "calibration/ frames) and print error rates per metric, broken down by condition. A folder "
                    "holding several fixtures is searched for them.")
    p.add_argument("fixtures", nargs="+", metavar="FIXTURE_DIR", help="fixture folders (or folders of fixtures)")
    p.add_argument("--stable-seconds", type=float, default=1.0,
                   help="how long a scene must be still before it is committed (default: 1.0)")
    p.add_argument("--calibration", help="use this calibration file instead of the fixtures' calibration/ frames")
    p.add_argument("--json", metavar="FILE", help="also write the figures as JSON to FILE")
    p.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    from vision.evaluate import FixtureError, Report, evaluate_fixture, find_fixtures

    cal = None
    if args.calibration:
        from calibration.store import CalibrationError, load_calibration

        try:
            cal = load_calibration(args.calibration)
        except CalibrationError as exc:
            raise CliError(str(exc)) from None
    report = Report()
    try:
        paths = find_fixtures(args.fixtures)
        for path in paths:
            evaluate_fixture(path, report, stable_seconds=args.stable_seconds, calibration=cal)
    except FixtureError as exc:
        raise CliError(str(exc)) from None
    except ValueError as exc:
        raise CliError(str(exc)) from None
    print(report.format())
    if args.json:
        Path(args.json).write_text(json.dumps(report.to_json(), indent=1) + "\n", "utf-8")
    return 0
