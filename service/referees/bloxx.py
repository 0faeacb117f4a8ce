"""The Bloxx! referee: rolls from the camera, placements from the phones, sheet photos.

Same interface as :class:`service.referee.BloxReferee` (``feed(line) -> events``,
``snapshot()``, ``seq``, ``stats``, ``clock``, ``undo``), free of I/O so a game log
replays exactly. Inputs:

* **camera observations** ``{"game": "bloxx", "t", "stable", "state": {...}}`` where
  ``state`` holds

  - ``"dice": {"white": "w3", "black": "b1"}`` -- the faces read in the rolling area
    (``null`` for a die that cannot be seen). A stable reading while the engine waits
    for a roll is the roll, unless it is the previous roll still lying there: a new roll
    is taken only after the dice were out of sight or moving (an unstable observation
    with a ``dice`` key, or a die reported ``null``), or when the faces differ. When the
    observation says where the dice lie (``"dice_at": {die: [x mm, y mm, yaw deg]}``,
    as ``vision.bloxx`` reports it), dice showing the same faces on the same spots were
    not thrown: a hand or a sheet only passed over them.
  - ``"sheet": [rows]`` -- a player's paper sheet held under the camera, as
    ``vision.bloxx.SheetReader`` reads it (the ``bloxx`` state of observation.md). The
    observation names the sheet's owner in ``"player"`` (top level or in ``state``);
    squares listed in ``occluded`` are not compared. A sheet showing a new shape of a
    player who has yet to draw this turn is judged by the engine's table mode
    (:func:`engine.bloxx.judge_sheet_change`); any other square that disagrees with
    the engine's record is flagged in an ``unrecognised`` event with ``squares``.

* **declarations from the page** ``{"declare": {"player": name, "action": {...}}}``:

  - ``{"type": "place", "squares": [[r, c], ...], "circle": [r, c], "die": "white"}``
    -- the squares tapped on the phone; ``circle`` (the square holding the circle) and
    ``die`` are needed only when the squares alone leave it open. The engine's own
    place JSON (``face``, ``orientation``, ``at``) is accepted too.
  - ``{"type": "sheet", "sheet": [rows]}`` -- the whole sheet after drawing.
  - ``{"type": "roll", "dice": {...}}`` (or ``"faces": [...]``) when the camera cannot
    read the dice; ``{"type": "choose", "die": ...}``; ``{"type": "forfeit"}``.

* ``{"correct": {"action": {...}, "player": name}}`` and ``{"undo": true}`` from the
  page, and ``{"fault": why}``.

A player who can draw neither rolled shape forfeits at once (R-BLOXX-6): the engine
knows exactly whether a shape fits, so this is no guess, and the turn (and the game,
R-BLOXX-9) can end without anyone declaring it.

Events (observation.md): ``action`` (a roll, a placement with the ``gaps`` it created,
its ``mark`` -- circle or cross, R-BLOXX-5 -- and the coloured ``rows`` it completed
with their bonus, R-BLOXX-7; or a forfeit), ``illegal`` (``rule`` and ``why``),
``unrecognised``, ``phase`` (a new turn), ``correction``, ``end`` (R-BLOXX-8/9) and
``fault``. Bloxx! has no table-mode ruling of its own: requests that make no sense for
the game's turn structure (nothing to undo, a die that was not rolled) cite R-BLOXX-6,
the ruling the engine uses for turn order.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

from engine.bloxx import (
    BloxxGame,
    BloxxState,
    ChooseDie,
    Forfeit,
    Place,
    Roll,
    Sheet,
    SheetFormatError,
    judge_sheet_change,
    load_edition,
)
from engine.bloxx.sheet import CIRCLE, CROSS, EMPTY, GAP
from engine.common import IllegalAction, VerdictKind
from service.referee import RefereeStats

GAME = "bloxx"
# Turn order and "what may be done now" have no ruling of their own (engine.bloxx.state).
RULE_TURN = "R-BLOXX-6"
MARK_WORDS = {CIRCLE: "circle", CROSS: "cross", GAP: "gap", EMPTY: "empty"}
#: a sheet square read less surely than this is not compared with the record
MIN_SQUARE_CONFIDENCE = 0.5
#: dice seen again within this distance and turn of where they lay were not thrown
SAME_SPOT_MM = 3.0
SAME_YAW_DEG = 10.0


class Refusal(Exception):
    """A declaration the referee turns down before the engine sees it (rule, why)."""

    def __init__(self, rule: str, why: str) -> None:
        super().__init__(f"{rule}: {why}")
        self.rule, self.why = rule, why


@dataclass
class BloxxStats(RefereeStats):
    rolls: int = 0
    sheets_checked: int = 0
    sheets_disagreeing: int = 0


@dataclass
class _Group:
    """The engine actions one committed input applied, so undo takes them back together."""

    actions: list[Any]
    armed: bool
    last_roll: tuple[str, ...] | None


@dataclass
class BloxxReferee:
    """Referees one Bloxx! game from observed rolls, phone placements and sheet photos."""

    players: list[str]
    edition_path: str | None = None
    first: int = 0
    seq: int = 0
    stats: BloxxStats = field(default_factory=BloxxStats)
    _last_t: float = 0.0

    def __post_init__(self) -> None:
        self.players = list(self.players)
        self.edition = load_edition(self.edition_path)
        self.game = BloxxGame(self.edition, tuple(self.players))  # ValueError for bad players
        self.state: BloxxState = self.game.new_initial_state(self.first)
        # The dice may be read as a new roll (they were out of sight or moving since the last).
        self._armed = True
        self._last_roll: tuple[str, ...] | None = None
        #: where the dice were last seen lying still (observed, not game state: undo keeps it)
        self._dice_at: dict[str, Any] = {}
        self._dice_pending: tuple[str, ...] | None = None
        self._sheet_pending: dict[int, tuple[str, ...]] = {}
        self._checks: dict[str, dict[str, Any]] = {}
        self._groups: list[_Group] = []

    # ------------------------------------------------------------------ inputs

    def feed(self, line: dict[str, Any]) -> list[dict[str, Any]]:
        """One recording line (an observation or a page input); returns the events it caused."""
        t = float(line.get("t", self._last_t))
        for key, handler in (
            ("declare", lambda: self.declare(line["declare"], t=t)),
            ("correct", lambda: self.correct(line["correct"], t=t)),
            ("undo", lambda: self.undo(t=t)),
            ("fault", lambda: [self._event(t, "fault", why=str(line["fault"]))]),
        ):
            if key in line:
                self._last_t = max(self._last_t, t)
                return handler()
        return self.observe(line)

    def observe(self, obs: dict[str, Any]) -> list[dict[str, Any]]:
        """A camera observation: the dice in the rolling area and/or a sheet held up."""
        self.stats.observations += 1
        t = float(obs.get("t", self._last_t))
        self._last_t = t
        if obs.get("game") != GAME:
            self.stats.rejected += 1
            return [self._event(t, "fault", why=f"observation of game {obs.get('game')!r} given to the Bloxx! referee")]
        seen = obs.get("state")
        if not isinstance(seen, dict):
            self.stats.rejected += 1
            return [self._event(t, "fault", why="the observation has no state object")]
        if not obs.get("stable", False):
            self.stats.unstable += 1
            # Something moves in the rolling area: the dice may be being rolled.
            return self._arm(t) if "dice" in seen else []
        events: list[dict[str, Any]] = []
        if "dice" in seen:
            events += self._observe_dice(t, seen["dice"], obs.get("occluded") or [], obs.get("dice_at"))
        if "sheet" in seen:
            owner = obs.get("player", seen.get("player"))
            if seen["sheet"] is None:  # SheetReader found no sheet in the photo
                self.stats.rejected += 1
                why = seen.get("why") or "no sheet found"
                return events + [self._event(t, "fault", player=owner, why=f"sheet photo not read: {why}")]
            unsure = _unsure_squares(seen.get("square_confidence"))
            events += self.check_sheet(owner, seen["sheet"], t=t, occluded=list(obs.get("occluded") or []) + unsure,
                                       confidence=seen.get("square_confidence"))
        return events

    def declare(self, declaration: dict[str, Any], t: float) -> list[dict[str, Any]]:
        """A player's input from their phone; illegal ones are refused with the reason."""
        name = declaration.get("player") if isinstance(declaration, dict) else None
        action = declaration.get("action") if isinstance(declaration, dict) else None
        if name not in self.players:
            return [self._illegal(t, None, RULE_TURN, f"there is no seat {name!r} at this table")]
        if not isinstance(action, dict):
            return [self._illegal(t, name, RULE_TURN, "the declaration has no action")]
        try:
            engine_action = self._parse(self.players.index(name), action)
        except Refusal as exc:
            return [self._illegal(t, name, exc.rule, exc.why)]
        except IllegalAction as exc:
            return [self._illegal(t, name, exc.rule, exc.why)]
        try:
            return self._commit(t, engine_action, source="page")
        except IllegalAction as exc:
            return [self._illegal(t, name, exc.rule, exc.why)]

    def correct(self, correction: dict[str, Any], t: float) -> list[dict[str, Any]]:
        """Replace the last committed input by the action the players say it was.

        The corrected action must be legal where the last input was applied; if it is
        not, the last input stays as it was.
        """
        if not self._groups:
            return [self._illegal(t, None, RULE_TURN, "there is no action to correct")]
        action = correction.get("action") if isinstance(correction, dict) else None
        if not isinstance(action, dict):
            return [self._illegal(t, None, RULE_TURN, "the correction has no action")]
        group = self._groups[-1]
        saved = (self._armed, self._last_roll, self._dice_pending, dict(self._sheet_pending))
        self._take_back(group)
        replaced = self._action_json(group.actions[0])  # described where it was applied
        first = group.actions[0]
        player = correction.get("player") or self.players[self.state.active if isinstance(first, Roll) else first.player]
        try:
            if player not in self.players:
                raise Refusal(RULE_TURN, f"there is no seat {player!r} at this table")
            events = self._commit(t, self._parse(self.players.index(player), action), source="correction")
        except (Refusal, IllegalAction) as exc:
            for again in group.actions:
                self.state.apply_action(again)
            self._groups.append(group)
            self._armed, self._last_roll, self._dice_pending, self._sheet_pending = saved
            return [self._illegal(t, player if player in self.players else None, exc.rule, exc.why)]
        # The corrected action is reported as the correction itself (seq order is kept).
        events[0].update(kind="correction", replaces=replaced, why="the last action was corrected")
        return events

    def undo(self, t: float) -> list[dict[str, Any]]:
        """Take back the last committed input (with the forfeits it forced)."""
        if not self._groups:
            return [self._illegal(t, None, RULE_TURN, "there is no action to undo")]
        group = self._groups[-1]
        self._take_back(group)
        return [self._event(t, "correction", undone=[self._action_json(a) for a in group.actions],
                            why="the last action was taken back")]

    @property
    def clock(self) -> float:
        """The time of the latest input, on the source's clock."""
        return self._last_t

    # ------------------------------------------------------------------ the dice

    def _read_dice(self, dice: Any, occluded: list[Any]) -> tuple[str, ...] | None | str:
        """The faces in edition die order; ``None`` when a die is out of sight; a string saying what is wrong."""
        if not isinstance(dice, dict) or "dice" in occluded:
            return None
        faces = []
        for die in self.edition.dice:
            face = dice.get(die.name)
            if face is None or die.name in occluded:
                return None
            if face not in {f.name for f in die.faces}:
                return f"the {die.name} die shows {face!r}, which is none of its faces (R-BLOXX-1)"
            faces.append(face)
        return tuple(faces)

    def _lying_still(self, before: dict[str, Any]) -> bool:
        """The dice lie where they were seen before (each within :data:`SAME_SPOT_MM` and
        :data:`SAME_YAW_DEG`): they were not thrown. False when either reading lacks a spot."""
        now = self._dice_at
        if not before or not now:
            return False
        for die in self.edition.dice:
            a, b = before.get(die.name), now.get(die.name)
            try:
                dx, dy, dyaw = (float(b[0]) - float(a[0]), float(b[1]) - float(a[1]), float(b[2]) - float(a[2]))
            except (TypeError, IndexError, ValueError):
                return False
            if math.hypot(dx, dy) > SAME_SPOT_MM or abs((dyaw + 180) % 360 - 180) > SAME_YAW_DEG:
                return False
        return True

    def _arm(self, t: float) -> list[dict[str, Any]]:
        """The dice moved or left the rolling area while a roll is awaited: the next
        stable reading is the roll, even if it shows the same faces as the last one.

        This is reported as an event, so the input is in the game log and a restored
        referee is armed exactly as the live one was (the log keeps only inputs that
        caused events). Movement while the players still draw is not a roll (R-BLOXX-6).
        """
        state = self.state
        if self._armed or state.ended or state.roll is not None:
            return []
        self._armed = True
        return [self._event(t, "phase", phase="rolling", turn=state.turn + 1, active=self.players[state.active])]

    def _observe_dice(self, t: float, dice: Any, occluded: list[Any], at: Any = None) -> list[dict[str, Any]]:
        faces = self._read_dice(dice, occluded)
        if faces is None:
            return self._arm(t)  # picked up to be rolled
        if isinstance(faces, str):
            self.stats.unrecognised += 1
            return [self._event(t, "unrecognised", why=faces)]
        before, self._dice_at = self._dice_at, at if isinstance(at, dict) else {}
        state = self.state
        if state.ended:
            return []
        if state.roll is None:
            if faces == self._last_roll and (not self._armed or self._lying_still(before)):
                return []  # last turn's roll, still lying in the rolling area
            self._dice_pending = None
            return self._commit(t, Roll(faces), source="camera")
        if faces == state.roll:
            if self._dice_pending is not None:
                self._dice_pending = None
                return [self._event(t, "correction", why="the dice show this turn's roll again")]
            return []
        if faces == self._dice_pending:
            return []  # still the same early roll; reported once
        self._dice_pending = faces
        waiting = ", ".join(self.players[p] for p in state.pending_players())
        self.stats.illegal += 1
        return [self._event(
            t, "illegal", legal=False, rule=RULE_TURN, dice=self._dice_json(faces),
            why=f"the dice were rolled again ({self._roll_words(faces)}) before {waiting} drew this turn's "
            f"shapes ({self._roll_words(state.roll)}); put them back as they were or declare the roll",
        )]

    # ------------------------------------------------------------------ sheets

    def check_sheet(
        self, owner: Any, rows: Any, t: float, occluded: list[Any] = (), confidence: Any = None
    ) -> list[dict[str, Any]]:
        """Reconcile a photographed sheet (``vision.bloxx.SheetReader``'s rows) with the record.

        Squares in ``occluded`` (or read with a confidence under
        :data:`MIN_SQUARE_CONFIDENCE`) are taken as the record has them: an unsure
        reading never contradicts the record. Disagreements are listed as
        ``vision.bloxx.reconcile`` lists them: ``{"at", "read", "engine"[, "confidence"]}``.
        """
        self.stats.sheets_checked += 1
        if owner not in self.players:
            self.stats.rejected += 1
            return [self._event(t, "fault", why=f"a sheet photo of unknown seat {owner!r}; say whose sheet it is")]
        p = self.players.index(owner)
        geo = self.edition.geometry
        record = self.state.sheets[p]
        try:
            photo = Sheet.from_rows(geo, rows)
        except SheetFormatError as exc:
            self.stats.rejected += 1
            return [self._event(t, "fault", player=owner, why=f"unreadable sheet photo: {exc}")]
        hidden = {tuple(c) for c in occluded if isinstance(c, (list, tuple)) and len(c) == 2}
        if hidden:  # squares the reader could not see take the record's value
            lines = [list(r) for r in photo.rows()]
            for r, c in hidden:
                if 0 <= r < geo.rows and 0 <= c < geo.columns:
                    lines[r][c] = record.at(r, c)
            photo = Sheet.from_rows(geo, ["".join(r) for r in lines])
        if photo == record:
            self._checks[owner] = {"t": t, "agrees": True, "squares": []}
            if self._sheet_pending.pop(p, None) is not None:
                return [self._event(t, "correction", player=owner, why=f"{owner}'s sheet agrees with the record again")]
            return []
        key = tuple(photo.rows())
        if self._sheet_pending.get(p) == key:
            return []  # the same disagreement, reported once
        state = self.state
        if p in state.pending_players():
            verdict = judge_sheet_change(state, p, photo.rows())
            if verdict.kind is VerdictKind.ACTION:
                self._sheet_pending.pop(p, None)
                self._checks[owner] = {"t": t, "agrees": True, "squares": []}
                return self._commit(t, verdict.action, source="sheet photo")
        else:
            verdict = None
        squares = []
        for (r, c), engine, read in record.diff(photo):
            square = {"at": [r, c], "read": read, "engine": engine}
            try:
                square["confidence"] = round(float(confidence[r][c]), 3)
            except (TypeError, IndexError, ValueError):
                pass
            squares.append(square)
        self._sheet_pending[p] = key
        self._checks[owner] = {"t": t, "agrees": False, "squares": squares}
        self.stats.sheets_disagreeing += 1
        listed = ", ".join(f"({s['at'][0]},{s['at'][1]}) {MARK_WORDS[s['read']]} on paper, "
                           f"{MARK_WORDS[s['engine']]} in the record" for s in squares[:6])
        more = f" and {len(squares) - 6} more" if len(squares) > 6 else ""
        if verdict is not None and verdict.kind is VerdictKind.ILLEGAL:
            self.stats.illegal += 1
            return [self._event(t, "illegal", player=owner, legal=False, source="sheet photo", rule=verdict.rule,
                                why=verdict.why, squares=squares,
                                action=self._action_json(verdict.action) if verdict.action else None)]
        self.stats.unrecognised += 1
        reason = f"; {verdict.why}" if verdict is not None and verdict.why else ""
        return [self._event(
            t, "unrecognised", player=owner, source="sheet photo", squares=squares,
            rule=verdict.rule if verdict is not None else None,
            why=f"{owner}'s sheet disagrees with the record at {len(squares)} square(s): {listed}{more}{reason}",
        )]

    # ------------------------------------------------------------------ declarations

    def _parse(self, p: int, action: dict[str, Any]) -> Any:
        """The engine action a page declaration stands for; Refusal says why there is none."""
        kind = action.get("type")
        state = self.state
        if state.ended:
            raise Refusal("R-BLOXX-9", "the game is over")
        if kind == "place":
            if "squares" in action:
                return self._resolve_squares(p, action.get("squares"), action.get("circle"), action.get("die"))
            try:
                r, c = action["at"]
                die = action.get("die") or self._die_of_face(str(action["face"]))
                return Place(p, str(die), str(action["face"]), int(action["orientation"]), int(r), int(c))
            except (KeyError, TypeError, ValueError):
                raise Refusal("R-BLOXX-2", "a placement names its squares, or its face, orientation and position") from None
        if kind == "sheet":
            return self._judge_declared_sheet(p, action.get("sheet"))
        if kind == "roll":
            if p != state.active:
                raise Refusal(RULE_TURN, f"{self.players[state.active]} rolls this turn, not {self.players[p]}")
            faces = action.get("faces")
            if isinstance(action.get("dice"), dict):
                faces = [action["dice"].get(d.name) for d in self.edition.dice]
            if not (isinstance(faces, list) and all(isinstance(f, str) for f in faces)):
                raise Refusal("R-BLOXX-1", "a roll names the face of each die")
            return Roll(tuple(faces))
        if kind == "choose":
            return ChooseDie(p, str(action.get("die")))
        if kind == "forfeit":
            return Forfeit(p)
        raise Refusal(RULE_TURN, f"unknown Bloxx! action type {kind!r}")

    def _die_of_face(self, face: str) -> str:
        for die in self.edition.dice:
            if face in {f.name for f in die.faces}:
                return die.name
        raise Refusal("R-BLOXX-1", f"no die has a face {face!r}")

    def _resolve_squares(self, p: int, squares: Any, circle: Any, die: Any) -> Place:
        """The placement the tapped squares show (R-BLOXX-2), preferring a legal reading."""
        state = self.state
        name = self.players[p]
        geo = self.edition.geometry
        try:
            cells = {(int(r), int(c)) for r, c in squares}
            mark = None if circle is None else (int(circle[0]), int(circle[1]))
        except (TypeError, ValueError):
            raise Refusal("R-BLOXX-2", "squares are [row, column] pairs") from None
        if not cells:
            raise Refusal("R-BLOXX-2", "no squares were marked")
        outside = sorted(c for c in cells if not (0 <= c[0] < geo.rows and 0 <= c[1] < geo.columns))
        if outside:
            raise Refusal("R-BLOXX-3", f"squares {_cells(outside)} are outside the sheet")
        if state.roll is None:
            raise Refusal(RULE_TURN, "the dice have not been rolled this turn")
        dice = [d.name for d in self.edition.dice]
        if die is not None:
            if die not in dice:
                raise Refusal("R-BLOXX-1", f"there is no {die!r} die")
            dice = [die]
        mask = geo.mask_of(cells)
        candidates = []
        for d in dice:
            face = state.rolled_face(d).name
            for pl in self.edition.placements(face):
                if pl.mask == mask:
                    candidates.append((Place(p, d, face, pl.orientation, pl.row, pl.col), pl.circle))
        if not candidates:
            shapes = " or ".join(
                f"the {d} die's {state.rolled_face(d).name} ({state.rolled_face(d).size} squares)" for d in dice)
            raise Refusal("R-BLOXX-2", f"the {len(cells)} squares marked are not the shape of {shapes}, "
                          "turned or mirrored as a whole")
        if mark is not None:
            fitting = [c for c in candidates if c[1] == mark]
            if not fitting:
                belongs = _cells(sorted({c[1] for c in candidates}))
                raise Refusal("R-BLOXX-2", f"this shape's circle cannot be on ({mark[0]},{mark[1]}); "
                               f"it belongs on {belongs}")
            candidates = fitting
        legal, errors = [], []
        for place, circle_at in candidates:
            trial = state.clone()
            try:
                trial.apply_action(place)
            except IllegalAction as exc:
                errors.append(exc)
                continue
            legal.append((place, circle_at, tuple(trial.sheets[p].rows())))
        if not legal:
            raise errors[0]
        if len({sheet for _, _, sheet in legal}) > 1:
            if len({pl.die for pl, _, _ in legal}) > 1:
                raise Refusal("R-BLOXX-2", f"both dice show this shape; {name} must say which die they took")
            raise Refusal("R-BLOXX-2", "mark the circle: it may go on " + _cells(sorted({c for _, c, _ in legal})))
        return legal[0][0]

    def _judge_declared_sheet(self, p: int, rows: Any) -> Any:
        verdict = judge_sheet_change(self.state, p, rows)
        if verdict.kind is VerdictKind.ACTION:
            return verdict.action
        if verdict.kind is VerdictKind.NO_CHANGE:
            if verdict.action is not None:
                return verdict.action  # nothing drawn, nothing fits: the forfeit (R-BLOXX-6)
            raise Refusal(RULE_TURN, "the sheet shows no new shape")
        raise Refusal(verdict.rule or "R-BLOXX-3", verdict.why or "the sheet does not show one rolled shape")

    # ------------------------------------------------------------------ committing

    def _commit(self, t: float, action: Any, source: str) -> list[dict[str, Any]]:
        """Apply ``action`` (raising IllegalAction with nothing changed), then forced forfeits."""
        state = self.state
        turn = state.turn
        group = _Group([], self._armed, self._last_roll)
        events = [self._apply(t, action, source)]
        group.actions.append(action)
        while (forced := self._forced_forfeit()) is not None:
            events.append(self._apply(t, forced, "referee"))
            group.actions.append(forced)
        self._groups.append(group)
        if state.ended:
            events.append(self._end_event(t))
        elif state.turn != turn:
            events.append(self._event(t, "phase", phase=state.phase.value, turn=state.turn + 1,
                                      active=self.players[state.active]))
        return events

    def _forced_forfeit(self) -> Forfeit | None:
        """R-BLOXX-6: a player to act who can draw neither rolled shape forfeits."""
        state = self.state
        for p in state.pending_players():
            if state.took[p] is None and not state.can_place(p):
                return Forfeit(p)
        return None

    def _apply(self, t: float, action: Any, source: str) -> dict[str, Any]:
        state = self.state
        p = state.active if isinstance(action, Roll) else action.player
        name = self.players[p]
        score = state.score(p).total
        gaps = state.sheets[p].gaps
        rows_before = set(state.completed[p])
        described = self._action_json(action)  # before applying: the turn may end with it
        state.apply_action(action)
        self.stats.actions += 1
        fields: dict[str, Any] = {"player": name, "legal": True, "source": source, "action": described}
        if isinstance(action, Roll):
            self.stats.rolls += 1
            self._last_roll, self._armed = action.faces, False
        elif isinstance(action, Place):
            geo = self.edition.geometry
            fields["gaps"] = [list(c) for c in sorted(geo.cells_of(state.sheets[p].gaps & ~gaps))]
            fields["points"] = state.score(p).total - score
            won = []
            for colour in sorted(set(state.completed[p]) - rows_before):
                first = state.completed[p][colour] == state.first_completion(colour)
                won.append({"colour": colour, "points": 4 if first else 2, "first": first})
            if won:
                fields["rows"] = won
        elif isinstance(action, Forfeit) and source == "referee":
            fields["why"] = f"neither rolled shape fits {name}'s sheet (R-BLOXX-6)"
        return self._event(t, "action", **fields)

    def _take_back(self, group: _Group) -> None:
        for _ in group.actions:
            self.state.undo()
        self._groups.pop()
        self._armed, self._last_roll = group.armed, group.last_roll
        self._dice_pending = None
        self._sheet_pending.clear()
        if any(isinstance(a, Roll) for a in group.actions):
            self._armed = True  # the dice lying there may be read again

    # ------------------------------------------------------------------ outputs

    def _action_json(self, action: Any) -> dict[str, Any]:
        data = action.to_json()
        data.pop("player", None)  # the event names the player
        if isinstance(action, Roll):
            data["dice"] = self._dice_json(action.faces)
        elif isinstance(action, Place):
            cells, circle = self.state.resolve(action)
            data["squares"] = [list(c) for c in sorted(cells)]
            data["circle"] = list(circle)
            # R-BLOXX-5: whoever took the active player's die draws a cross.
            circled = self.state.marks_circle(action.player, action.die) if self.state.roll else True
            data["mark"] = "circle" if circled else "cross"
            data["value"] = self.edition.value(*circle) if circled else 0
        return data

    def _dice_json(self, faces: tuple[str, ...]) -> dict[str, str]:
        return {d.name: f for d, f in zip(self.edition.dice, faces)}

    def _roll_words(self, faces: tuple[str, ...]) -> str:
        return ", ".join(f"{d.name} {f}" for d, f in zip(self.edition.dice, faces))

    def _illegal(self, t: float, player: str | None, rule: str, why: str) -> dict[str, Any]:
        self.stats.illegal += 1
        return self._event(t, "illegal", player=player, legal=False, rule=rule, why=why)

    def _end_event(self, t: float) -> dict[str, Any]:
        scores = self.state.scores()
        ranking = []
        for name, points in sorted(scores.items(), key=lambda kv: -kv[1]):
            rank = 1 + sum(1 for v in scores.values() if v > points)
            ranking.append({"rank": rank, "player": name, "points": points,
                            **self.state.score(self.players.index(name)).to_json()})
        return self._event(t, "end", ranking=ranking, winners=self.state.winners())

    def _event(self, t: float, kind: str, **fields: Any) -> dict[str, Any]:
        self.seq += 1
        event = {"seq": self.seq, "t": t, "game": GAME, "kind": kind}
        event.update({k: v for k, v in fields.items() if v is not None})
        if kind in ("action", "end", "correction"):
            event["scores"] = self.state.scores()
        return event

    def snapshot(self) -> dict[str, Any]:
        """What the Bloxx! page draws: sheets, roll, what each seat may do, bonuses, scores."""
        state = self.state
        ed = self.edition
        names = self.players
        current = state.current_player()
        bonuses: dict[str, list[dict[str, Any]]] = {n: [] for n in names}
        for i, n in enumerate(names):
            for colour, turn in sorted(state.completed[i].items(), key=lambda kv: kv[1]):
                first = turn == state.first_completion(colour)
                bonuses[n].append({"colour": colour, "points": 4 if first else 2, "turn": turn + 1, "first": first})
        return {
            "game": GAME,
            "players": list(names),
            "started": True,
            "edition": _edition_view(ed),
            "turn": state.turn + 1,
            "active": names[state.active],
            "phase": state.phase.value,
            "roll": self._dice_json(state.roll) if state.roll else None,
            "current": names[current] if current is not None else None,
            "pending": [names[p] for p in state.pending_players()],
            "sheets": {n: state.sheets[i].rows() for i, n in enumerate(names)},
            "scores": state.scores(),
            "score_details": {n: state.score(i).to_json() for i, n in enumerate(names)},
            "bonuses": bonuses,
            "seats": {n: self._seat(i) for i, n in enumerate(names)},
            "sheet_checks": dict(self._checks),
            "finished": state.is_terminal(),
            "winners": state.winners() if state.is_terminal() else [],
            "waiting": self._dice_pending is not None or bool(self._sheet_pending),
        }

    def _seat(self, p: int) -> dict[str, Any]:
        """What player ``p`` may do now, in words the phone shows."""
        state = self.state
        names = self.players
        seat: dict[str, Any] = {"took": state.took[p], "options": []}
        if state.ended:
            seat.update(status="ended", say="the game is over")
        elif state.roll is None:
            who = "you roll" if p == state.active else f"{names[state.active]} rolls"
            seat.update(status="roll", say=f"waiting for the roll: {who} the dice")
        elif state.done[p]:
            seat.update(status="placed" if state.could_place[p] else "forfeited",
                        say="done for this turn" if state.could_place[p] else "no shape fitted: turn forfeited")
        elif p not in state.pending_players():
            seat.update(status="wait", say=f"wait until {names[state.active]} has drawn")
        else:
            seat.update(status="play", say="your turn: take a die and draw its shape")
        if state.roll is not None and not state.ended and not state.done[p]:
            for die in self.edition.dice:
                face = state.rolled_face(die.name)
                circled = state.marks_circle(p, die.name)
                allowed = state.took[p] in (None, die.name)
                seat["options"].append({
                    "die": die.name, "face": face.name, "fits": allowed and state.can_place(p, die.name),
                    "mark": "circle" if circled else "cross",
                    "why": None if circled else f"{names[state.active]} took it: draw a cross instead of the circle",
                })
        return seat


