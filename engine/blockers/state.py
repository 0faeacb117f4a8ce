"""The Blockers! game and its state.

Full information and table mode share one state class. A rack or supply entry is a face
name when the engine knows it, or ``None`` for a face-down tile it has not seen (table
mode: the camera sees only the board and the captured tiles). Playing a face from a rack
that holds unknown tiles is allowed exactly when that face is *unseen*: not on the board,
not captured, not known to lie elsewhere.

Turn structure (rulebook "Gameplay", R-BLOCKERS-2..4): the player plays one rack tile,
either on an empty space or as a capture; a player who can do neither makes a forced
pass. After playing, the player draws one tile of the colour played if that supply has
any. End: R-BLOCKERS-6 (standard game) or R-BLOCKERS-7 (two-player variant with two
colours each). Score: R-BLOCKERS-5.
"""

from __future__ import annotations

import random
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from engine.blockers.actions import Action, Capture, ForcedPass, Place
from engine.blockers.board import Tile, capturable_map, count_groups, group_of, split_parts
from engine.blockers.edition import BlockersEdition, load_edition
from engine.common import IllegalAction

R2, R3, R4, R6, R7 = (f"R-BLOCKERS-{i}" for i in (2, 3, 4, 6, 7))


class SplitsGroup(IllegalAction):
    """R-BLOCKERS-3: the capture would split a group. ``group`` and ``parts`` are space sets."""

    def __init__(self, why: str, group: frozenset[int], parts: list[frozenset[int]]) -> None:
        super().__init__(R3, why)
        self.group = group
        self.parts = parts


@dataclass(frozen=True)
class Player:
    """A player: a name (used in scores and events) and the colour(s) they play."""

    name: str
    colors: tuple[str, ...]

    def to_json(self) -> dict[str, Any]:
        return {"name": self.name, "colors": list(self.colors)}


@dataclass(frozen=True)
class ScoreLine:
    """R-BLOCKERS-5 for one player: ``points = groups + captured_most``; lower is better."""

    groups: int
    captured_most: int
    captured_total: int

    @property
    def points(self) -> int:
        return self.groups + self.captured_most


class BlockersGame:
    """Edition + players. ``players`` are colour tuples in clockwise order.

    Standard game: 2 to 5 players with one colour each. Two-player variant (R-BLOCKERS-7):
    exactly two players with two colours each. Player names default to their colours
    joined by ``+`` (``"red"``, ``"red+green"``).
    """

    def __init__(
        self,
        players: Sequence[Sequence[str] | str],
        edition: BlockersEdition | None = None,
        names: Sequence[str] | None = None,
    ) -> None:
        self.edition = edition or load_edition()
        colour_lists = [(p,) if isinstance(p, str) else tuple(p) for p in players]
        if names is None:
            names = ["+".join(cs) for cs in colour_lists]
        if len(names) != len(colour_lists):
            raise ValueError("one name per player")
        widths = {len(cs) for cs in colour_lists}
        if widths == {1}:
            if not 2 <= len(colour_lists) <= 5:
                raise ValueError(f"Blockers! is for 2 to 5 players, not {len(colour_lists)}")
            self.variant = False
        elif widths == {2}:
            if len(colour_lists) != 2:
                raise ValueError("the variant with two colours each (R-BLOCKERS-7) is for exactly 2 players")
            self.variant = True
        else:
            raise ValueError("every player has one colour, or (two-player variant, R-BLOCKERS-7) two colours")
        flat = [c for cs in colour_lists for c in cs]
        unknown = [c for c in flat if c not in self.edition.colors]
        if unknown:
            raise ValueError(f"unknown colour(s) {unknown}; the edition has {list(self.edition.colors)}")
        if len(set(flat)) != len(flat):
            raise ValueError("each colour belongs to one player only")
        if len(set(names)) != len(names):
            raise ValueError("player names must differ")
        self.players = tuple(Player(n, cs) for n, cs in zip(names, colour_lists))
        self.colors = tuple(flat)
        self.owner = {c: i for i, p in enumerate(self.players) for c in p.colors}

    def new_initial_state(self, rng: random.Random, first_player: int | None = None) -> "BlockersState":
        """Full information: shuffle each colour's tiles, deal ``rack_size`` to each rack, and
        pick the starting player at random unless ``first_player`` is given."""
        e = self.edition
        racks: dict[str, list[str | None]] = {}
        supplies: dict[str, list[str | None]] = {}
        for color in self.colors:
            faces: list[str | None] = list(e.faces)
            rng.shuffle(faces)
            racks[color] = faces[: e.rack_size]
            supplies[color] = faces[e.rack_size :]
        if first_player is None:
            first_player = rng.randrange(len(self.players))
        return BlockersState(self, racks, supplies, first_player)

    def new_table_state(self, first_player: int = 0) -> "BlockersState":
        """Table mode: the racks and supplies are face down and unknown to the engine."""
        e = self.edition
        n = len(e.faces)
        racks: dict[str, list[str | None]] = {c: [None] * e.rack_size for c in self.colors}
        supplies: dict[str, list[str | None]] = {c: [None] * (n - e.rack_size) for c in self.colors}
        return BlockersState(self, racks, supplies, first_player)

    def player_index(self, name: str) -> int:
        for i, p in enumerate(self.players):
            if p.name == name:
                return i
        raise KeyError(name)

    def to_json(self) -> dict[str, Any]:
        return {"edition": self.edition.name, "players": [p.to_json() for p in self.players]}


