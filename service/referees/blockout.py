"""The live Block Out! referee: declared plays from the page, the count from the stack sensor.

Inputs (recording lines, see :mod:`service.recording`):

* ``{"kind": "stability", "event": "placed" | "counting" | "stood" | "fell", "t": ...}``
  from the accelerometer's detector (:mod:`device.stability`);
* ``{"t": ..., "declare": {"player": "ann", "action": {"type": "block", "block":
  {"color": "red", "size": "large"}}}}``, or ``{"type": "pass"}``, ``{"type": "reverse"}``,
  ``{"type": "out"}`` (the player has played their last card);
* ``{"t": ..., "fault": "..."}``;
* camera observations of the stack, ``{"game": "blockout", "stable": true, "state":
  {"stack": [...]}}`` (``vision.blockout``), where a camera watches it. A still, surely
  read view checks the sensor: after the sensor's ``fell`` the camera's next still view
  (within :data:`FALL_CONFIRM_S`) confirms the fall, or, showing every block still
  standing, takes it back (a knock on the table is not a fall) and finishes the count
  itself; and a view showing fewer blocks than the stack holds is a fall the sensor
  missed.

Events: ``action`` for a play, ``stability`` with ``event`` (``counting`` carries
``count_started`` and ``seconds`` so the page can show 3-2-1), ``illegal`` with the
ruling, ``end`` with the winner.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field
from typing import Any

from engine import IllegalAction
from engine.blockout import Block
from engine.blockout.stability import COUNT_SECONDS
from engine.blockout.table import BlockOutTable, TablePhase

#: the camera's still view this soon after the sensor's fall confirms or takes back the fall (seconds)
FALL_CONFIRM_S = 6.0
#: a camera view read less surely than this neither overrules nor adds to the sensor. On
#: development scenes (bench/vision_blockout.py --seed 7900000 --setups 8 --sure 0.5) the
#: stable views at 0.5 or more read the height exactly in 57 of 59, never too low (a false fall).
CAMERA_MIN_CONFIDENCE = 0.5


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
        #: a fall reported by the sensor, awaiting the camera: (the table before it, when, blocks then)
        self._fall_check: tuple[BlockOutTable, float, int] | None = None
        #: the sensor stopped counting at a fall the camera took back: the camera ends the count
        self._camera_counts = False

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
        return self.observe(line, t)

    def observe(self, obs: dict[str, Any], t: float) -> list[dict[str, Any]]:
        """A camera view of the stack: it confirms, takes back or adds a fall (module docstring)."""
        self.stats.observations += 1
        if obs.get("game") != "blockout":
            return [self._event(t, "fault", why=f"observation of game {obs.get('game')!r} given to the Block Out! referee")]
        seen = (obs.get("state") or {}).get("stack")
        if not isinstance(seen, list):
            return [self._event(t, "fault", why="the observation has no stack")]
        sure = float(obs.get("confidence", 0.0)) >= CAMERA_MIN_CONFIDENCE
        if not obs.get("stable") or obs.get("occluded") or not sure:
            return []  # a hand at the stack, or blocks still moving: nothing to compare
        standing = len(seen)
        if self._fall_check is not None:
            # Open until it lapses or a play is declared, whatever the views in between: the
            # game log keeps only inputs that caused events, and a restored referee must
            # decide exactly as this one.
            before, t_fell, blocks = self._fall_check
            if t - t_fell > FALL_CONFIRM_S:
                self._fall_check = None
            elif standing >= blocks:
                self._fall_check = None
                return self._take_back_fall(before, blocks, t)
            else:
                return []  # the camera agrees: the stack is down
        if self._camera_counts and self.state.phase is TablePhase.COUNTING and self.state.count_started is not None:
            if t - self.state.count_started >= COUNT_SECONDS:
                self._camera_counts = False
                return self._decided("stood", t, source="camera")
        expected = len(self.state.stack)
        # While placing, the declared block may still be in the player's hand.
        missing = expected - standing - (1 if self.state.phase is TablePhase.PLACING else 0)
        if expected and missing > 0 and self.state.phase is not TablePhase.OVER:
            player = self.state.current_player
            if self.state.stability("fell", t) == "fell":
                self._camera_counts = False
                why = f"the camera sees {standing} of the stack's {expected} blocks standing"
                return self._decided_event("fell", t, source="camera", player=player, seen=why)
        return []

    def _take_back_fall(self, before: BlockOutTable, blocks: int, t: float) -> list[dict[str, Any]]:
        self.state = before
        self.stats.falls -= 1
        self._camera_counts = self.state.phase is TablePhase.COUNTING
        events = [self._event(t, "correction", player=self.state.current_player,
                              why=f"the camera still sees all {blocks} blocks standing: the sensor's fall was a knock, "
                                  "not a fall; the stack is as it was")]
        if self._camera_counts and self.state.count_started is not None and t - self.state.count_started >= COUNT_SECONDS:
            self._camera_counts = False
            events += self._decided("stood", t, source="camera")
        return events

    def _decided(self, event: str, t: float, source: str) -> list[dict[str, Any]]:
        player = self.state.current_player  # before the count's end passes the turn on
        try:
            decided = self.state.stability(event, t)
        except IllegalAction as exc:
            return [self._event(t, "illegal", player=player, legal=False, rule=exc.rule, why=exc.why)]
        return self._decided_event(decided, t, source=source, player=player) if decided else []

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
        self._fall_check = None  # the players go on: the fall is accepted
        events = [self._event(t, "action", player=player, legal=True, action=action)]
        return events + self._end(t)

    def _sensor(self, event: str, t: float) -> list[dict[str, Any]]:
        self.stats.sensor_events += 1
        player = self.state.current_player
        before, blocks = copy.deepcopy(self.state), len(self.state.stack)
        try:
            decided = self.state.stability(event, t)
        except IllegalAction as exc:
            return [self._event(t, "illegal", player=player, legal=False, rule=exc.rule, why=exc.why)]
        except ValueError as exc:
            return [self._event(t, "fault", why=str(exc))]
        if decided is None:
            return []
        if decided == "fell":
            self._fall_check = (before, t, blocks)  # for the camera, if one watches
        if decided in ("stood", "fell"):
            self._camera_counts = False
        return self._decided_event(decided, t, source="sensor", player=player)

    def _decided_event(self, decided: str, t: float, source: str, player: str | None = None,
                       seen: str | None = None) -> list[dict[str, Any]]:
        player = player or self.state.current_player
        fields: dict[str, Any] = {"event": decided, "player": player, "source": source}
        if decided == "counting":
            fields.update(count_started=t, seconds=COUNT_SECONDS)
        if decided == "fell":
            self.stats.falls += 1
            fields["why"] = (f"{seen}; " if seen else "") + (
                f"the stack fell on {player}'s turn: {player} draws 3 cards and starts a new stack")
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
