"""Bloxx! game and state: turns, placements, row bonuses, the end and the scores.

A turn (rulebook "How to play"):

1. the active player rolls both dice (:class:`Roll`, an observed input: the engine never
   draws random numbers itself);
2. the active player takes a die (:class:`ChooseDie`) and draws its shape
   (:class:`Place`), or, when neither shape fits anywhere, forfeits (:class:`Forfeit`)
   and takes no die (R-BLOXX-6);
3. every other player, in any order, takes either die and draws its shape, or forfeits
   when neither fits; a player who took the active player's die draws a cross instead
   of the circle (R-BLOXX-5).

When everybody has acted the turn ends: the game is over if two or more players (the
only player, in a solo game) could not place (R-BLOXX-9); otherwise the next player
clockwise becomes active.

:class:`Place` may also be applied without a prior :class:`ChooseDie`; it then takes
its die implicitly. That is how table mode applies what the camera saw, since a sheet
shows the drawn shape but not the moment the die was chosen.

Turn-order mistakes (acting out of turn, placing twice, drawing a face that was not
rolled) are reported under R-BLOXX-6, the ruling that governs who takes which die and
when a player must place; the rulings have no separate id for turn order.
"""

from __future__ import annotations

import enum
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from itertools import product
from typing import Any, Union

from engine.bloxx.edition import ORIENTATIONS, BloxxEdition, Cell, Face, Placement, load_edition
from engine.bloxx.sheet import Sheet, SheetFormatError
from engine.common import IllegalAction

MIN_PLAYERS = 1
MAX_PLAYERS = 6
FIRST_BONUS = 4  # R-BLOXX-7
LATER_BONUS = 2  # R-BLOXX-7

# Turn order has no ruling of its own; see the module docstring.
RULE_TURN = "R-BLOXX-6"


# -- actions -------------------------------------------------------------------------------


@dataclass(frozen=True)
class Roll:
    """The faces the active player rolled: one face name per die, in edition die order."""

    faces: tuple[str, ...]

    def to_json(self) -> dict[str, Any]:
        return {"type": "roll", "faces": list(self.faces)}


@dataclass(frozen=True)
class ChooseDie:
    """``player`` (an index) takes ``die`` (a die name) this turn."""

    player: int
    die: str

    def to_json(self) -> dict[str, Any]:
        return {"type": "choose", "player": self.player, "die": self.die}


@dataclass(frozen=True)
class Place:
    """``player`` draws the rolled ``face`` of ``die`` in ``orientation`` (0..7, see
    :mod:`engine.bloxx.edition`) with the oriented shape's top-left corner at
    sheet square (``row``, ``col``)."""

    player: int
    die: str
    face: str
    orientation: int
    row: int
    col: int

    def to_json(self) -> dict[str, Any]:
        return {
            "type": "place",
            "player": self.player,
            "die": self.die,
            "face": self.face,
            "orientation": self.orientation,
            "at": [self.row, self.col],
        }


@dataclass(frozen=True)
class Forfeit:
    """``player`` cannot draw either shape and fills in nothing this turn (R-BLOXX-6)."""

    player: int

    def to_json(self) -> dict[str, Any]:
        return {"type": "forfeit", "player": self.player}


Action = Union[Roll, ChooseDie, Place, Forfeit]


def action_from_json(data: dict[str, Any]) -> Action:
    """Inverse of the actions' ``to_json``."""
    kind = data.get("type")
    if kind == "roll":
        return Roll(tuple(data["faces"]))
    if kind == "choose":
        return ChooseDie(int(data["player"]), str(data["die"]))
    if kind == "place":
        r, c = data["at"]
        return Place(
            int(data["player"]), str(data["die"]), str(data["face"]),
            int(data["orientation"]), int(r), int(c),
        )
    if kind == "forfeit":
        return Forfeit(int(data["player"]))
    raise ValueError(f"unknown Bloxx! action type {kind!r}")


# -- scores --------------------------------------------------------------------------------


@dataclass(frozen=True)
class Score:
    """One player's score by R-BLOXX-8."""

    circled: int
    bonus: int
    gaps: int
    empty: int

    @property
    def total(self) -> int:
        return self.circled + self.bonus - self.gaps - self.empty

    def to_json(self) -> dict[str, int]:
        return {
            "circled": self.circled,
            "bonus": self.bonus,
            "gaps": self.gaps,
            "empty": self.empty,
            "total": self.total,
        }


