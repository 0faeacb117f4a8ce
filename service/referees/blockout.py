"""The live Block Out! referee: declared plays from the page, the count from the stack sensor.

Inputs (recording lines, see :mod:`service.recording`):

* ``{"kind": "stability", "event": "placed" | "counting" | "stood" | "fell", "t": ...}``
  from the accelerometer's detector (:mod:`device.stability`);
* ``{"t": ..., "declare": {"player": "ann", "action": {"type": "block", "block":
  {"color": "red", "size": "large"}}}}``, or ``{"type": "pass"}``, ``{"type": "reverse"}``,
  ``{"type": "out"}`` (the player has played their last card);
* ``{"t": ..., "fault": "..."}``.

Events: ``action`` for a play, ``stability`` with ``event`` (``counting`` carries
``count_started`` and ``seconds`` so the page can show 3-2-1), ``illegal`` with the
ruling, ``end`` with the winner.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from engine import IllegalAction
from engine.blockout import Block
from engine.blockout.stability import COUNT_SECONDS
from engine.blockout.table import BlockOutTable


@dataclass
class BlockOutStats:
    observations: int = 0
    sensor_events: int = 0
    actions: int = 0
    illegal: int = 0
    falls: int = 0


@dataclass
class BlockOutReferee:
    players: list[str]
    edition_path: str | None = None
    advanced: bool = False
    seq: int = 0
    stats: BlockOutStats = field(default_factory=BlockOutStats)
    _last_t: float = 0.0

    def __post_init__(self) -> None:
        self.state = BlockOutTable(list(self.players), advanced=self.advanced)

    @property
    def clock(self) -> float:
        return self._last_t

    def feed(self, line: dict[str, Any]) -> list[dict[str, Any]]:
        t = float(line.get("t", self._last_t))
        self._last_t = max(self._last_t, t)
        if line.get("kind") == "stability":
            return self._sensor(str(line.get("event")), t)
        if "declare" in line:
            return self.declare(line["declare"], t)
        if "fault" in line:
            return [self._event(t, "fault", why=str(line["fault"]))]
        if "undo" in line or "correct" in line:
            return [self._event(t, "illegal", legal=False, rule="R-BLOCKOUT-3",
                                why="a Block Out! play cannot be taken back: the stack is what it is")]
        self.stats.observations += 1
        return []  # camera observations of the stack are not used yet

    def declare(self, declaration: dict[str, Any], t: float) -> list[dict[str, Any]]:
        player = declaration.get("player")
        action = declaration.get("action") or {}
        kind = action.get("type")
        try:
            if kind == "block":
                block = Block.from_json(action.get("block"))
                self.state.play_block(str(player), block)
            elif kind in ("pass", "reverse"):
                self.state.play_action_card(str(player), kind)
            elif kind == "out":
                self.state.out_of_cards(str(player))
            else:
                raise ValueError(f"unknown Block Out! action {kind!r} (block, pass, reverse or out)")
        except IllegalAction as exc:
            self.stats.illegal += 1
            return [self._event(t, "illegal", player=player, legal=False, action=action, rule=exc.rule, why=exc.why)]
        except ValueError as exc:
            self.stats.illegal += 1
            return [self._event(t, "illegal", player=player, legal=False, rule="R-BLOCKOUT-1", why=str(exc))]
        self.stats.actions += 1
        events = [self._event(t, "action", player=player, legal=True, action=action)]
        return events + self._end(t)

    def _sensor(self, event: str, t: float) -> list[dict[str, Any]]:
        self.stats.sensor_events += 1
        player = self.state.current_player
        try:
            decided = self.state.stability(event, t)
        except IllegalAction as exc:
            return [self._event(t, "illegal", player=player, legal=False, rule=exc.rule, why=exc.why)]
        except ValueError as exc:
            return [self._event(t, "fault", why=str(exc))]
        if decided is None:
            return []
        fields: dict[str, Any] = {"event": decided, "player": player}
        if decided == "counting":
            fields.update(count_started=t, seconds=COUNT_SECONDS)
        if decided == "fell":
            self.stats.falls += 1
            fields["why"] = f"the stack fell on {player}'s turn: {player} draws 3 cards and starts a new stack"
        return [self._event(t, "stability", **fields)] + self._end(t)

    def _end(self, t: float) -> list[dict[str, Any]]:
        if self.state.winner is None:
            return []
        return [self._event(t, "end", winners=[self.state.winner],
                            ranking=[{"rank": 1, "player": self.state.winner, "points": 1}])]

    def snapshot(self) -> dict[str, Any]:
        table = self.state
        return {
            "game": "blockout",
            "players": list(self.players),
            "started": True,
            **table.to_json(),
            "scores": table.scores(),
            "finished": table.is_terminal(),
            "winners": [table.winner] if table.winner else [],
            "count_seconds": COUNT_SECONDS,
        }

    def _event(self, t: float, kind: str, **fields: Any) -> dict[str, Any]:
        self.seq += 1
        event = {"seq": self.seq, "t": t, "game": "blockout", "kind": kind}
        event.update({k: v for k, v in fields.items() if v is not None})
        event["stack"] = [b.to_json() for b in self.state.stack]
        return event
