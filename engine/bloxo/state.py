"""The Bloxo game and its state: tableau, hands, draw pile, cards out of the game, scores.

Two ways to play (see the rulings' preamble):

* **full information** (:meth:`BloxoGame.new_initial_state`): every card's place is
  known: hands, draw pile (index 0 is the top), cards out of the game.
* **table mode** (:meth:`BloxoGame.new_table_state`): only the tableau is known. Hands,
  pile and discards are tracked as counts; the card a placement needs is *implied* by
  the quadrants seen (see :mod:`engine.bloxo.table`).

Turn order: players in the order given, starting with ``first``. A player whose hand
is empty (the pile ran out) is skipped; they have played their last card.
"""

from __future__ import annotations

import random
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from engine.bloxo.actions import Action, Pass, Place, Redraw, action_from_json
from engine.bloxo.edition import CardKind, Colours, Edition, load_edition
from engine.bloxo.grid import Pos, edge_conflicts, frontier, placement_points, requirements, touches
from engine.common import IllegalAction

END_ALL_PLAYED = "every player has played their last card"
END_BLOCKED = "in a full round no player could place a card"


@dataclass(frozen=True)
class Placed:
    """A card on the tableau: which card, its rotation and the quadrants seen."""

    card: str
    rotation: int
    seen: Colours


@dataclass(frozen=True)
class Record:
    """One entry of the game log: who did what and what it scored (passes: minus)."""

    player: str
    action: Action
    points: int
    forced: bool = False

    def to_json(self) -> dict[str, Any]:
        return {"player": self.player, "action": self.action.to_json(), "points": self.points,
                "forced": self.forced}


class BloxoGame:
    """A Bloxo game definition: edition, 2 to 4 players and who goes first."""

    def __init__(self, players: Sequence[str], edition: Edition | None = None, first: int = 0) -> None:
        players = list(players)
        if not 2 <= len(players) <= 4:
            raise ValueError(f"Bloxo is for 2 to 4 players, got {len(players)}")
        if len(set(players)) != len(players) or not all(isinstance(p, str) and p for p in players):
            raise ValueError(f"player names must be different non-empty strings, got {players}")
        if not 0 <= first < len(players):
            raise ValueError(f"first player index {first} is out of range")
        self.players: tuple[str, ...] = tuple(players)
        self.edition = edition if edition is not None else load_edition()
        self.first = first

    @property
    def setup_discards(self) -> int:
        """Cards put out of the game before dealing (R-BLOXO-7)."""
        return self.edition.setup_discards[len(self.players)]

    def new_initial_state(self, rng: random.Random | None = None,
                          deck: Sequence[str] | None = None) -> BloxoState:
        """Set up a full-information game (R-BLOXO-7).

        The deck is shuffled with ``rng``, or taken in the order ``deck`` gives (a
        permutation of every card id, top first; for tests). From the top: the setup
        discards go out of the game, each player in turn order takes the next
        ``hand_size`` cards, the next card is the start card at ``(0, 0)`` with
        rotation 0, and the rest is the draw pile. Whether to redraw a one-colour start
        card is a choice: the :class:`Redraw` action, legal before the first turn.
        """
        ed = self.edition
        if deck is None:
            if rng is None:
                raise ValueError("pass a random.Random to shuffle the deck, or a deck order")
            order = list(ed.card_ids)
            rng.shuffle(order)
        else:
            order = list(deck)
            if sorted(order) != sorted(ed.card_ids):
                raise ValueError("deck must hold every card of the edition exactly once")
        n = len(self.players)
        d = self.setup_discards
        h = ed.hand_size
        out = order[:d]
        hands: list[list[str]] = [[] for _ in range(n)]
        for k in range(n):
            hands[(self.first + k) % n] = order[d + k * h: d + (k + 1) * h]
        start = order[d + n * h]
        pile = order[d + n * h + 1:]
        state = BloxoState(self)
        state._put((0, 0), start, 0)
        state.hands = hands
        state.hand_counts = [len(x) for x in hands]
        state.draw_pile = pile
        state.pile_count = len(pile)
        state.out_of_game = out
        state.out_count = len(out)
        return state

    def new_table_state(self, observation: Mapping[str, Any]) -> BloxoState:
        """Start a table-mode game from the first stable observation: the start card alone
        at ``(0, 0)`` (R-BLOXO-7). Raises ValueError if the observation is not that."""
        from engine.bloxo.table import parse_observation

        looks, _, _ = parse_observation(self.edition, observation)
        if set(looks) != {(0, 0)}:
            raise ValueError(f"a new game shows exactly one card, at [0, 0]; seen at {sorted(looks)}")
        seen = looks[(0, 0)]
        design = self.edition.identify(seen)
        if design is None:
            raise ValueError(f"no card of the edition shows {list(seen)} (R-BLOXO-1)")
        card = self.edition.card(self.edition.cards_of_design(design)[0])
        state = BloxoState(self)
        state._put((0, 0), card.id, _rotation_of(card.appearances, seen))
        n = len(self.players)
        state.hand_counts = [self.edition.hand_size] * n
        state.pile_count = len(self.edition.cards) - self.setup_discards - n * self.edition.hand_size - 1
        state.out_count = self.setup_discards
        return state


