"""The referee: observations and declarations in, events out (observation.md, "Events").

This is the decision logic of the live referee, free of I/O so that it replays exactly
from a recording. Only ``stable`` observations move the engine. A change that no single
legal action explains is reported once and the engine waits: the board put back as it
was, or a legal change from the committed position, resumes the game (R-BLOX-15).

Actions the camera cannot see (a Blox card exchange) arrive as *declarations* from the
page: ``{"player": "green", "action": {"type": "exchange", "cards": [...]}}``.
"""

from __future__ import annotations

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
        cells = self._what_was_seen(cells, obs)
        verdict = infer(self.state, cells)
        misread: list[list[int]] = []
        cleaned = cells
        if verdict.kind in (VerdictKind.ILLEGAL, VerdictKind.UNRECOGNISED):
            verdict, misread, cleaned = self._without_impossible_changes(cells, verdict)
        if verdict.kind is VerdictKind.UNRECOGNISED:
            pair = self._two_turns(cleaned)
            if pair is not None:
                self._pending = None
                events = self._commit(t, pair[0].player, pair[0].action, pair[0].to_json())
                if not self.state.is_terminal():
                    events += self._commit(t, pair[1].player, pair[1].action, pair[1].to_json())
                return events
        if verdict.kind is VerdictKind.NO_CHANGE:
            if self._pending is not None:
                self._pending = None
                return [self._event(t, "correction", why="the board is back as it was before the last change")]
            return []
        if verdict.kind is VerdictKind.ACTION:
            self._pending = None
            payload = verdict.to_json()
            if misread:
                payload["misread"] = misread
            return self._commit(t, verdict.player, verdict.action, payload)
        key = _freeze(cells)
        if key == self._pending:
            return []  # the same wrong board, still waiting for the players
        self._pending = key
        if verdict.kind is VerdictKind.ILLEGAL:
            self.stats.illegal += 1
            return [self._event(t, "illegal", legal=False, **_verdict_fields(verdict))]
        self.stats.unrecognised += 1
        return [self._event(t, "unrecognised", **_verdict_fields(verdict))]

    def _what_was_seen(self, cells: Any, obs: dict[str, Any]) -> Any:
        """The observed board with what the camera did not really see taken from the committed one.

        A cell listed as occluded, or read with a confidence under
        ``MIN_CELL_CONFIDENCE``, says nothing: it keeps its committed content, so a
        doubtful reading never moves the game (a real change shows up confidently in a
        later frame). A tower seen at the same height on the same space is the same
        tower whatever colours were read, because towers are never added to or taken
        from (R-BLOX-6); only a new tower's colours come from the camera.
        """
        assert self.state is not None
        if not isinstance(cells, list) or len(cells) != self.edition.size:
            return cells
        committed = self.state.observation_state()["cells"]
        confidence = obs.get("cell_confidence")
        doubtful = {tuple(p) for p in obs.get("occluded", []) if isinstance(p, (list, tuple)) and len(p) == 2}
        out = []
        for r, row in enumerate(cells):
            if not isinstance(row, list) or len(row) != self.edition.size:
                return cells
            new_row = []
            for c, cell in enumerate(row):
                before = committed[r][c]
                sure = confidence is None or _confidence(confidence, r, c) >= MIN_CELL_CONFIDENCE
                if (r, c) in doubtful or not sure:
                    cell = before
                elif _same_tower(before, cell):
                    cell = before
                new_row.append(cell)
            out.append(new_row)
        return out

    def _without_impossible_changes(self, cells: list, verdict: Any) -> tuple[Any, list[list[int]], list]:
        """Explain the change without the cells no Blox action can change that way.

        A tower never vanishes from under nothing, never changes height, and never
        appears on an empty space (R-BLOX-3, R-BLOX-6): a reading that says so is the
        camera's mistake. If one legal action explains everything else, that is the
        action; the misread cells are listed with it so the players can check them.
        Otherwise the original verdict stands. Also returns the board without them.
        """
        assert self.state is not None
        committed = self.state.observation_state()["cells"]
        cleaned, misread = [], []
        for r, row in enumerate(cells):
            new_row = []
            for c, seen in enumerate(row):
                before = committed[r][c]
                if _impossible(before, seen):
                    misread.append([r, c])
                    seen = before
                new_row.append(seen)
            cleaned.append(new_row)
        if not misread:
            return verdict, [], cleaned
        retry = infer(self.state, cleaned)
        if retry.kind in (VerdictKind.ACTION, VerdictKind.NO_CHANGE):
            return retry, misread, cleaned
        return verdict, [], cleaned

    def _two_turns(self, cells: Any) -> tuple[Any, Any] | None:
        """The two consecutive turns that explain a change, when exactly one pair does.

        When no stable view was had between two turns (a hand stayed over the board),
        the change is two actions: one by the player to move, then one by the next.
        It is taken only if a single board sequence of two legal actions explains it;
        anything ambiguous stays unrecognised for the players to sort out.
        """
        assert self.state is not None
        found: dict[tuple, tuple[Any, Any]] = {}
        for first in self.state.legal_actions():
            after = self.state.clone()
            after.apply_action(first)
            second = infer(after, cells)
            if second.kind is VerdictKind.ACTION:
                # Actions with the same board effect (two entrances to one space) are one explanation.
                key = (after.board, after.board_effect(second.action).board)
                found.setdefault(key, (_as_verdict(self.state, first), second))
                if len(found) > 1:
                    return None
        return next(iter(found.values()), None)

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
        fields = {k: v for k, v in payload.items() if k in ("action", "cards", "points", "misread")}
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


#: a cell read with less confidence than this keeps its committed content
MIN_CELL_CONFIDENCE = 0.5


def _confidence(grid: Any, r: int, c: int) -> float:
    try:
        return float(grid[r][c])
    except (TypeError, ValueError, IndexError):
        return 1.0


def _as_verdict(state: BloxState, action: Any) -> Any:
    """The verdict table mode would give for ``action`` played from ``state``."""
    from engine import Verdict

    effect = state.board_effect(action)
    return Verdict(VerdictKind.ACTION, player=state.current.color, action=action,
                   implied_cards=action.cards, points=effect.points)


def _impossible(before: Any, seen: Any) -> bool:
    """A change of one cell that no Blox action makes."""
    was_tower = isinstance(before, dict) and "tower" in before
    is_tower = isinstance(seen, dict) and "tower" in seen
    is_figure = isinstance(seen, dict) and "figure" in seen
    if was_tower:
        return not is_figure and not _same_tower(before, seen)  # vanished, or grew/shrank
    return before is None and is_tower  # a tower on a space where no figure stood


def _same_tower(before: Any, seen: Any) -> bool:
    return (
        isinstance(before, dict) and isinstance(seen, dict) and "tower" in before and "tower" in seen
        and isinstance(seen["tower"], list) and len(before["tower"]) == len(seen["tower"])
    )


def _verdict_fields(verdict: Any) -> dict[str, Any]:
    data = verdict.to_json()
    data.pop("kind")
    return data


def _freeze(cells: Any) -> tuple:
    return tuple(tuple(repr(c) for c in row) for row in cells or ())