# -- game ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class BloxxGame:
    """An edition and the players (1 to 6, seated clockwise in this order)."""

    edition: BloxxEdition
    players: tuple[str, ...]

    def __post_init__(self) -> None:
        if not MIN_PLAYERS <= len(self.players) <= MAX_PLAYERS:
            raise ValueError(f"Bloxx! needs {MIN_PLAYERS} to {MAX_PLAYERS} players")
        if len(set(self.players)) != len(self.players) or not all(self.players):
            raise ValueError("player names must be distinct and non-empty")

    @classmethod
    def create(
        cls, players: int | Sequence[str] = 2, edition: BloxxEdition | None = None
    ) -> BloxxGame:
        """A game for ``players`` (a count, named p1.., or a list of names)."""
        names = (
            tuple(f"p{i + 1}" for i in range(players))
            if isinstance(players, int)
            else tuple(players)
        )
        return cls(edition or load_edition(), names)

    @property
    def num_players(self) -> int:
        return len(self.players)

    def new_initial_state(self, first: int = 0) -> BloxxState:
        """Blank sheets; player ``first`` (the last to play a video game) rolls first."""
        if not 0 <= first < self.num_players:
            raise ValueError(f"no player {first}")
        return BloxxState(self, active=first)


class Phase(str, enum.Enum):
    ROLL = "roll"  # waiting for the active player's roll
    PLAY = "play"  # players choose dice and draw
    ENDED = "ended"


# -- state ---------------------------------------------------------------------------------