def _unsure_squares(confidence: Any) -> list[list[int]]:
    """Squares a sheet reading gives a confidence under MIN_SQUARE_CONFIDENCE."""
    out: list[list[int]] = []
    if isinstance(confidence, list):
        for r, row in enumerate(confidence):
            for c, value in enumerate(row if isinstance(row, list) else []):
                if isinstance(value, (int, float)) and value < MIN_SQUARE_CONFIDENCE:
                    out.append([r, c])
    return out


def sheet_observation(player: str, reading: dict[str, Any], t: float, frame: int | None = None) -> dict[str, Any]:
    """The observation for a sheet photo: ``reading`` is ``SheetReading.to_json()``.

    A stable observation (a photo is taken on purpose, by a player holding the sheet
    still) naming the sheet's owner.
    """
    state = {k: reading[k] for k in ("sheet", "square_confidence", "why") if k in reading}
    obs: dict[str, Any] = {"game": GAME, "t": t, "stable": True, "player": player, "occluded": [],
                           "confidence": reading.get("confidence", 0.0), "state": state}
    if frame is not None:
        obs["frame"] = frame
    return obs


def _edition_view(ed: Any) -> dict[str, Any]:
    data = ed.to_json()
    sheet = data["sheet"]
    return {
        "name": ed.name,
        "columns": ed.columns,
        "rows": ed.rows,
        "numbers": [list(r) for r in ed.numbers],
        "coloured_rows": sheet["coloured_rows"],
        "dice": data["dice"],
    }


