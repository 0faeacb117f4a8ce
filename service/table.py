"""One table's live service: the referee, its game log, its source and its listeners.

The referee thread (the source runner) and the web handlers both call into
:class:`TableService`; a lock serialises them, so each input is refereed and committed
to the log before the next one, and listeners (the page's live stream, the MQTT
publisher) see events in ``seq`` order.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from service.config import TableConfig
from service.gamelog import GameLog, GameRecord
from service.referee import BloxReferee

#: called with the new events in seq order; ``reset`` is True when a new game started
Listener = Callable[[list[dict[str, Any]], bool], None]
#: the most missed events a reconnecting follower is sent (as many as ``/api/events`` gives at once)
MAX_BACKLOG = 5000


class TableError(ValueError):
    """A request the table cannot carry out; the message says why."""


def make_referee(game: str, players: list[str], edition: str | None = None) -> Any:
    """The referee for ``game``: BloxReferee or one of ``service.referees``."""
    if game == "blox":
        factory: Any = BloxReferee
    elif game == "bloxx":
        from service.referees.bloxx import BloxxReferee

        factory = BloxxReferee
    elif game == "blockout":
        from service.referees.blockout import BlockOutReferee

        factory = BlockOutReferee
    else:
        raise TableError(
            f"live refereeing of {game!r} is not available yet; this table referees blox, bloxx and blockout"
        )
    try:
        return factory(list(players), edition)
    except ValueError as exc:
        raise TableError(str(exc)) from exc


@dataclass
class SourceStatus:
    kind: str = ""
    position: int = 0
    total: int = 0
    finished: bool = False
    faults: int = 0
    skipped: int = 0
    speed: float = 1.0
    #: wall-clock time at which source time ``first_t`` was due (for latency measurements)
    start_wall: float | None = None
    first_t: float | None = None
    #: what the table's set-up warns about, for the page (e.g. a camera that cannot read towers)
    warnings: list[str] = field(default_factory=list)


class TableService:
    """The referee of one table with its durable log."""

    def __init__(self, config: TableConfig, log: GameLog | None = None) -> None:
        self.config = config
        self.log = log or GameLog(config.table.log)
        self._lock = threading.RLock()
        self._listeners: list[Listener] = []
        self.source = SourceStatus(kind=config.source.kind)
        self.restored_events = 0
        self.record, self.referee = self._restore_or_start()

    # ------------------------------------------------------------------ games

    def _restore_or_start(self) -> tuple[GameRecord, BloxReferee]:
        current = self.log.current_game()
        if current is not None and current.ended is None:
            referee = make_referee(current.game, current.players, current.settings.get("edition"))
            regenerated = 0
            for line in self.log.inputs(current.id):
                regenerated += len(referee.feed(line))
            stored = self.log.last_seq(current.id)
            if regenerated != stored or referee.seq != stored:
                raise TableError(
                    f"{self.log.path}: game {current.id} rebuilt to event {referee.seq} but the log holds {stored}; "
                    "the log was written by a different version of the rules"
                )
            self.restored_events = stored
            return current, referee
        return self._new_game(self.config.game.name, list(self.config.game.players))

    def _new_game(self, game: str, players: list[str]) -> tuple[GameRecord, BloxReferee]:
        edition = str(self.config.game.edition) if self.config.game.edition else None
        referee = make_referee(game, players, edition)
        record = self.log.start_game(game, players, {"edition": edition, "table": self.config.table.name})
        return record, referee

    def start_game(self, game: str, players: list[str]) -> GameRecord:
        with self._lock:
            self.record, self.referee = self._new_game(game, players)
            self._notify([], reset=True)
            return self.record

    @property
    def resume_after(self) -> float | None:
        """The source time up to which the log already holds this game's inputs."""
        return self.log.last_input_t(self.record.id)

    # ------------------------------------------------------------------ inputs

    def feed(self, line: dict[str, Any]) -> list[dict[str, Any]]:
        """Referee one input; commit it with its events before anyone sees them."""
        with self._lock:
            events = self.referee.feed(line)
            if events:
                self.log.commit(self.record.id, line, events)
                if events[-1]["kind"] == "end":
                    self.log.end_game(self.record.id)
                self._notify(events)
            return events

    def declare(self, player: str, action: dict[str, Any]) -> list[dict[str, Any]]:
        return self.feed({"t": self.referee.clock, "declare": {"player": player, "action": action}})

    def correct(self, action: dict[str, Any]) -> list[dict[str, Any]]:
        return self.feed({"t": self.referee.clock, "correct": {"action": action}})

    def undo(self) -> list[dict[str, Any]]:
        return self.feed({"t": self.referee.clock, "undo": True})

    def fault(self, why: str) -> list[dict[str, Any]]:
        """Camera or sensor trouble: an event for the players; the game state is untouched."""
        self.source.faults += 1
        return self.feed({"t": self.referee.clock, "fault": why})

    # ------------------------------------------------------------------ outputs

    def subscribe(self, listener: Listener) -> None:
        with self._lock:
            self._listeners.append(listener)

    def follow(self, listener: Listener, recent: int = 0, seen: tuple[int, int] | None = None
               ) -> tuple[dict[str, Any], list[dict[str, Any]]]:
        """Subscribe ``listener`` and return the state and the events it has not had, read at that same instant.

        Under the lock no input is committed in between, so every event is either in the
        returned backlog or handed to the listener later: none lost, none twice. The backlog
        is the last ``recent`` events of the current game, or, for a follower that has seen
        this game up to event ``seen = (game_id, seq)`` (a reconnecting page), the events
        after it (at most MAX_BACKLOG; an older gap is not worth re-sending).
        """
        with self._lock:
            self._listeners.append(listener)
            last = self.referee.seq
            after = max(0, last - recent)
            if seen is not None and seen[0] == self.record.id:
                after = max(min(seen[1], last), last - MAX_BACKLOG)
            return self.snapshot(), self.events(after) if after < last else []

    def unsubscribe(self, listener: Listener) -> None:
        with self._lock:
            if listener in self._listeners:
                self._listeners.remove(listener)

    def _notify(self, events: list[dict[str, Any]], reset: bool = False) -> None:
        for listener in list(self._listeners):
            listener(events, reset)

    def events(self, after: int = 0, limit: int | None = None) -> list[dict[str, Any]]:
        return self.log.events(self.record.id, after, limit)

    def snapshot(self) -> dict[str, Any]:
        with self._lock:
            snap = self.referee.snapshot()
            snap.update(
                {
                    "table": self.config.table.name,
                    "game_id": self.record.id,
                    "seq": self.referee.seq,
                    "source": {**vars(self.source), "warnings": list(self.source.warnings)},
                    "stats": vars(self.referee.stats).copy(),
                }
            )
            return snap