class BloxxState:
    """Everything on the table: the sheets, the roll, who took which die, who is done.

    ``took[p]`` is the die player ``p`` took this turn (``None`` before choosing or
    after forfeiting), ``done[p]`` whether ``p`` has placed or forfeited this turn,
    ``could_place[p]`` ``True``/``False`` once ``p`` placed/forfeited this turn.
    ``completed[p]`` maps each coloured row ``p`` has completed to the turn (0-based)
    in which they did; the first completers of a row are those with the lowest turn
    (R-BLOXX-7).
    """

    def __init__(self, game: BloxxGame, active: int = 0) -> None:
        n = game.num_players
        self.game = game
        self.sheets: list[Sheet] = [Sheet(game.edition.geometry) for _ in range(n)]
        self.turn = 0
        self.active = active
        self.roll: tuple[str, ...] | None = None
        self.took: list[str | None] = [None] * n
        self.done: list[bool] = [False] * n
        self.could_place: list[bool | None] = [None] * n
        self.completed: list[dict[str, int]] = [{} for _ in range(n)]
        self.ended = False
        self._history: list[tuple[Any, ...]] = []

    # -- snapshots -----------------------------------------------------------------------

    def _snapshot(self) -> tuple[Any, ...]:
        return (
            tuple(self.sheets), self.turn, self.active, self.roll, tuple(self.took),
            tuple(self.done), tuple(self.could_place),
            tuple(dict(c) for c in self.completed), self.ended,
        )

    def _restore(self, snap: tuple[Any, ...]) -> None:
        sheets, self.turn, self.active, self.roll, took, done, could, completed, self.ended = snap
        self.sheets = list(sheets)
        self.took = list(took)
        self.done = list(done)
        self.could_place = list(could)
        self.completed = [dict(c) for c in completed]

    def clone(self) -> BloxxState:
        other = BloxxState.__new__(BloxxState)
        other.game = self.game
        other._restore(self._snapshot())
        other._history = list(self._history)
        return other

    def undo(self) -> None:
        """Take back the last applied action."""
        if not self._history:
            raise ValueError("nothing to undo")
        self._restore(self._history.pop())

    def __eq__(self, other: object) -> bool:
        return (
            isinstance(other, BloxxState)
            and self.game == other.game
            and self._snapshot() == other._snapshot()
        )

    __hash__ = None  # type: ignore[assignment]

    # -- queries -------------------------------------------------------------------------

    @property
    def edition(self) -> BloxxEdition:
        return self.game.edition

    @property
    def num_players(self) -> int:
        return self.game.num_players

    @property
    def phase(self) -> Phase:
        if self.ended:
            return Phase.ENDED
        return Phase.ROLL if self.roll is None else Phase.PLAY

    def is_terminal(self) -> bool:
        return self.ended

    def pending_players(self) -> list[int]:
        """Players who may act now: the active player alone until they have acted."""
        if self.phase is not Phase.PLAY:
            return []
        if not self.done[self.active]:
            return [self.active]
        n = self.num_players
        order = [(self.active + i) % n for i in range(1, n)]
        return [p for p in order if not self.done[p]]

    def current_player(self) -> int | None:
        """Who acts next: the roller, the active player, then the others clockwise."""
        if self.phase is Phase.ROLL:
            return self.active
        pending = self.pending_players()
        return pending[0] if pending else None

    def rolled_face(self, die: str) -> Face:
        """The face ``die`` shows this turn."""
        if self.roll is None:
            raise IllegalAction(RULE_TURN, "the dice have not been rolled this turn")
        try:
            index = self.edition.die_index(die)
        except KeyError:
            raise IllegalAction("R-BLOXX-1", f"the edition has no die {die!r}") from None
        return self.edition.face(self.roll[index])

    def marks_circle(self, player: int, die: str) -> bool:
        """False when ``player`` took the active player's die and draws a cross (R-BLOXX-5)."""
        return player == self.active or self.took[self.active] != die

    def fitting(self, player: int, face: str) -> Iterator[Placement]:
        """Placements of ``face`` on ``player``'s sheet that R-BLOXX-3 allows."""
        sheet = self.sheets[player]
        blocked = sheet.filled
        drawn = sheet.drawn
        # R-BLOXX-3: the first shape touches the bottom row, later ones a drawn square.
        touch = sheet.neighbours(drawn) if drawn else sheet.geometry.bottom
        touch &= ~blocked
        for p in self.edition.placements(face):
            m = p.mask
            if m & touch and not m & blocked:
                yield p

    def placements(self, player: int, die: str) -> Iterator[Place]:
        """Every distinct legal placement of ``die``'s rolled face for ``player``.

        Orientations that cover the same squares with the circle on the same square
        are listed once (R-BLOXX-2).
        """
        face = self.rolled_face(die)
        for p in self.fitting(player, face.name):
            yield Place(player, die, face.name, p.orientation, p.row, p.col)

    def can_place(self, player: int, die: str | None = None) -> bool:
        """Whether ``die``'s rolled face (either face, by default) fits ``player``'s sheet."""
        if self.roll is None:
            return False
        dice = [die] if die is not None else [d.name for d in self.edition.dice]
        return any(next(self.fitting(player, self.rolled_face(d).name), None) for d in dice)

    def legal_actions(self, player: int | None = None) -> Iterator[Action]:
        """Legal actions of ``player`` (default :meth:`current_player`).

        Before the roll: every possible roll (the chance outcomes, for simulation).
        Then: the dice the player may take, or :class:`Forfeit` when no rolled shape
        fits (R-BLOXX-6); once a die is taken, every distinct placement of its face.
        """
        if self.ended:
            return
        if self.phase is Phase.ROLL:
            for faces in product(*[[f.name for f in d.faces] for d in self.edition.dice]):
                yield Roll(tuple(faces))
            return
        if player is None:
            player = self.current_player()
        if player is None or player not in self.pending_players():
            return
        chosen = self.took[player]
        if chosen is not None:
            yield from self.placements(player, chosen)
            return
        fits = [d.name for d in self.edition.dice if self.can_place(player, d.name)]
        if not fits:
            yield Forfeit(player)
        for d in fits:
            yield ChooseDie(player, d)

    def resolve(self, action: Place) -> tuple[tuple[Cell, ...], Cell]:
        """The sheet squares ``action`` covers and its circle square (maybe off-sheet)."""
        face = self.edition.face(action.face)
        cells, circle = face.oriented(action.orientation)
        return (
            tuple((r + action.row, c + action.col) for r, c in cells),
            (circle[0] + action.row, circle[1] + action.col),
        )

    # -- applying ------------------------------------------------------------------------

    def apply_action(self, action: Action) -> None:
        """Apply ``action`` or raise :class:`IllegalAction`, leaving the state unchanged."""
        if self.ended:
            raise IllegalAction("R-BLOXX-9", "the game is over")
        if isinstance(action, Roll):
            change = self._check_roll(action)
        elif isinstance(action, ChooseDie):
            change = self._check_choose(action)
        elif isinstance(action, Place):
            change = self._check_place(action)
        elif isinstance(action, Forfeit):
            change = self._check_forfeit(action)
        else:
            raise TypeError(f"not a Bloxx! action: {action!r}")
        # Every check is done; from here on nothing can fail.
        self._history.append(self._snapshot())
        change()

    def _check_player_turn(self, player: int) -> None:
        if not (isinstance(player, int) and 0 <= player < self.num_players):
            raise IllegalAction(RULE_TURN, f"there is no player {player!r}")
        if self.roll is None:
            raise IllegalAction(RULE_TURN, "the active player has not rolled the dice yet")
        name = self.game.players[player]
        if self.done[player]:
            raise IllegalAction(RULE_TURN, f"{name} has already played this turn")
        if player != self.active and not self.done[self.active]:
            active = self.game.players[self.active]
            raise IllegalAction(
                RULE_TURN, f"{name} must wait until the active player {active} has played"
            )

    def _check_die(self, player: int, die: str) -> None:
        face = self.rolled_face(die)  # raises for an unknown die
        chosen = self.took[player]
        if chosen is not None and chosen != die:
            raise IllegalAction(
                RULE_TURN, f"{self.game.players[player]} took the {chosen} die, not {die}"
            )
        if not next(self.fitting(player, face.name), None):
            raise IllegalAction(
                "R-BLOXX-6",
                f"the {die} die's shape {face.name} fits nowhere on "
                f"{self.game.players[player]}'s sheet",
            )

    def _check_roll(self, action: Roll):
        if self.roll is not None:
            raise IllegalAction(RULE_TURN, "the dice were already rolled this turn")
        dice = self.edition.dice
        if len(action.faces) != len(dice):
            raise IllegalAction("R-BLOXX-1", f"a roll names one face for each of {len(dice)} dice")
        for die, face in zip(dice, action.faces):
            if face not in {f.name for f in die.faces}:
                raise IllegalAction("R-BLOXX-1", f"the {die.name} die has no face {face!r}")

        def change() -> None:
            self.roll = tuple(action.faces)

        return change

    def _check_choose(self, action: ChooseDie):
        self._check_player_turn(action.player)
        if self.took[action.player] is not None:
            raise IllegalAction(
                RULE_TURN, f"{self.game.players[action.player]} already took a die this turn"
            )
        self._check_die(action.player, action.die)

        def change() -> None:
            self.took[action.player] = action.die

        return change

    def _check_place(self, action: Place):
        p = action.player
        self._check_player_turn(p)
        face = self.rolled_face(action.die)
        if action.face != face.name:
            raise IllegalAction(
                RULE_TURN, f"the {action.die} die shows {face.name}, not {action.face!r}"
            )
        chosen = self.took[p]
        if chosen is not None and chosen != action.die:
            raise IllegalAction(
                RULE_TURN, f"{self.game.players[p]} took the {chosen} die, not {action.die}"
            )
        if not (isinstance(action.orientation, int) and 0 <= action.orientation < ORIENTATIONS):
            raise IllegalAction(
                "R-BLOXX-2",
                f"orientation {action.orientation!r} is not one of 0..{ORIENTATIONS - 1}",
            )
        cells, circle = self.resolve(action)
        problem = placement_problem(self.sheets[p], cells)
        if problem:
            raise IllegalAction("R-BLOXX-3", problem)
        geo = self.edition.geometry
        mask = geo.mask_of(cells)
        # R-BLOXX-5: the active player's die is drawn with a cross by everyone else.
        circle_bit = geo.bit(*circle) if self.marks_circle(p, action.die) else 0

        def change() -> None:
            self.sheets[p] = self.sheets[p].with_shape(mask, circle_bit)
            self.took[p] = action.die
            self._finish(p, True)

        return change

    def _check_forfeit(self, action: Forfeit):
        p = action.player
        self._check_player_turn(p)
        name = self.game.players[p]
        if self.took[p] is not None:
            raise IllegalAction("R-BLOXX-6", f"{name} took the {self.took[p]} die and must draw it")
        for die in self.edition.dice:
            if self.can_place(p, die.name):
                raise IllegalAction(
                    "R-BLOXX-6",
                    f"{name} must place: the {die.name} die's shape "
                    f"{self.rolled_face(die.name).name} fits",
                )

        def change() -> None:
            self._finish(p, False)

        return change

    def _finish(self, player: int, placed: bool) -> None:
        self.done[player] = True
        self.could_place[player] = placed
        if placed:
            sheet = self.sheets[player]
            for colour, row in self.edition.coloured_rows:
                if colour not in self.completed[player] and sheet.row_complete(row):
                    self.completed[player][colour] = self.turn
        if all(self.done):
            self._end_turn()

    def _end_turn(self) -> None:
        failed = self.could_place.count(False)
        # R-BLOXX-9: two players who cannot place end the game; one alone in a solo game.
        if failed >= min(2, self.num_players):
            self.ended = True
            return
        self.turn += 1
        self.active = (self.active + 1) % self.num_players
        self.roll = None
        n = self.num_players
        self.took = [None] * n
        self.done = [False] * n
        self.could_place = [None] * n

    # -- scores --------------------------------------------------------------------------

    def first_completion(self, colour: str) -> int | None:
        """The turn in which anyone first completed row ``colour`` (R-BLOXX-7)."""
        turns = [c[colour] for c in self.completed if colour in c]
        return min(turns) if turns else None

    def row_bonus(self, player: int) -> int:
        """R-BLOXX-7: 4 per row completed in the first turn anyone did, 2 per later one."""
        total = 0
        for colour, turn in self.completed[player].items():
            total += FIRST_BONUS if turn == self.first_completion(colour) else LATER_BONUS
        return total

    def score(self, player: int) -> Score:
        """R-BLOXX-8: circled numbers + row bonuses - gaps - empty squares."""
        sheet = self.sheets[player]
        geo = self.edition.geometry
        circled = sum(self.edition.value(r, c) for r, c in geo.cells_of(sheet.circles))
        return Score(
            circled, self.row_bonus(player), sheet.gaps.bit_count(), sheet.empty.bit_count()
        )

    def scores(self) -> dict[str, int]:
        return {name: self.score(i).total for i, name in enumerate(self.game.players)}

    def winners(self) -> list[str]:
        """Everyone with the highest score (ties share the win, R-BLOXX-9)."""
        scores = self.scores()
        best = max(scores.values())
        return [name for name, s in scores.items() if s == best]

    # -- JSON ----------------------------------------------------------------------------

    def to_json(self) -> dict[str, Any]:
        """The whole state; each sheet is a ``bloxx`` observation state."""
        dice = [d.name for d in self.edition.dice]
        rows = {}
        for colour, row in self.edition.coloured_rows:
            first = self.first_completion(colour)
            rows[colour] = {
                "row": row,
                "first_turn": first,
                "first": [i for i, c in enumerate(self.completed) if c.get(colour) == first]
                if first is not None
                else [],
            }
        return {
            "game": "bloxx",
            "edition": self.edition.name,
            "players": list(self.game.players),
            "turn": self.turn,
            "active": self.active,
            "phase": self.phase.value,
            "roll": dict(zip(dice, self.roll)) if self.roll is not None else None,
            "sheets": [s.to_json() for s in self.sheets],
            "took": list(self.took),
            "done": list(self.done),
            "could_place": list(self.could_place),
            "completed": [dict(c) for c in self.completed],
            "rows": rows,
            "scores": {name: self.score(i).to_json() for i, name in enumerate(self.game.players)},
        }

    @classmethod
    def from_json(cls, game: BloxxGame, data: dict[str, Any]) -> BloxxState:
        """Rebuild a state written by :meth:`to_json` (derived fields are recomputed).

        Raises ``ValueError`` when the data is malformed or contradicts itself.
        """
        try:
            return cls._from_json(game, data)
        except (KeyError, TypeError, AttributeError) as exc:
            raise ValueError(f"malformed Bloxx! state: {exc!r}") from None

    @classmethod
    def _from_json(cls, game: BloxxGame, data: dict[str, Any]) -> BloxxState:
        ed = game.edition
        n = game.num_players
        if data.get("game") != "bloxx" or data.get("players") != list(game.players):
            raise ValueError("state is not a Bloxx! state for these players")
        st = cls(game)
        st.turn, st.active = data["turn"], data["active"]
        if not (isinstance(st.turn, int) and st.turn >= 0 and 0 <= st.active < n):
            raise ValueError("bad turn or active player")
        roll = data["roll"]
        if roll is not None:
            try:
                st.roll = tuple(roll[d.name] for d in ed.dice)
            except (KeyError, TypeError):
                raise ValueError("the roll must name a face for every die") from None
            for die, face in zip(ed.dice, st.roll):
                if face not in {f.name for f in die.faces}:
                    raise ValueError(f"the {die.name} die has no face {face!r}")
        try:
            st.sheets = [Sheet.from_rows(ed.geometry, s) for s in data["sheets"]]
        except SheetFormatError as exc:
            raise ValueError(str(exc)) from None
        for i, s in enumerate(st.sheets):
            if s.problems():
                raise ValueError(f"sheet of player {i}: {s.problems()[0]} (R-BLOXX-4)")
        st.took = list(data["took"])
        st.done = list(data["done"])
        st.could_place = list(data["could_place"])
        st.completed = [dict(c) for c in data["completed"]]
        st.ended = data["phase"] == Phase.ENDED.value
        lists = (st.sheets, st.took, st.done, st.could_place, st.completed)
        if not all(len(x) == n for x in lists):
            raise ValueError(f"every per-player list must have {n} entries")
        colours = dict(ed.coloured_rows)
        for i in range(n):
            if st.took[i] is not None and st.took[i] not in {d.name for d in ed.dice}:
                raise ValueError(f"player {i} took an unknown die {st.took[i]!r}")
            if st.done[i] != (st.could_place[i] is not None):
                raise ValueError(f"player {i}: 'done' and 'could_place' disagree")
            if st.could_place[i] is True and st.took[i] is None:
                raise ValueError(f"player {i} placed without a die")
            if st.could_place[i] is False and st.took[i] is not None:
                raise ValueError(f"player {i} forfeited but took a die")
            for colour, row in colours.items():
                complete = st.sheets[i].row_complete(row)
                turn = st.completed[i].get(colour)
                if complete != (turn is not None):
                    raise ValueError(
                        f"player {i}: row {colour} completion does not match the sheet"
                    )
                if turn is not None and not (isinstance(turn, int) and 0 <= turn <= st.turn):
                    raise ValueError(f"player {i}: row {colour} completed in a bad turn {turn!r}")
            if set(st.completed[i]) - set(colours):
                raise ValueError(f"player {i}: unknown row colour in 'completed'")
        if (st.roll is None) and (any(st.done) or any(t is not None for t in st.took)):
            raise ValueError("nobody can have played before the roll")
        if st.ended and st.roll is None:
            raise ValueError("a game ends after a played turn")
        return st

    # -- text ----------------------------------------------------------------------------

    def __str__(self) -> str:
        names = self.game.players
        width = self.edition.columns
        head = "  ".join(n[:width].ljust(width) for n in names)
        grid = [s.rows() for s in self.sheets]
        body = ["  ".join(g[r] for g in grid) for r in range(self.edition.rows)]
        if self.ended:
            status = "ended; scores " + ", ".join(f"{k} {v}" for k, v in self.scores().items())
        elif self.roll is None:
            status = f"turn {self.turn + 1}: {names[self.active]} to roll"
        else:
            rolled = ", ".join(f"{d.name} {f}" for d, f in zip(self.edition.dice, self.roll))
            status = f"turn {self.turn + 1}: {names[self.active]} rolled {rolled}"
        return "\n".join([status, head, *body])


def placement_problem(sheet: Sheet, cells: Sequence[Cell]) -> str | None:
    """Why drawing ``cells`` breaks R-BLOXX-3 on ``sheet``, or ``None`` when it may."""
    geo = sheet.geometry
    outside = [c for c in cells if not (0 <= c[0] < geo.rows and 0 <= c[1] < geo.columns)]
    if outside:
        return f"squares {[list(c) for c in outside]} are outside the sheet"
    mask = geo.mask_of(cells)
    taken = geo.cells_of(mask & sheet.filled)
    if taken:
        return f"squares {[list(c) for c in taken]} are already filled"
    if not sheet.drawn:
        if not mask & geo.bottom:
            return "the first shape must touch the bottom row"
    elif not mask & sheet.neighbours(sheet.drawn):
        return "the shape must share a side with a shape drawn earlier (gaps do not count)"
    return None
