"""``bloxcam export``: write a game from a table's log as JSON Lines."""

from __future__ import annotations

import argparse
import json
import sys

from service.errors import CliError


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "export",
        help="write a game from a table's game log as JSON Lines",
        description="Write a game from a game log (SQLite) as JSON Lines: its events, or with --inputs "
        "the refereed inputs (a recording that `bloxcam replay` accepts).",
    )
    parser.add_argument("log", help="the table's game log (.sqlite)")
    parser.add_argument("game", nargs="?", type=int, help="game id (default: the current or latest game)")
    parser.add_argument("--inputs", action="store_true", help="export the inputs instead of the events")
    parser.add_argument("--list", action="store_true", help="list the games in the log")
    parser.add_argument("-o", "--output", help="file to write (default: standard output)")
    parser.set_defaults(handler=run)


def open_game(log_path: str, game_id: int | None):
    from pathlib import Path

    from service.gamelog import GameLog, GameLogError

    if not Path(log_path).is_file():
        raise CliError(f"{log_path}: no such game log")
    try:
        log = GameLog(log_path)
    except GameLogError as exc:
        raise CliError(str(exc)) from exc
    if game_id is None:
        record = log.current_game()
        if record is None:
            raise CliError(f"{log_path}: the log holds no game")
    else:
        try:
            record = log.game(game_id)
        except KeyError as exc:
            raise CliError(f"{log_path}: no game {game_id}; see --list") from exc
    return log, record


def run(args: argparse.Namespace) -> int:
    log, record = open_game(args.log, args.game)
    if args.list:
        for game in log.games():
            state = "in progress" if game.ended is None else "ended"
            print(f"{game.id:>4}  {game.game:<9} {','.join(game.players):<28} {state}")
        return 0
    lines = log.inputs(record.id) if args.inputs else log.events(record.id)
    out = open(args.output, "w", encoding="utf-8") if args.output else sys.stdout
    try:
        if args.inputs:
            out.write(json.dumps({"meta": {"game": record.game, "players": record.players}}) + "\n")
        for line in lines:
            out.write(json.dumps(line, separators=(",", ":")) + "\n")
    finally:
        if args.output:
            out.close()
    return 0
