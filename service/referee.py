"""The referee: observations and declarations in, events out (observation.md, "Events").

This is the decision logic of the live referee, free of I/O so that it replays exactly
from a recording. Only ``stable`` observations move the engine. A change that no single
legal action explains is reported once and the engine waits: the board put back as it
was, or a legal change from the committed position, resumes the game (R-BLOX-15).

Actions the camera cannot see (a Blox card exchange) arrive as *declarations* from the
page: ``{"player": "green", "action": {"type": "exchange", "cards": [...]}}``.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from engine import IllegalAction, VerdictKind
from engine.blox import BloxGame, BloxState, action_from_json, infer, load_edition, parse_cells


@dataclass
class RefereeStats:
    observations: int = 0
    unstable: int = 0
    rejected: int = 0
    actions: int = 0
    illegal: int = 0
    unrecognised: int = 0


@dataclass
class BloxReferee:
    """Referees one Blox game in table mode from a stream of observations."""

    players: list[str]
    edition_path: str | None = None
    state: BloxState | None = None
    seq: int = 0
    stats: RefereeStats = field(default_factory=RefereeStats)
    _pending: tuple | None = None
    _last_t: float = 0.0

    def __post_init__(self) -> None:
        self.edition = load_edition(self.edition_path)
        self.game = BloxGame(self.players, self.edition)

    # ------------------------------------------------------------------ inputs

    def feed(self, line: dict[str, Any]) -> list[dict[str, Any]]:
        """One recording line (an observation or a declaration); returns the events it caused."""
        t = float(line.get("t", self._last_t))
        if "declare" in line:
            self._last_t = max(self._last_t, t)
            return self.declare(line["declare"], t=t)
        if "correct" in line:
            self._last_t = max(self._last_t, t)
            return self.correct(line["correct"], t=t)
        if "undo" in line:
            self._last_t = max(self._last_t, t)
            return self.undo(t=t)
        if "fault" in line:
            self._last_t = max(self._last_t, t)
            return [self._event(t, "fault", why=str(line["fault"]))]
        return self.observe(line)

    def observe(self, obs: dict[str, Any]) -> list[dict[str, Any]]:
        self.stats.observations += 1
        t = float(obs.get("t", self._last_t))
        self._last_t = t
        if obs.get("game") != "blox":
            self.stats.rejected += 1
            return [self._event(t, "fault", why=f"observation of game {obs.get('game')!r} given to the Blox referee")]
        if not obs.get("stable", False):
            self.stats.unstable += 1
            return []
        cells = obs.get("state", {}).get("cells")
        if self.state is None:
            return self._start(t, obs)
        if self.state.is_terminal():
            return []
        verdict = infer(self.state, cells)
        if verdict.kind is VerdictKind.NO_CHANGE:
            if self._pending is not None:
                self._pending = None
                return [self._event(t, "correction", why="the board is back as it was before the last change")]
            return []
        if verdict.kind is VerdictKind.ACTION:
            self._pending = None
            return self._commit(t, verdict.player, verdict.action, verdict.to_json())
        key = _freeze(cells)
        if key == self._pending:
            return []  # the same wrong board, still waiting for the players
        self._pending = key
        if verdict.kind is VerdictKind.ILLEGAL:
            self.stats.illegal += 1
            return [self._event(t, "illegal", legal=False, **_verdict_fields(verdict))]
        self.stats.unrecognised += 1
        return [self._event(t, "unrecognised", **_verdict_fields(verdict))]

    def declare(self, declaration: dict[str, Any], t: float) -> list[dict[str, Any]]:
        """An action declared on the page (an exchange, or a correction of a knock's card count)."""
        if self.state is None:
            return [self._event(t, "fault", why="no game is running yet")]
        player = declaration.get("player")
        try:
            action = action_from_json(declaration.get("action", {}))
        except ValueError as exc:
            return [self._event(t, "illegal", player=player, legal=False, rule="R-BLOX-15", why=str(exc))]
        if player != self.state.current.color:
            return [
                self._event(
                    t, "illegal", player=player, legal=False, rule="R-BLOX-16",
                    why=f"it is {self.state.current.color}'s turn, not {player}'s",
                )
            ]
        try:
            return self._commit(t, player, action, {"action": action.to_json()})
        except IllegalAction as exc:
            return [self._event(t, "illegal", player=player, legal=False, rule=exc.rule, why=exc.why)]

    def correct(self, correction: dict[str, Any], t: float) -> list[dict[str, Any]]:
        """Replace the last committed action by the one the players say it was.

        The camera cannot count the cards of a knock-off (3 or more), so the page lets the
        players correct it; any other misread action can be corrected the same way. The
        corrected action must be legal from the position before the last action.
        """
        if self.state is None or not self.state.history:
            return [self._event(t, "illegal", legal=False, rule="R-BLOX-15", why="there is no action to correct")]
        try:
            action = action_from_json(correction.get("action", {}))
        except ValueError as exc:
            return [self._event(t, "illegal", legal=False, rule="R-BLOX-15", why=str(exc))]
        previous = self.state.undo()
        player = self.state.current.color
        try:
            self.state.apply_action(action)
        except IllegalAction as exc:
            self.state.apply_action(previous)
            return [self._event(t, "illegal", player=player, legal=False, rule=exc.rule, why=exc.why)]
        return [self._event(t, "correction", player=player, action=action.to_json(), replaces=previous.to_json())]

    def undo(self, t: float) -> list[dict[str, Any]]:
        """Take back the last committed action (the players asked for it on the page)."""
        if self.state is None or not self.state.history:
            return [self._event(t, "illegal", legal=False, rule="R-BLOX-15", why="there is no action to undo")]
        action = self.state.undo()
        self._pending = None
        return [self._event(t, "correction", undone=action.to_json(), why="the last action was taken back")]

    @property
    def clock(self) -> float:
        """The time of the latest input, on the source's clock."""
        return self._last_t

    def snapshot(self) -> dict[str, Any]:
        """What the status page draws: board, scores, phase, whose turn."""
        if self.state is None:
            return {"game": "blox", "players": list(self.players), "started": False}
        state = self.state
        return {
            "game": "blox",
            "players": list(self.players),
            "started": True,
            "board": state.observation_state(),
            "scores": state.scores(),
            "blocks": {p.color: p.block_total for p in state.players},
            "phase": state.phase,
            "round": state.round,
            "current": state.current.color,
            "finished": state.is_terminal(),
            "winners": state.winners() if state.is_terminal() else [],
            "waiting": self._pending is not None,
        }

    # ------------------------------------------------------------------ outputs

    def _start(self, t: float, obs: dict[str, Any]) -> list[dict[str, Any]]:
        state = obs.get("state", {})
        if state.get("colors") and state["colors"] != [list(r) for r in self.edition.board]:
            self.edition = self.edition.with_board(state["colors"])
            self.game = BloxGame(self.players, self.edition)
        try:
            parse_cells(self.edition, state.get("cells"))
        except ValueError as exc:
            self.stats.rejected += 1
            return [self._event(t, "fault", why=f"the first stable board is malformed: {exc}")]
        self.state = self.game.table_state(state["cells"])
        return [self._event(t, "phase", phase=self.state.phase, players=list(self.players))]

    def _commit(self, t: float, player: str | None, action: Any, payload: dict[str, Any]) -> list[dict[str, Any]]:
        assert self.state is not None
        phase = self.state.phase
        self.state.apply_action(action)  # raises IllegalAction with the state unchanged
        self.stats.actions += 1
        fields = {k: v for k, v in payload.items() if k in ("action", "cards", "points")}
        events = [self._event(t, "action", player=player, legal=True, **fields)]
        if self.state.phase != phase:
            events.append(self._event(t, "phase", phase=self.state.phase))
        if self.state.is_terminal():
            ranking = [{"rank": rank, "player": p.color, "points": p.points, "blocks": p.block_total}
                       for rank, p in self.state.ranking()]
            events.append(self._event(t, "end", ranking=ranking, winners=self.state.winners()))
        return events

    def _event(self, t: float, kind: str, **fields: Any) -> dict[str, Any]:
        self.seq += 1
        event = {"seq": self.seq, "t": t, "game": "blox", "kind": kind}
        event.update({k: v for k, v in fields.items() if v is not None})
        if self.state is not None and kind in ("action", "end", "correction"):
            event["scores"] = self.state.scores()
        return event


def _verdict_fields(verdict: Any) -> dict[str, Any]:
    data = verdict.to_json()
    data.pop("kind")
    return data


def _freeze(cells: Any) -> tuple:
    return tuple(tuple(repr(c) for c in row) for row in cells or ())


def replay(lines: Iterator[dict[str, Any]], players: list[str], edition_path: str | None = None) -> Iterator[dict[str, Any]]:
    """Every event of a recorded game, in order."""
    referee = BloxReferee(players, edition_path)
    for line in lines:
        yield from referee.feed(line)