class BlockersState:
    """A position: board, racks, supplies, captured tiles, whose turn, and the end countdown.

    ``board`` has 81 entries (``None`` or :class:`Tile`), index ``row * 9 + column`` with
    row 0 the far edge (A). ``racks``/``supplies`` map a colour to its faces (``None`` =
    unknown); the next draw is ``supplies[c][0]``. ``captured[player][colour]`` lists the
    faces a player has taken. ``countdown`` (standard game, R-BLOCKERS-6) is ``None`` until
    the last tile is drawn, then the number of turns left.
    """

    def __init__(
        self,
        game: BlockersGame,
        racks: dict[str, list[str | None]],
        supplies: dict[str, list[str | None]],
        current: int,
    ) -> None:
        self.game = game
        self.edition = game.edition
        self.board: list[Tile | None] = [None] * self.edition.spaces
        self.racks = {c: list(racks[c]) for c in game.colors}
        self.supplies = {c: list(supplies[c]) for c in game.colors}
        self.captured: dict[str, dict[str, list[str | None]]] = {p.name: {} for p in game.players}
        if not 0 <= current < len(game.players):
            raise ValueError(f"no player {current}")
        self.current = current
        self.turns = 0
        self.countdown: int | None = None
        self.retired: set[str] = set()
        self.passes_in_row = 0
        self.ended: str | None = None
        self._history: list[tuple[Action, tuple]] = []

    # -- basic queries ----------------------------------------------------------------

    @property
    def current_player(self) -> Player:
        return self.game.players[self.current]

    def active_colors(self, player: int | None = None) -> tuple[str, ...]:
        """Colours the player may still play (R-BLOCKERS-7: a retired colour is out)."""
        p = self.game.players[self.current if player is None else player]
        return tuple(c for c in p.colors if c not in self.retired)

    def is_terminal(self) -> bool:
        return self.ended is not None

    def tile_at(self, space: int | str) -> Tile | None:
        return self.board[self._index(space)]

    def _index(self, space: int | str) -> int:
        return self.edition.space_index(space) if isinstance(space, str) else space

    def unseen_faces(self, color: str) -> list[str]:
        """Faces of ``color`` whose whereabouts the engine does not know (face-down tiles)."""
        known = {t.face for t in self.board if t is not None and t.color == color}
        for per_colour in self.captured.values():
            known.update(per_colour.get(color, ()))
        known.update(self.racks[color])
        known.update(self.supplies[color])
        return [f for f in self.edition.faces if f not in known]

    def rack_faces(self, color: str) -> list[str]:
        """Faces that could be on the rack of ``color``: the known ones, plus every unseen
        face if the rack holds an unknown tile."""
        rack = self.racks[color]
        known = [f for f in rack if f is not None]
        if None in rack:
            known += self.unseen_faces(color)
        return known

    # -- legal actions ----------------------------------------------------------------

    def legal_actions(self) -> Iterator[Action]:
        """Every legal placement and capture for the player to move (R-BLOCKERS-2..4,
        R-BLOCKERS-7); a single :class:`ForcedPass` when there is none; nothing once the
        game is over. Placements and captures are mixed in board order per rack tile."""
        if self.ended:
            return
        e = self.edition
        board = self.board
        capturable: list[bool] | None = None
        any_action = False
        for color in self.active_colors():
            for face in self.rack_faces(color):
                for space in e.targets[face]:
                    occupant = board[space]
                    if occupant is None:
                        any_action = True
                        yield Place(color, face, space)
                    elif occupant.color != color:
                        if capturable is None:
                            capturable = capturable_map(board, e.neighbours)
                        if capturable[space]:
                            any_action = True
                            yield Capture(color, face, space, occupant)
        if not any_action:
            yield ForcedPass(self._shown_rack())

    def _shown_rack(self) -> tuple[Tile, ...]:
        return tuple(Tile(c, f) for c in self.active_colors() for f in self.racks[c] if f is not None)

    def check_action(self, action: Action) -> None:
        """Raise :class:`IllegalAction` (naming the ruling) unless ``action`` is legal now."""
        if self.ended:
            raise IllegalAction(R6, "the game is over")
        if isinstance(action, ForcedPass):
            self._check_pass(action)
        elif isinstance(action, (Place, Capture)):
            self._check_play(action)
        else:
            raise TypeError(f"not a Blockers! action: {action!r}")

    def check_colour_rules(self, action: Place | Capture) -> None:
        """The checks colour alone decides (table mode with an unread face): whose turn and
        colour, empty space or capture of another colour, and the group rule (R-BLOCKERS-3)."""
        if self.ended:
            raise IllegalAction(R6, "the game is over")
        self._check_play(action, colour_only=True)

    def _check_play(self, action: Place | Capture, colour_only: bool = False) -> None:
        e = self.edition
        player = self.current_player
        color, face = action.color, action.face
        rule = R7 if self.game.variant else R2
        if color not in player.colors:
            owner = self.game.owner.get(color)
            whose = f"{self.game.players[owner].name}'s" if owner is not None else "no player's"
            raise IllegalAction(rule, f"{player.name} is to play and may only play their own tiles; {color} is {whose}")
        if color in self.retired:
            raise IllegalAction(R7, f"{player.name}'s {color} rack is used up and turned over; only the other colour may be played")
        if not 0 <= action.space < e.spaces:
            raise IllegalAction(R2, f"there is no space {action.space} on the board")
        name = e.space_name(action.space)
        rack = self.racks[color]
        if colour_only:
            pass
        elif face is None:
            if None not in rack:
                raise IllegalAction(R2, f"the {color} rack is known, so the tile's face must be named")
            fits = self.possible_faces(color, action.space)
            if not fits:
                raise IllegalAction(
                    R2, f"no {color} tile that could still be on the rack may lie on {name} "
                    f"(it takes {', '.join(e.faces_for_space(action.space))})"
                )
        else:
            if face not in e.targets:
                raise IllegalAction(R2, f"{face!r} is not a tile face of this edition")
            if face not in rack and not (None in rack and face in self.unseen_faces(color)):
                raise IllegalAction(R2, f"{color} {face} is not on {player.name}'s rack")
            if not e.allows(face, action.space):
                raise IllegalAction(R2, f"{color} {face} may not lie on {name}: {_placement_rule(e, face)}")
        occupant = self.board[action.space]
        if isinstance(action, Place):
            if occupant is not None:
                raise IllegalAction(
                    R3, f"{name} holds {occupant.color} {occupant.face or '(unread)'}; playing there is a capture"
                )
            return
        if occupant is None:
            raise IllegalAction(R3, f"{name} is empty; there is nothing to capture")
        if occupant != action.captured:
            raise IllegalAction(
                R3, f"{name} holds {occupant.color} {occupant.face}, not {action.captured.color} {action.captured.face}"
            )
        if occupant.color == color:
            raise IllegalAction(R3, f"a {color} tile cannot capture a tile of its own colour ({name})")
        check_group_rule(self.board, e, action.space)

    def _check_pass(self, action: ForcedPass) -> None:
        colors = self.active_colors()
        shown = self._shown_rack()
        unknown = any(None in self.racks[c] for c in colors)
        if action.revealed:
            expected = {c: len(self.racks[c]) for c in colors}
            got: dict[str, int] = {}
            for t in action.revealed:
                if t.color not in colors:
                    raise IllegalAction(R4, f"{t.color} {t.face} is not on {self.current_player.name}'s racks in play")
                got[t.color] = got.get(t.color, 0) + 1
            if any(got.get(c, 0) != expected[c] for c in colors) or len(set(action.revealed)) != len(action.revealed):
                raise IllegalAction(R4, "the revealed tiles are not the whole rack")
            for t in action.revealed:
                if t.face is None:
                    raise IllegalAction(R4, "every revealed tile must be named")
                if t.face not in self.racks[t.color] and (
                    None not in self.racks[t.color] or t.face not in self.unseen_faces(t.color)
                ):
                    raise IllegalAction(R4, f"{t.color} {t.face} cannot be on the rack")
            tiles = list(action.revealed)
        elif unknown:
            # Table mode without the revealed rack: nothing visible decides the pass.
            return
        else:
            tiles = list(shown)
        play = self._first_play(tiles)
        if play is not None:
            kind = "placed on" if isinstance(play, Place) else "capture on"
            raise IllegalAction(
                R4, f"passing is not allowed: {play.color} {play.face} can be {kind} {self.edition.space_name(play.space)}"
            )

    def _first_play(self, tiles: Sequence[Tile]) -> Place | Capture | None:
        e = self.edition
        capturable = None
        for color, face in tiles:
            for space in e.targets[face]:  # type: ignore[index]
                occupant = self.board[space]
                if occupant is None:
                    return Place(color, face, space)
                if occupant.color != color:
                    if capturable is None:
                        capturable = capturable_map(self.board, e.neighbours)
                    if capturable[space]:
                        return Capture(color, face, space, occupant)
        return None

    def possible_faces(self, color: str, space: int | str) -> list[str]:
        """Faces of ``color`` that may lie on ``space`` (R-BLOCKERS-2) and could be on the
        rack: what a tile of unread face must be for its placement to be legal."""
        index = self._index(space)
        candidates = set(self.rack_faces(color))
        return [f for f in self.edition.faces_for_space(index) if f in candidates]

    # -- applying ---------------------------------------------------------------------

    def apply_action(self, action: Action) -> None:
        """Play ``action`` for the player to move, draw, and pass the turn.

        Raises :class:`IllegalAction` (state unchanged) if the action is illegal."""
        self.check_action(action)
        self._history.append((action, self._snapshot()))
        color_played: str | None = None
        if isinstance(action, ForcedPass):
            for t in action.revealed:
                rack = self.racks[t.color]
                if t.face not in rack:
                    rack[rack.index(None)] = t.face
            self.passes_in_row += 1
        else:
            color_played = action.color
            rack = self.racks[action.color]
            rack.remove(action.face if action.face in rack else None)
            if isinstance(action, Capture):
                taken = self.board[action.space]
                assert taken is not None
                self.captured[self.current_player.name].setdefault(taken.color, []).append(taken.face)
            self.board[action.space] = Tile(action.color, action.face)
            self.passes_in_row = 0
            supply = self.supplies[action.color]
            if supply:
                rack.append(supply.pop(0))
            elif self.game.variant:
                # R-BLOCKERS-7: no tile of that colour left to draw: the rack is turned over
                # and the colour is out of the game.
                self.retired.add(action.color)
        self._end_turn()

    def _end_turn(self) -> None:
        self.turns += 1
        players = self.game.players
        if self.game.variant:
            if len(self.retired) == len(self.game.colors):
                self.ended = "end"  # R-BLOCKERS-7: both players hold four of each colour.
        elif self.countdown is not None:
            self.countdown -= 1
            if self.countdown <= 0:
                self.ended = "end"
        elif not any(self.supplies.values()):
            # R-BLOCKERS-6: the last tile has been drawn; every player has one more turn.
            self.countdown = len(players)
        in_play = [i for i in range(len(players)) if self.active_colors(i)]
        if not self.ended and self.passes_in_row >= len(in_play):
            # Everyone still in the game was forced to pass in a row and a pass changes
            # nothing, so nobody can ever move again: the game ends (rulings are silent).
            self.ended = "blocked"
        if self.ended:
            return
        nxt = self.current
        for _ in range(len(players)):
            nxt = (nxt + 1) % len(players)
            if self.active_colors(nxt):
                break
        self.current = nxt

    def undo(self) -> Action:
        """Take back the last action and return it. ``IndexError`` if there is none."""
        action, snap = self._history.pop()
        self._restore(snap)
        return action

    def clone(self) -> "BlockersState":
        other = BlockersState.__new__(BlockersState)
        other.game = self.game
        other.edition = self.edition
        other._restore(self._snapshot())
        other._history = list(self._history)
        return other

    def _snapshot(self) -> tuple:
        return (
            tuple(self.board),
            {c: tuple(v) for c, v in self.racks.items()},
            {c: tuple(v) for c, v in self.supplies.items()},
            {p: {c: tuple(v) for c, v in d.items()} for p, d in self.captured.items()},
            self.current,
            self.turns,
            self.countdown,
            frozenset(self.retired),
            self.passes_in_row,
            self.ended,
        )

    def _restore(self, snap: tuple) -> None:
        board, racks, supplies, captured, current, turns, countdown, retired, passes, ended = snap
        self.board = list(board)
        self.racks = {c: list(v) for c, v in racks.items()}
        self.supplies = {c: list(v) for c, v in supplies.items()}
        self.captured = {p: {c: list(v) for c, v in d.items()} for p, d in captured.items()}
        self.current = current
        self.turns = turns
        self.countdown = countdown
        self.retired = set(retired)
        self.passes_in_row = passes
        self.ended = ended

    @property
    def history(self) -> tuple[Action, ...]:
        return tuple(a for a, _ in self._history)

    def reveal_face(self, space: int | str, face: str) -> None:
        """Table mode: the camera now reads the face of a tile it placed unread.

        The face must fit the space (R-BLOCKERS-2) and be unseen; ``IllegalAction`` otherwise."""
        index = self._index(space)
        tile = self.board[index]
        if tile is None or tile.face is not None:
            raise ValueError(f"{self.edition.space_name(index)} holds no tile with an unread face")
        if not self.edition.allows(face, index):
            raise IllegalAction(R2, f"{tile.color} {face} may not lie on {self.edition.space_name(index)}: {_placement_rule(self.edition, face)}")
        if face not in self.unseen_faces(tile.color):
            raise IllegalAction(R2, f"{tile.color} {face} is already accounted for elsewhere")
        # The unread tile was one of the unknowns; naming it keeps the count of unknown
        # slots equal to the number of unseen faces, so racks and supplies stay as they are.
        self.board[index] = Tile(tile.color, face)

    # -- scoring ----------------------------------------------------------------------

    def score_line(self, player: int | str) -> ScoreLine:
        """R-BLOCKERS-5 (and R-BLOCKERS-7: both colours' groups) for one player."""
        i = self.game.player_index(player) if isinstance(player, str) else player
        p = self.game.players[i]
        n_groups = count_groups(self.board, self.edition.neighbours, p.colors)
        counts = [len(v) for v in self.captured[p.name].values()]
        # Ties between colours count once: the largest count is the same number either way.
        return ScoreLine(n_groups, max(counts, default=0), sum(counts))

    def scores(self) -> dict[str, int]:
        """Points per player name; fewer is better (R-BLOCKERS-5)."""
        return {p.name: self.score_line(i).points for i, p in enumerate(self.game.players)}

    def winners(self) -> list[str]:
        """Names of the players with the fewest points, then the fewest captured tiles in
        all; still-tied players share the win (R-BLOCKERS-5)."""
        keys = {}
        for i, p in enumerate(self.game.players):
            line = self.score_line(i)
            keys[p.name] = (line.points, line.captured_total)
        best = min(keys.values())
        return [n for n, k in keys.items() if k == best]

    # -- JSON -------------------------------------------------------------------------

    def observation_state(self) -> dict[str, Any]:
        """The visible board as the ``blockers`` observation state of observation.md."""
        n = self.edition.size
        return {
            "cells": [
                [None if t is None else t.to_json() for t in self.board[r * n : (r + 1) * n]] for r in range(n)
            ]
        }

    def to_json(self) -> dict[str, Any]:
        """Everything: the observation ``cells`` plus the captured tiles, turn bookkeeping and
        the hidden racks and supplies (``null`` = a face the engine does not know)."""
        out: dict[str, Any] = {"game": "blockers", "edition": self.edition.name}
        out["players"] = [p.to_json() for p in self.game.players]
        out.update(self.observation_state())
        out["captured"] = {p: {c: list(v) for c, v in d.items()} for p, d in self.captured.items()}
        out["current"] = self.current_player.name
        out["turns"] = self.turns
        out["end_countdown"] = self.countdown
        out["retired"] = sorted(self.retired, key=self.game.colors.index)
        out["passes_in_row"] = self.passes_in_row
        out["ended"] = self.ended
        out["hidden"] = {
            "racks": {c: list(v) for c, v in self.racks.items()},
            "supplies": {c: list(v) for c, v in self.supplies.items()},
        }
        return out

    @classmethod
    def from_json(cls, data: dict[str, Any], edition: BlockersEdition | None = None) -> "BlockersState":
        """Rebuild a state from :meth:`to_json` (history is not stored, so no undo).

        ``ValueError`` if the data is inconsistent (a tile in two places, wrong counts)."""
        if data.get("game") != "blockers":
            raise ValueError("not a blockers state")
        players = data["players"]
        game = BlockersGame([tuple(p["colors"]) for p in players], edition, names=[p["name"] for p in players])
        e = game.edition
        hidden = data["hidden"]
        state = cls(game, hidden["racks"], hidden["supplies"], game.player_index(data["current"]))
        cells = data["cells"]
        n = e.size
        if len(cells) != n or any(len(row) != n for row in cells):
            raise ValueError(f"cells must be {n} rows of {n}")
        for r, row in enumerate(cells):
            for c, cell in enumerate(row):
                state.board[r * n + c] = None if cell is None else Tile.from_json(cell)
        state.captured = {p.name: {c: list(v) for c, v in data["captured"].get(p.name, {}).items()} for p in game.players}
        state.turns = int(data["turns"])
        state.countdown = data["end_countdown"]
        state.retired = set(data["retired"])
        state.passes_in_row = int(data["passes_in_row"])
        state.ended = data["ended"]
        state.validate()
        return state

    def validate(self) -> None:
        """Check that every tile is in exactly one place; ``ValueError`` if not."""
        e = self.edition
        for color in e.colors:
            on_board = [t.face for t in self.board if t is not None and t.color == color]
            captured = [f for d in self.captured.values() for f in d.get(color, [])]
            if color not in self.game.colors:
                if on_board or captured:
                    raise ValueError(f"{color} tiles are not in this game")
                continue
            located = on_board + captured + self.racks[color] + self.supplies[color]
            if len(located) != len(e.faces):
                raise ValueError(f"{color}: {len(located)} tiles accounted for, expected {len(e.faces)}")
            known = [f for f in located if f is not None]
            if len(set(known)) != len(known) or not set(known) <= set(e.faces):
                raise ValueError(f"{color}: a face is duplicated or unknown")
        for i, t in enumerate(self.board):
            if t is not None and t.face is not None and not e.allows(t.face, i):
                raise ValueError(f"{t.color} {t.face} may not lie on {e.space_name(i)} (R-BLOCKERS-2)")

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, BlockersState):
            return NotImplemented
        return self.game.players == other.game.players and self._snapshot() == other._snapshot()

    __hash__ = None  # type: ignore[assignment]

    def __str__(self) -> str:
        e = self.edition
        n = e.size
        lines = ["    " + " ".join(f"{c:<4}" for c in e.columns)]
        for r in range(n):
            cells = []
            for c in range(n):
                t = self.board[r * n + c]
                if t is None:
                    cells.append(" .  ")
                else:
                    face = "?" if t.face is None else ("*" if t.face == e.wild else t.face[:3])
                    cells.append(f"{t.color[0]}{face:<3}")
            lines.append(f"{e.rows[r]}   " + " ".join(cells))
        sc = self.scores()
        status = f"over ({self.ended})" if self.ended else f"{self.current_player.name} to play"
        lines.append(f"turn {self.turns}, {status}; scores " + ", ".join(f"{k} {v}" for k, v in sc.items()))
        return "\n".join(lines)


def check_group_rule(board: Sequence[Tile | None], edition: BlockersEdition, space: int) -> None:
    """Raise :class:`SplitsGroup` if taking the tile on ``space`` splits its group (R-BLOCKERS-3)."""
    parts = split_parts(board, edition.neighbours, space)
    if len(parts) <= 1:
        return
    group = group_of(board, edition.neighbours, space)
    tile = board[space]
    assert tile is not None

    def names(spaces: frozenset[int]) -> str:
        return "{" + ", ".join(edition.space_name(s) for s in sorted(spaces)) + "}"

    why = (
        f"taking {tile.color} {tile.face or '(unread)'} from {edition.space_name(space)} would split the "
        f"{tile.color} group of {len(group)} tiles {names(group)} into {len(parts)} groups: "
        + " and ".join(names(p) for p in parts)
    )
    raise SplitsGroup(why, group, parts)


def _placement_rule(e: BlockersEdition, face: str) -> str:
    kind = e.face_kind(face)
    if kind == "letter":
        return f"a letter tile goes in its row ({face})"
    if kind == "number":
        return f"a number tile goes in its column ({face})"
    if kind == "symbol":
        return f"a symbol tile goes in the {face} section"
    return "a wild tile goes anywhere"
