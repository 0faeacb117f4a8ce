"""``bloxcam replay RECORDING``: referee a recorded game and print its events."""

from __future__ import annotations

import argparse
import json
import sys

from service.cli import CliError


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "replay",
        help="referee a recorded game (fixture folder or JSON Lines) and print the events",
        description="Referee a recorded game: a fixture folder (truth.jsonl, meta.json) or a JSON Lines file.",
    )
    parser.add_argument("recording", help="fixture folder, .jsonl file, or a table's game log (.sqlite)")
    parser.add_argument("--players", help="comma-separated player colours in turn order (default: from meta.json)")
    parser.add_argument("--json", action="store_true", help="print events as JSON Lines")
    parser.add_argument("--quiet", action="store_true", help="print only the summary")
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    from service.recording import RecordingError, load_recording
    from service.table import TableError, make_referee
    from service.text import describe_event

    try:
        recording = load_recording(args.recording)
        players = args.players.split(",") if args.players else recording.players
    except RecordingError as exc:
        raise CliError(str(exc)) from exc
    try:
        referee = make_referee(recording.game, players)
    except TableError as exc:
        raise CliError(f"replay of {recording.game!r} recordings: {exc}") from exc
    out = sys.stdout
    progress = Progress(len(recording.lines)) if sys.stderr.isatty() else None
    for number, line in enumerate(recording.lines, 1):
        for event in referee.feed(line):
            if args.quiet:
                continue
            if progress:
                progress.clear()
            out.write((json.dumps(event) if args.json else describe_event(event)) + "\n")
        if progress:
            progress.show(number)
    if progress:
        progress.clear()
    stats = referee.stats
    # Each game's referee counts what matters for it (observations, actions, falls, ...).
    summary = ", ".join(f"{value} {name.replace('_', ' ')}" for name, value in vars(stats).items())
    print(summary, file=sys.stderr if args.json else out)
    if referee.state is not None:
        scores = referee.state.scores()
        line = "final scores: " + ", ".join(f"{p} {s}" for p, s in scores.items())
        expected = recording.meta.get("final_scores")
        if expected is not None:
            line += " (match the recording)" if expected == scores else f" (recording says {expected})"
        print(line, file=sys.stderr if args.json else out)
    return 0


class Progress:
    """A one-line progress bar on the terminal's standard error."""

    def __init__(self, total: int, width: int = 30) -> None:
        self.total, self.width = max(total, 1), width

    def show(self, done: int) -> None:
        filled = self.width * done // self.total
        sys.stderr.write(f"\r[{'#' * filled}{'.' * (self.width - filled)}] {100 * done // self.total:3d}%")
        sys.stderr.flush()

    def clear(self) -> None:
        sys.stderr.write("\r" + " " * (self.width + 8) + "\r")
