"""The game log: one SQLite file per table, in WAL mode, that loses no committed event.

What is stored is what is needed to rebuild the referee exactly after a crash, a
``kill -9`` or a power cut: every *input* that changed the referee (a stable observation
that produced events, a declaration or correction from the page, an undo), committed in
the same transaction as the events it produced. On restart the inputs are fed again to
a fresh referee, which reproduces the same state and the same events; the stored events
are the record the page and subscribers read.

``synchronous=FULL`` makes a commit durable once ``commit`` returns, at the price of an
fsync per input (a few per minute at a real table).
"""

from __future__ import annotations

import json
import sqlite3
import threading
import time
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

SCHEMA_VERSION = 1

_SCHEMA = """
CREATE TABLE IF NOT EXISTS games (
    id        INTEGER PRIMARY KEY,
    game      TEXT NOT NULL,
    players   TEXT NOT NULL,
    settings  TEXT NOT NULL,
    started   REAL NOT NULL,
    ended     REAL
);
CREATE TABLE IF NOT EXISTS inputs (
    game_id   INTEGER NOT NULL REFERENCES games(id),
    n         INTEGER NOT NULL,
    t         REAL NOT NULL,
    body      TEXT NOT NULL,
    PRIMARY KEY (game_id, n)
);
CREATE TABLE IF NOT EXISTS events (
    game_id   INTEGER NOT NULL REFERENCES games(id),
    seq       INTEGER NOT NULL,
    t         REAL NOT NULL,
    kind      TEXT NOT NULL,
    body      TEXT NOT NULL,
    PRIMARY KEY (game_id, seq)
);
CREATE TABLE IF NOT EXISTS cursors (
    name      TEXT NOT NULL,
    game_id   INTEGER NOT NULL,
    seq       INTEGER NOT NULL,
    PRIMARY KEY (name, game_id)
);
"""


class GameLogError(RuntimeError):
    """The log file cannot be used (wrong schema version, not a database, ...)."""


@dataclass(frozen=True)
class GameRecord:
    id: int
    game: str
    players: list[str]
    settings: dict[str, Any]
    started: float
    ended: float | None


