"""Reading and writing recorded games (fixture folders of observation.md).

A recorded game is a folder ``fixtures/<game>/<name>/`` with ``truth.jsonl`` (one
observation per frame), ``meta.json`` (players, edition, how it was made) and, as an
extension of the fixture format, ``table-inputs.jsonl``: what the players declared or
corrected on the page at time ``t`` (actions the camera cannot see, such as a Blox card
exchange, or the card count of a knock-off).
A plain ``.jsonl`` file of observations and declarations is accepted too.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any


class RecordingError(ValueError):
    """A recording that cannot be read; the message names the file and line."""


@dataclass(frozen=True)
class Recording:
    path: Path
    meta: dict[str, Any]
    lines: list[dict[str, Any]]

    @property
    def game(self) -> str:
        return str(self.meta.get("game") or next((l["game"] for l in self.lines if "game" in l), "blox"))

    @property
    def players(self) -> list[str]:
        players = self.meta.get("players")
        if not players:
            raise RecordingError(f"{self.path}: meta.json does not name the players")
        return list(players)


def read_jsonl(path: Path) -> list[dict[str, Any]]:
    out = []
    with path.open(encoding="utf-8") as fh:
        for number, text in enumerate(fh, 1):
            if not text.strip():
                continue
            try:
                value = json.loads(text)
            except json.JSONDecodeError as exc:
                raise RecordingError(f"{path}:{number}: not JSON ({exc.msg})") from exc
            if not isinstance(value, dict):
                raise RecordingError(f"{path}:{number}: each line must be a JSON object")
            out.append(value)
    return out


def load_recording(path: str | Path) -> Recording:
    """A recorded game from a fixture folder or a single JSON Lines file."""
    path = Path(path)
    if path.is_dir():
        truth = path / "truth.jsonl"
        if not truth.exists():
            raise RecordingError(f"{path}: no truth.jsonl in this folder")
        meta_file = path / "meta.json"
        try:
            meta = json.loads(meta_file.read_text("utf-8")) if meta_file.exists() else {}
        except json.JSONDecodeError as exc:
            raise RecordingError(f"{meta_file}: not JSON ({exc.msg})") from exc
        lines = merge_by_time(read_jsonl(truth), _optional(path / "table-inputs.jsonl"))
        return Recording(path, meta, lines)
    if not path.exists():
        raise RecordingError(f"{path}: no such file or folder")
    if _is_sqlite(path):
        return _from_game_log(path)
    lines = read_jsonl(path)
    meta: dict[str, Any] = {}
    if lines and "meta" in lines[0]:  # as written by `bloxcam export --inputs`
        meta = lines.pop(0)["meta"]
    meta_file = path.with_suffix(".meta.json")
    if meta_file.exists():
        meta = json.loads(meta_file.read_text("utf-8"))
    return Recording(path, meta, lines)


def _is_sqlite(path: Path) -> bool:
    with path.open("rb") as fh:
        return fh.read(16) == b"SQLite format 3\x00"


def _from_game_log(path: Path) -> Recording:
    """The latest game of a table's game log, as the inputs the referee saw."""
    from service.gamelog import GameLog, GameLogError

    try:
        log = GameLog(path)
    except GameLogError as exc:
        raise RecordingError(str(exc)) from exc
    try:
        record = log.current_game()
        if record is None:
            raise RecordingError(f"{path}: the game log holds no game")
        meta = {"game": record.game, "players": record.players, "game_id": record.id}
        return Recording(path, meta, log.inputs(record.id))
    finally:
        log.close()


def _optional(path: Path) -> list[dict[str, Any]]:
    return read_jsonl(path) if path.exists() else []


def merge_by_time(observations: list[dict[str, Any]], inputs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Observations and declarations in time order; a declaration precedes a frame of the same time."""
    keyed = [(float(o.get("t", 0.0)), 1, i, o) for i, o in enumerate(observations)]
    keyed += [(float(d.get("t", 0.0)), 0, i, d) for i, d in enumerate(inputs)]
    keyed.sort(key=lambda k: k[:3])
    return [k[3] for k in keyed]


def write_recording(folder: Path, meta: dict[str, Any], lines: list[dict[str, Any]]) -> None:
    """Write a fixture folder: observations to truth.jsonl, the page's inputs to table-inputs.jsonl."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "meta.json").write_text(json.dumps(meta, indent=2) + "\n", encoding="utf-8")
    with (folder / "truth.jsonl").open("w", encoding="utf-8") as truth, (folder / "table-inputs.jsonl").open(
        "w", encoding="utf-8"
    ) as inputs:
        for line in lines:
            target = truth if "game" in line else inputs
            target.write(json.dumps(line, separators=(",", ":")) + "\n")