def _rotation_of(appearances: tuple[tuple[int, Colours], ...], seen: Colours) -> int:
    for r, look in appearances:
        if look == seen:
            return r
    raise ValueError(f"card does not show {list(seen)} in any rotation")


def _is_int(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


class BloxoState:
    """The state of a Bloxo game.

    Attributes (read them, change them only through :meth:`apply_action`):

    * ``tableau``: card position -> :class:`Placed`, in the order the cards were laid;
    * ``hands``: per player, card ids (None in table mode); ``hand_counts`` always;
    * ``draw_pile``: card ids, top first (None in table mode); ``pile_count`` always;
    * ``out_of_game``: setup discards and passed cards (None in table mode);
      ``out_count`` always;
    * ``score_list``: per player; ``current``: index of the player to move (None once
      the game has ended); ``turns``: turns taken; ``redraw_used``;
    * ``stuck``: players who had to pass, without being able to place, in the current
      run of turns (R-BLOXO-6); ``log``: one :class:`Record` per turn (and redraw).
    """

    def __init__(self, game: BloxoGame) -> None:
        self.game = game
        self.edition = game.edition
        n = len(game.players)
        self.tableau: dict[Pos, Placed] = {}
        self._looks: dict[Pos, Colours] = {}
        self.hands: list[list[str]] | None = None
        self.hand_counts: list[int] = [0] * n
        self.draw_pile: list[str] | None = None
        self.pile_count = 0
        self.out_of_game: list[str] | None = None
        self.out_count = 0
        self.score_list: list[int] = [0] * n
        self.current: int | None = game.first
        self.turns = 0
        self.redraw_used = False
        self.stuck: set[int] = set()
        self.end_reason: str | None = None
        self.log: list[Record] = []
        self._history: list[tuple[Any, ...]] = []

    # ----------------------------------------------------------------- queries

    @property
    def full_information(self) -> bool:
        """True when hands and the draw pile are known (not table mode)."""
        return self.hands is not None

    @property
    def players(self) -> tuple[str, ...]:
        return self.game.players

    def current_player(self) -> str | None:
        """The name of the player to move, or None once the game has ended."""
        return None if self.current is None else self.game.players[self.current]

    def looks(self) -> Mapping[Pos, Colours]:
        """Card position -> quadrant colours seen there (NW, NE, SE, SW); read-only use."""
        return self._looks

    def is_terminal(self) -> bool:
        """Whether the game has ended (R-BLOXO-6)."""
        return self.current is None

    def scores(self) -> dict[str, int]:
        return dict(zip(self.game.players, self.score_list))

    def ranking(self) -> list[tuple[int, str, int]]:
        """(rank, player, score), best first; equal scores share a rank (1, 1, 3)."""
        order = sorted(range(len(self.players)), key=lambda i: (-self.score_list[i], i))
        out: list[tuple[int, str, int]] = []
        for pos, i in enumerate(order):
            rank = out[-1][0] if out and out[-1][2] == self.score_list[i] else pos + 1
            out.append((rank, self.players[i], self.score_list[i]))
        return out

    def winners(self) -> list[str]:
        """The players with the highest score (the rulebook does not break ties)."""
        best = max(self.score_list)
        return [p for p, s in zip(self.players, self.score_list) if s == best]

    def played_cards(self) -> set[str]:
        return {p.card for p in self.tableau.values()}

    def unplayed_cards(self) -> list[str]:
        """Cards that may still be in a hand or the pile, in edition order.

        With full information: hands and pile. In table mode: every card not on the
        tableau (hidden discards are unknown)."""
        if self.full_information:
            assert self.hands is not None and self.draw_pile is not None
            held = {c for h in self.hands for c in h} | set(self.draw_pile)
            return [c for c in self.edition.card_ids if c in held]
        played = self.played_cards()
        return [c for c in self.edition.card_ids if c not in played]

    def _distinct_by_design(self, cards: Sequence[str]) -> list[str]:
        seen: set[Colours] = set()
        out = []
        for c in cards:
            d = self.edition.card(c).design
            if d not in seen:
                seen.add(d)
                out.append(c)
        return out

    def candidate_cards(self, player: int | None = None) -> list[str]:
        """One card per design the player might lay: their hand with full information,
        every unplayed card in table mode."""
        p = self.current if player is None else player
        if p is None:
            return []
        if self.hands is not None:
            return self._distinct_by_design(self.hands[p])
        return self._distinct_by_design(self.unplayed_cards())

    def legal_placements(self, player: int | None = None) -> Iterator[Place]:
        """Every legal placement (R-BLOXO-3): position x rotation x card.

        One action per distinct outcome: copies of one design in a hand yield one card,
        and a one-colour card one rotation (its four rotations look alike). Positions
        come in (y, x) order, then cards in hand order, then rotations.
        """
        if self.current is None:
            return
        options = [(spec.id, r, look) for spec in map(self.edition.card, self.candidate_cards(player))
                   for r, look in spec.appearances]
        if not options:
            return
        # Index the candidate faces by (quadrant, colour) so each position costs a few
        # set intersections instead of a scan of every face (the benchmark's hot loop).
        index: dict[tuple[int, str], set[int]] = {}
        for k, (_, _, look) in enumerate(options):
            for q in range(4):
                index.setdefault((q, look[q]), set()).add(k)
        empty: set[int] = set()
        looks = self._looks
        for at in frontier(looks):
            fits: set[int] | None = None
            for need in requirements(looks, at):
                got = index.get(need, empty)
                fits = set(got) if fits is None else fits & got
                if not fits:
                    break
            for k in sorted(fits or ()):
                card, r, _ = options[k]
                yield Place(card, at, r)

    def has_legal_placement(self, player: int | None = None) -> bool:
        return next(self.legal_placements(player), None) is not None

    def redraw_available(self) -> bool:
        """A one-colour start card may be returned once, before the first turn (R-BLOXO-7)."""
        if self.redraw_used or self.turns or self.current is None or len(self.tableau) != 1:
            return False
        start = self.tableau.get((0, 0))
        if start is None or self.edition.card(start.card).kind is not CardKind.ONE:
            return False
        return self.pile_count > 0

    def legal_actions(self) -> Iterator[Action]:
        """Redraw (when available), every legal placement, then passes.

        Passing is always allowed (R-BLOXO-5, by choice too). With full information one
        pass per distinct design in the hand; in table mode a single ``Pass()``.
        """
        if self.current is None:
            return
        if self.redraw_available():
            yield Redraw()
        yield from self.legal_placements()
        if self.hands is not None:
            for c in self._distinct_by_design(self.hands[self.current]):
                yield Pass(c)
        else:
            yield Pass()

    def points_for(self, action: Place) -> int:
        """Points ``action`` would score (R-BLOXO-4); checks legality first."""
        spec, seen = self._check_place(action)
        looks = dict(self._looks)
        looks[action.at] = seen
        return placement_points(looks, action.at)

    # ----------------------------------------------------------------- checks

    def check(self, action: Action) -> None:
        """Raise :class:`IllegalAction` if ``action`` is illegal now; change nothing."""
        if isinstance(action, Place):
            self._check_place(action)
        elif isinstance(action, Pass):
            self._check_pass(action)
        elif isinstance(action, Redraw):
            self._check_redraw(action)
        else:
            raise TypeError(f"not a Bloxo action: {action!r}")

    def _check_running(self) -> int:
        if self.current is None:
            raise IllegalAction("R-BLOXO-6", f"the game has ended: {self.end_reason}")
        return self.current

    def _check_card_available(self, card: Any, player: int, verb: str) -> None:
        if not isinstance(card, str) or not self.edition.has_card(card):
            raise IllegalAction("R-BLOXO-1", f"the edition has no card {card!r}")
        if self.hands is not None:
            if card not in self.hands[player]:
                # No ruling names it; the rulebook's turn is played from the hand dealt
                # under R-BLOXO-7.
                raise IllegalAction("R-BLOXO-7", f"{self.players[player]} cannot {verb} {card}: "
                                    "it is not in their hand")
        else:
            if card in self.played_cards():
                raise IllegalAction("R-BLOXO-1", f"card {card} is already on the table")

    def _check_place(self, action: Place) -> tuple[Any, Colours]:
        player = self._check_running()
        at = action.at
        if not (isinstance(at, tuple) and len(at) == 2 and _is_int(at[0]) and _is_int(at[1])):
            raise IllegalAction("R-BLOXO-2", f"cards lie on the card grid, no staggering: position {at!r} "
                                "is not a pair of whole numbers")
        if not (_is_int(action.rotation) and 0 <= action.rotation <= 3):
            raise IllegalAction("R-BLOXO-2", f"rotation {action.rotation!r} is not 0..3 quarter turns")
        self._check_card_available(action.card, player, "place")
        if at in self.tableau:
            raise IllegalAction("R-BLOXO-3", f"position {list(at)} already holds card {self.tableau[at].card}")
        if not touches(self._looks, at):
            raise IllegalAction("R-BLOXO-3", f"position {list(at)} is not orthogonally next to any card")
        spec = self.edition.card(action.card)
        seen = spec.seen(action.rotation)
        conflicts = edge_conflicts(self._looks, at, seen)
        if conflicts:
            raise IllegalAction("R-BLOXO-3", f"card {action.card} at {list(at)} rotation {action.rotation} "
                                "does not match: " + "; ".join(c.sentence() for c in conflicts))
        return spec, seen

    def _check_pass(self, action: Pass) -> None:
        player = self._check_running()
        if self.hands is not None:
            if action.forced is not None:
                raise IllegalAction("R-BLOXO-5", "with full information the engine decides whether a pass "
                                    "was forced; leave 'forced' unset")
            self._check_card_available(action.card, player, "pass with")
        elif action.card is not None:
            self._check_card_available(action.card, player, "pass with")
        if action.forced is not None and not isinstance(action.forced, bool):
            raise IllegalAction("R-BLOXO-5", f"'forced' must be true or false, got {action.forced!r}")

    def _check_redraw(self, action: Redraw) -> str:
        self._check_running()
        if not self.redraw_available():
            start = self.tableau.get((0, 0))
            if self.redraw_used:
                why = "the start card has already been redrawn once"
            elif self.turns or len(self.tableau) != 1:
                why = "the start card can only be redrawn before the first turn"
            elif start is not None and self.edition.card(start.card).kind is not CardKind.ONE:
                why = f"start card {start.card} is not a single colour"
            else:
                why = "the draw pile is empty"
            raise IllegalAction("R-BLOXO-7", why)
        if not (_is_int(action.rotation) and 0 <= action.rotation <= 3):
            raise IllegalAction("R-BLOXO-2", f"rotation {action.rotation!r} is not 0..3 quarter turns")
        if self.draw_pile is not None:
            top = self.draw_pile[0]
            if action.card is not None and action.card != top:
                raise IllegalAction("R-BLOXO-7", f"the new start card is the top of the pile, {top}, "
                                    f"not {action.card}")
            return top
        card = action.card
        if not isinstance(card, str) or not self.edition.has_card(card):
            raise IllegalAction("R-BLOXO-1", f"the edition has no card {card!r}")
        if card in self.played_cards():
            raise IllegalAction("R-BLOXO-7", f"card {card} is the start card being returned")
        return card

    # ----------------------------------------------------------------- changes

    def apply_action(self, action: Action) -> int:
        """Apply a legal action and return the points it scored (a pass: minus the
        penalty; a redraw: 0). An illegal action raises :class:`IllegalAction` and
        leaves the state exactly as it was."""
        if isinstance(action, Place):
            spec, seen = self._check_place(action)
            player = self.current
            assert player is not None
            self._history.append(self._snapshot())
            self._put(action.at, action.card, action.rotation)
            points = placement_points(self._looks, action.at)
            self.score_list[player] += points
            self._leave_hand(player, action.card)
            self.stuck.clear()
            self.log.append(Record(self.players[player], action, points))
            self.turns += 1
            self._advance(player)
            return points
        if isinstance(action, Pass):
            self._check_pass(action)
            player = self.current
            assert player is not None
            forced = (not self.has_legal_placement(player)) if self.hands is not None else bool(action.forced)
            self._history.append(self._snapshot())
            penalty = self.edition.pass_penalty
            self.score_list[player] -= penalty
            self._leave_hand(player, action.card)
            self.out_count += 1
            if self.out_of_game is not None and action.card is not None:
                self.out_of_game.append(action.card)
            # R-BLOXO-6: only turns in which the player could not place count toward
            # the full round that ends the game.
            if forced:
                self.stuck.add(player)
            else:
                self.stuck.clear()
            self.log.append(Record(self.players[player], action, -penalty, forced))
            self.turns += 1
            self._advance(player)
            return -penalty
        if isinstance(action, Redraw):
            new = self._check_redraw(action)
            self._history.append(self._snapshot())
            old = self.tableau[(0, 0)].card
            del self.tableau[(0, 0)]
            del self._looks[(0, 0)]
            if self.draw_pile is not None:
                self.draw_pile.pop(0)
                # The rulebook says "back in the deck"; the bottom keeps the redraw free of
                # randomness inside the engine.
                self.draw_pile.append(old)
            self._put((0, 0), new, action.rotation)
            self.redraw_used = True
            self.log.append(Record(self.players[self.current or 0], Redraw(new, action.rotation), 0))
            return 0
        raise TypeError(f"not a Bloxo action: {action!r}")

    def undo(self) -> None:
        """Take back the last applied action (IndexError when there is none)."""
        self._restore(self._history.pop())

    def clone(self) -> BloxoState:
        other = BloxoState(self.game)
        other._restore(self._snapshot())
        other._history = list(self._history)
        return other

    def _put(self, at: Pos, card: str, rotation: int) -> None:
        seen = self.edition.card(card).seen(rotation)
        self.tableau[at] = Placed(card, rotation, seen)
        self._looks[at] = seen

    def _leave_hand(self, player: int, card: str | None) -> None:
        if self.hands is not None:
            self.hands[player].remove(card)  # type: ignore[arg-type]
        self.hand_counts[player] -= 1
        if self.pile_count > 0:
            self.pile_count -= 1
            self.hand_counts[player] += 1
            if self.draw_pile is not None and self.hands is not None:
                self.hands[player].append(self.draw_pile.pop(0))

    def _advance(self, player: int) -> None:
        n = len(self.players)
        active = {i for i in range(n) if self.hand_counts[i] > 0}
        if not active:
            self.current, self.end_reason = None, END_ALL_PLAYED
            return
        if self.stuck and active <= self.stuck:
            self.current, self.end_reason = None, END_BLOCKED
            return
        for k in range(1, n + 1):
            j = (player + k) % n
            if j in active:
                self.current = j
                return

    def _snapshot(self) -> tuple[Any, ...]:
        return (
            dict(self.tableau), dict(self._looks),
            None if self.hands is None else [list(h) for h in self.hands], list(self.hand_counts),
            None if self.draw_pile is None else list(self.draw_pile), self.pile_count,
            None if self.out_of_game is None else list(self.out_of_game), self.out_count,
            list(self.score_list), self.current, self.turns, self.redraw_used, set(self.stuck),
            self.end_reason, list(self.log),
        )

    def _restore(self, snap: tuple[Any, ...]) -> None:
        (tableau, looks, hands, counts, pile, pile_count, out, out_count, scores, current, turns,
         redraw_used, stuck, end_reason, log) = snap
        self.tableau, self._looks = dict(tableau), dict(looks)
        self.hands = None if hands is None else [list(h) for h in hands]
        self.hand_counts = list(counts)
        self.draw_pile = None if pile is None else list(pile)
        self.pile_count = pile_count
        self.out_of_game = None if out is None else list(out)
        self.out_count = out_count
        self.score_list = list(scores)
        self.current, self.turns, self.redraw_used = current, turns, redraw_used
        self.stuck, self.end_reason, self.log = set(stuck), end_reason, list(log)

    # ----------------------------------------------------------------- JSON

    def observation_state(self) -> dict[str, Any]:
        """The tableau exactly as the ``bloxo`` observation state of observation.md."""
        return {"cards": [{"at": list(at), "quadrants": self._quadrants_json(p.seen)}
                          for at, p in self.tableau.items()]}

    def _quadrants_json(self, seen: Colours) -> list[list[str]]:
        return [[c, self.edition.colour(c).shape] for c in seen]

    def to_json(self) -> dict[str, Any]:
        """The whole state as JSON. ``cards`` extends the observation's card objects with
        the card id and rotation; hands, pile and discards are null in table mode."""
        names = self.players
        return {
            "game": "bloxo",
            "players": list(names),
            "cards": [{"at": list(at), "quadrants": self._quadrants_json(p.seen), "card": p.card,
                       "rotation": p.rotation} for at, p in self.tableau.items()],
            "hands": None if self.hands is None else {n: list(h) for n, h in zip(names, self.hands)},
            "hand_counts": dict(zip(names, self.hand_counts)),
            "draw_pile": None if self.draw_pile is None else list(self.draw_pile),
            "pile_count": self.pile_count,
            "out_of_game": None if self.out_of_game is None else list(self.out_of_game),
            "out_count": self.out_count,
            "scores": self.scores(),
            "turn": self.current_player(),
            "turns": self.turns,
            "redraw_used": self.redraw_used,
            "stuck": [names[i] for i in sorted(self.stuck)],
            "end": self.end_reason,
            "log": [r.to_json() for r in self.log],
        }

    @classmethod
    def from_json(cls, game: BloxoGame, data: Mapping[str, Any]) -> BloxoState:
        """Rebuild a state written by :meth:`to_json` (ValueError when inconsistent).

        The undo history is not part of the JSON."""
        try:
            return cls._from_json(game, data)
        except (KeyError, TypeError, AttributeError, IndexError) as exc:
            raise ValueError(f"malformed Bloxo state: {exc!r}") from exc

    @classmethod
    def _from_json(cls, game: BloxoGame, data: Mapping[str, Any]) -> BloxoState:
        ed = game.edition
        if data.get("game") != "bloxo" or list(data["players"]) != list(game.players):
            raise ValueError("state is not for this Bloxo game (game or players differ)")
        names = list(game.players)
        index = {n: i for i, n in enumerate(names)}
        state = cls(game)
        for entry in data["cards"]:
            at = tuple(entry["at"])
            card, rot = entry["card"], entry["rotation"]
            if not (len(at) == 2 and all(_is_int(v) for v in at)) or not ed.has_card(card) \
                    or not (_is_int(rot) and 0 <= rot <= 3) or at in state.tableau:
                raise ValueError(f"bad tableau entry {entry!r}")
            state._put(at, card, rot)  # type: ignore[arg-type]
            if [q[0] for q in entry["quadrants"]] != list(state.tableau[at].seen):  # type: ignore[index]
                raise ValueError(f"quadrants of {entry!r} do not match card {card} rotation {rot}")
        if (0, 0) not in state.tableau:
            raise ValueError("the start card must be at [0, 0]")
        state.hand_counts = [int(data["hand_counts"][n]) for n in names]
        state.pile_count = int(data["pile_count"])
        state.out_count = int(data["out_count"])
        if data["hands"] is not None:
            state.hands = [list(data["hands"][n]) for n in names]
            state.draw_pile = list(data["draw_pile"])
            state.out_of_game = list(data["out_of_game"])
            everything = [p.card for p in state.tableau.values()] + state.draw_pile + state.out_of_game
            everything += [c for h in state.hands for c in h]
            if sorted(everything) != sorted(ed.card_ids):
                raise ValueError("with full information every card must be in exactly one place")
            if state.hand_counts != [len(h) for h in state.hands] or state.pile_count != len(state.draw_pile) \
                    or state.out_count != len(state.out_of_game):
                raise ValueError("hand, pile or out-of-game counts disagree with the card lists")
        elif len(state.tableau) + sum(state.hand_counts) + state.pile_count + state.out_count != len(ed.cards):
            raise ValueError("table-mode counts do not add up to the 40 cards")
        state.score_list = [int(data["scores"][n]) for n in names]
        turn = data["turn"]
        state.current = None if turn is None else index[turn]
        state.turns = int(data["turns"])
        state.redraw_used = bool(data["redraw_used"])
        state.stuck = {index[n] for n in data["stuck"]}
        state.end_reason = data["end"]
        state.log = [Record(r["player"], action_from_json(r["action"]), int(r["points"]), bool(r["forced"]))
                     for r in data["log"]]
        return state

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, BloxoState):
            return NotImplemented
        return self.game.players == other.game.players and self.to_json() == other.to_json()

    __hash__ = None  # type: ignore[assignment]

    def __str__(self) -> str:
        lines = []
        if self.tableau:
            xs = [p[0] for p in self.tableau]
            ys = [p[1] for p in self.tableau]
            for y in range(min(ys), max(ys) + 1):
                for row in (0, 1):
                    chars = []
                    for x in range(min(xs), max(xs) + 1):
                        seen = self._looks.get((x, y))
                        if seen is None:
                            chars.append("  ")
                        else:
                            left, right = (seen[0], seen[1]) if row == 0 else (seen[3], seen[2])
                            chars.append(self.edition.colour(left).letter + self.edition.colour(right).letter)
                    lines.append(" ".join(chars).rstrip())
        for i, name in enumerate(self.players):
            held = (" ".join(self.hands[i]) if self.hands is not None else f"{self.hand_counts[i]} cards")
            mark = ">" if i == self.current else " "
            lines.append(f"{mark} {name}: {self.score_list[i]} points; hand {held}")
        lines.append(f"pile {self.pile_count}, out of the game {self.out_count}"
                     + (f"; ended: {self.end_reason}" if self.end_reason else ""))
        return "\n".join(lines)