class GameLog:
    """A table's game log. Safe to share between the referee thread and web handlers."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._lock = threading.RLock()
        try:
            self._db = sqlite3.connect(self.path, check_same_thread=False, isolation_level=None)
            self._db.execute("PRAGMA journal_mode=WAL")
            self._db.execute("PRAGMA synchronous=FULL")
            self._db.execute("PRAGMA foreign_keys=ON")
            version = self._db.execute("PRAGMA user_version").fetchone()[0]
            if version not in (0, SCHEMA_VERSION):
                raise GameLogError(f"{self.path}: game log schema {version}, this bloxcam reads {SCHEMA_VERSION}")
            self._db.executescript(_SCHEMA)
            self._db.execute(f"PRAGMA user_version={SCHEMA_VERSION}")
        except sqlite3.DatabaseError as exc:
            raise GameLogError(f"{self.path}: not a bloxcam game log ({exc})") from exc

    def close(self) -> None:
        with self._lock:
            self._db.close()

    # ------------------------------------------------------------------ games

    def start_game(self, game: str, players: list[str], settings: dict[str, Any] | None = None) -> GameRecord:
        with self._lock, self._db:
            self._db.execute("BEGIN IMMEDIATE")
            now = time.time()
            self._db.execute("UPDATE games SET ended = ? WHERE ended IS NULL", (now,))
            cur = self._db.execute(
                "INSERT INTO games (game, players, settings, started) VALUES (?, ?, ?, ?)",
                (game, json.dumps(players), json.dumps(settings or {}), now),
            )
            game_id = cur.lastrowid
        return self.game(game_id)

    def game(self, game_id: int) -> GameRecord:
        row = self._db.execute("SELECT id, game, players, settings, started, ended FROM games WHERE id = ?", (game_id,)).fetchone()
        if row is None:
            raise KeyError(f"no game {game_id} in {self.path}")
        return _record(row)

    def current_game(self) -> GameRecord | None:
        """The game in progress, else the most recent one."""
        with self._lock:
            row = self._db.execute(
                "SELECT id, game, players, settings, started, ended FROM games ORDER BY ended IS NOT NULL, id DESC LIMIT 1"
            ).fetchone()
        return _record(row) if row else None

    def games(self) -> list[GameRecord]:
        with self._lock:
            rows = self._db.execute("SELECT id, game, players, settings, started, ended FROM games ORDER BY id").fetchall()
        return [_record(r) for r in rows]

    def end_game(self, game_id: int) -> None:
        with self._lock, self._db:
            self._db.execute("UPDATE games SET ended = ? WHERE id = ? AND ended IS NULL", (time.time(), game_id))

    # ------------------------------------------------------------------ inputs and events

    def commit(self, game_id: int, line: dict[str, Any] | None, events: Iterable[dict[str, Any]]) -> None:
        """Store one input and the events it produced, atomically and durably."""
        events = list(events)
        with self._lock:
            self._db.execute("BEGIN IMMEDIATE")
            try:
                if line is not None:
                    n = self._db.execute(
                        "SELECT COALESCE(MAX(n), 0) + 1 FROM inputs WHERE game_id = ?", (game_id,)
                    ).fetchone()[0]
                    self._db.execute(
                        "INSERT INTO inputs (game_id, n, t, body) VALUES (?, ?, ?, ?)",
                        (game_id, n, float(line.get("t", 0.0)), json.dumps(line, separators=(",", ":"))),
                    )
                self._db.executemany(
                    "INSERT INTO events (game_id, seq, t, kind, body) VALUES (?, ?, ?, ?, ?)",
                    [
                        (game_id, e["seq"], float(e.get("t", 0.0)), e["kind"], json.dumps(e, separators=(",", ":")))
                        for e in events
                    ],
                )
                self._db.execute("COMMIT")
            except BaseException:
                self._db.execute("ROLLBACK")
                raise

    def inputs(self, game_id: int) -> list[dict[str, Any]]:
        with self._lock:
            rows = self._db.execute("SELECT body FROM inputs WHERE game_id = ? ORDER BY n", (game_id,)).fetchall()
        return [json.loads(r[0]) for r in rows]

    def events(self, game_id: int, after: int = 0, limit: int | None = None) -> list[dict[str, Any]]:
        query = "SELECT body FROM events WHERE game_id = ? AND seq > ? ORDER BY seq"
        args: tuple[Any, ...] = (game_id, after)
        if limit is not None:
            query += " LIMIT ?"
            args += (limit,)
        with self._lock:
            rows = self._db.execute(query, args).fetchall()
        return [json.loads(r[0]) for r in rows]

    def last_seq(self, game_id: int) -> int:
        with self._lock:
            return self._db.execute("SELECT COALESCE(MAX(seq), 0) FROM events WHERE game_id = ?", (game_id,)).fetchone()[0]

    def last_input_t(self, game_id: int) -> float | None:
        with self._lock:
            row = self._db.execute("SELECT MAX(t) FROM inputs WHERE game_id = ?", (game_id,)).fetchone()
        return row[0]

    # ------------------------------------------------------------------ subscriber cursors

    def cursor(self, name: str, game_id: int) -> int:
        """The last event ``seq`` a named consumer (e.g. the MQTT publisher) has handled."""
        with self._lock:
            row = self._db.execute("SELECT seq FROM cursors WHERE name = ? AND game_id = ?", (name, game_id)).fetchone()
        return row[0] if row else 0

    def set_cursor(self, name: str, game_id: int, seq: int) -> None:
        with self._lock, self._db:
            self._db.execute(
                "INSERT INTO cursors (name, game_id, seq) VALUES (?, ?, ?) "
                "ON CONFLICT (name, game_id) DO UPDATE SET seq = excluded.seq",
                (name, game_id, seq),
            )


def _record(row: tuple) -> GameRecord:
    return GameRecord(row[0], row[1], json.loads(row[2]), json.loads(row[3]), row[4], row[5])