def _cells(cells: Any) -> str:
    return ", ".join(f"({r},{c})" for r, c in cells)


# ---------------------------------------------------------------------- plain words


def describe_bloxx_action(action: dict[str, Any]) -> str:
    kind = action.get("type")
    if kind == "roll":
        dice = action.get("dice") or {}
        return "rolls " + ", ".join(f"{d} {f}" for d, f in dice.items()) if dice else f"rolls {action.get('faces')}"
    if kind == "place":
        squares = action.get("squares") or []
        where = _cells(squares) if squares else f"at {action.get('at')}"
        if action.get("mark") == "cross":
            mark = "a cross instead of the circle"
        elif action.get("value"):
            mark = f"the circle on a {action['value']}"
        else:
            mark = "the circle on a blank square"
        return f"draws {action.get('face')} of the {action.get('die')} die on {where}, {mark}"
    if kind == "choose":
        return f"takes the {action.get('die')} die"
    if kind == "forfeit":
        return "cannot draw either shape and forfeits the turn"
    return str(action)


def describe_bloxx_event(event: dict[str, Any]) -> str:
    """One line for a Bloxx! action, refusal or turn; service.text words the kinds every game shares."""
    seq = f"#{event.get('seq', '?'):>4} t={event.get('t', 0):8.1f}s"
    kind = event.get("kind")
    who = event.get("player", "")
    if kind == "action":
        text = f"{seq}  {who} {describe_bloxx_action(event.get('action', {}))}"
        gaps = event.get("gaps")
        if gaps:
            text += f"; {len(gaps)} gap(s) created: {_cells(gaps)}"
        elif gaps is not None:
            text += "; no gaps"
        for row in event.get("rows", []):
            text += f"; completes the {row['colour']} row +{row['points']}"
        if event.get("source") == "sheet photo":
            text += " (read from the sheet)"
        return text
    rule = f" ({event['rule']})" if event.get("rule") else ""
    if kind == "illegal":
        return f"{seq}  ILLEGAL{rule} {who}: {event.get('why')}".replace(" :", ":")
    if kind == "unrecognised":
        return f"{seq}  UNRECOGNISED{rule}: {event.get('why')}"
    if kind == "phase":
        if event.get("phase") == "rolling":
            return f"{seq}  {event.get('active')} is rolling the dice"
        return f"{seq}  turn {event.get('turn')}: {event.get('active')} rolls"
    return f"{seq}  {kind}: {event}"

