"""Blox rules: the game (edition, players) and the state with its legal actions.

Two ways to play (rulings, introduction):

* **full information** (``BloxGame.new_initial_state``): hands, draw and discard piles
  are known and every card is checked;
* **table mode** (``BloxGame.table_state``): the engine sees only the board; hands are
  unknown (``PlayerState.hand is None``), card costs are not checked but *implied*.

The state is mutable through :meth:`BloxState.apply_action` and :meth:`BloxState.undo`
only. Every value it holds (board cells, player records, piles) is immutable, so a
snapshot for undo costs a handful of references.
"""

from __future__ import annotations

import itertools
import random
from collections import Counter
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from engine.blox.actions import (
    Action,
    Build,
    Destroy,
    Exchange,
    Knock,
    Move,
    Place,
)
from engine.blox.board import (
    Cell,
    Figure,
    Pos,
    Side,
    Tower,
    all_entrances,
    between,
    fmt_pos,
    neighbours,
    ray,
)
from engine.blox.edition import BloxEdition, load_edition
from engine.common import IllegalAction


@dataclass(frozen=True)
class PlayerState:
    """What lies in front of one player. ``hand`` is None when unknown (table mode)."""

    color: str
    points: int = 0
    blocks: tuple[tuple[str, int], ...] = ()
    hand: tuple[str, ...] | None = None
    joker_up: bool = True

    @property
    def block_counts(self) -> Counter[str]:
        return Counter(dict(self.blocks))

    @property
    def block_total(self) -> int:
        return sum(n for _, n in self.blocks)


class BloxGame:
    """A Blox game definition: the edition and the players in turn order.

    ``players`` are figure colours from the edition, first player (holder of the phase
    track) first. With two players the unused colours' figures are neutral (R-BLOX-13).
    """

    def __init__(self, players: Sequence[str], edition: BloxEdition | None = None) -> None:
        self.edition = edition or load_edition()
        players = tuple(players)
        if not 2 <= len(players) <= 4:
            raise ValueError(f"Blox is played by 2 to 4 players, not {len(players)}")
        unknown = [p for p in players if p not in self.edition.player_colors]
        if unknown:
            raise ValueError(
                f"unknown player colour(s) {unknown}; the edition's figures are {list(self.edition.player_colors)}"
            )
        if len(set(players)) != len(players):
            raise ValueError(f"player colours must be distinct: {list(players)}")
        self.players = players
        self.size = self.edition.size
        self.neutral_colors: tuple[str, ...] = (
            tuple(c for c in self.edition.player_colors if c not in players) if len(players) == 2 else ()
        )
        self.start_phase = self.edition.two_player.start_phase if len(players) == 2 else 1

    def __repr__(self) -> str:
        return f"BloxGame(players={list(self.players)!r}, edition={self.edition.name!r})"

    def setup_layout(self) -> tuple[dict[Pos, int], dict[Pos, str]]:
        """Set-up tower heights and neutral figures by space (R-BLOX-13 for two players)."""
        ed = self.edition
        towers = {p: ed.marks[p[0]][p[1]] for p in itertools.product(range(ed.size), repeat=2) if ed.marks[p[0]][p[1]]}
        neutrals: dict[Pos, str] = {}
        if len(self.players) == 2:
            wanted = Counter(ed.two_player.extra_two_towers_on)
            neutral_cycle = itertools.cycle(self.neutral_colors)
            for pos in ed.marked_spaces(1):
                color = ed.color_at(pos)
                if wanted[color] > 0:
                    wanted[color] -= 1
                    towers[pos] = 2
                else:
                    del towers[pos]
                    neutrals[pos] = next(neutral_cycle)
        return towers, neutrals

    def block_supply(self) -> Counter[str]:
        """Blocks in play: the edition's, less those that go back in the box (R-BLOX-13)."""
        removed = self.edition.two_player.blocks_removed_per_color if len(self.players) == 2 else 0
        return Counter({c: self.edition.blocks_per_color - removed for c in self.edition.colors})

    def new_initial_state(self, rng: random.Random) -> BloxState:
        """A full-information set-up: towers of random block colours, shuffled deck, hands dealt."""
        ed = self.edition
        towers, neutrals = self.setup_layout()
        pool = list(self.block_supply().elements())
        rng.shuffle(pool)
        board: list[Cell] = [None] * (ed.size * ed.size)
        for pos in sorted(towers):
            h = towers[pos]
            board[pos[0] * ed.size + pos[1]] = Tower(tuple(pool[:h]))
            del pool[:h]
        for pos, color in neutrals.items():
            board[pos[0] * ed.size + pos[1]] = Figure(color)
        deck = [c for c in ed.colors for _ in range(ed.cards_per_color)]
        rng.shuffle(deck)
        players = []
        for color in self.players:
            hand = tuple(deck[-ed.hand_size :])
            del deck[-ed.hand_size :]
            players.append(PlayerState(color, hand=_sorted_cards(ed, hand)))
        state = BloxState(
            game=self,
            board=tuple(board),
            players=tuple(players),
            phase=self.start_phase,
            draw_pile=tuple(deck),
            discard_pile=(),
            seed=rng.getrandbits(32),
        )
        state.phase = state._phase_after(state.phase)
        return state

    def table_state(self, cells: Any, *, phase: int | None = None) -> BloxState:
        """A table-mode state from an observed board (the ``cells`` of a ``blox`` observation).

        Hands and piles are unknown. The phase is the start phase advanced by R-BLOX-10
        unless given.
        """
        board = parse_cells(self.edition, cells)
        state = BloxState(
            game=self,
            board=board,
            players=tuple(PlayerState(c, hand=None) for c in self.players),
            phase=phase or self.start_phase,
        )
        if phase is None:
            state.phase = state._phase_after(state.phase)
        return state


def _sorted_cards(ed: BloxEdition, cards: Iterable[str]) -> tuple[str, ...]:
    order = {c: i for i, c in enumerate(ed.colors)}
    return tuple(sorted(cards, key=lambda c: order.get(c, len(order))))


def parse_cells(ed: BloxEdition, cells: Any) -> tuple[Cell, ...]:
    """Board cells from observation JSON; raises ValueError naming the bad cell."""
    size = ed.size
    if not isinstance(cells, list) or len(cells) != size or any(
        not isinstance(row, list) or len(row) != size for row in cells
    ):
        raise ValueError(f"cells must be {size} rows of {size} cells")
    out: list[Cell] = []
    for r, row in enumerate(cells):
        for c, cell in enumerate(row):
            out.append(parse_cell(cell, (r, c)))
    return tuple(out)


def parse_cell(cell: Any, pos: Pos) -> Cell:
    if cell is None:
        return None
    if not isinstance(cell, dict):
        raise ValueError(f"cell {fmt_pos(pos)} must be null or an object, not {cell!r}")
    if "figure" in cell and "tower" in cell:
        raise ValueError(f"cell {fmt_pos(pos)} holds both a figure and a tower")
    if "figure" in cell:
        if not isinstance(cell["figure"], str):
            raise ValueError(f"cell {fmt_pos(pos)}: figure colour must be a name")
        return Figure(cell["figure"])
    if "tower" in cell:
        blocks = cell["tower"]
        if not isinstance(blocks, list) or not blocks or not all(isinstance(b, str) for b in blocks):
            raise ValueError(f"cell {fmt_pos(pos)}: a tower lists 1 or more block colours")
        return Tower(tuple(blocks))
    raise ValueError(f"cell {fmt_pos(pos)}: expected 'figure' or 'tower', got {sorted(cell)}")


def cell_json(cell: Cell) -> Any:
    if cell is None:
        return None
    if isinstance(cell, Figure):
        return {"figure": cell.color}
    return {"tower": list(cell.blocks)}


@dataclass(frozen=True)
class _Effect:
    """What a board action changes, computed before anything is mutated."""

    board: tuple[Cell, ...]
    points: int = 0
    blocks_gained: tuple[str, ...] = ()
    blocks_spent: tuple[str, ...] = ()


class BloxState:
    """The state of a Blox game: board, players, piles, phase and turn."""

    __slots__ = (
        "game",
        "board",
        "players",
        "phase",
        "turn",
        "end_at",
        "draw_pile",
        "discard_pile",
        "seed",
        "reshuffles",
        "_undo",
    )

    def __init__(
        self,
        game: BloxGame,
        board: tuple[Cell, ...],
        players: tuple[PlayerState, ...],
        phase: int,
        turn: int = 0,
        end_at: int | None = None,
        draw_pile: tuple[str, ...] | None = None,
        discard_pile: tuple[str, ...] | None = None,
        seed: int = 0,
        reshuffles: int = 0,
    ) -> None:
        self.game = game
        self.board = board
        self.players = players
        self.phase = phase
        self.turn = turn
        #: the turn count at which the game ends (R-BLOX-11), once the end is triggered
        self.end_at = end_at
        self.draw_pile = draw_pile
        self.discard_pile = discard_pile
        #: reshuffles are drawn from this seed so the state stays a pure value (no live RNG)
        self.seed = seed
        self.reshuffles = reshuffles
        self._undo: list[tuple[Action, tuple[Any, ...]]] = []

    # ------------------------------------------------------------------ basics

    @property
    def edition(self) -> BloxEdition:
        return self.game.edition

    @property
    def full_information(self) -> bool:
        return self.draw_pile is not None

    @property
    def current_index(self) -> int:
        return self.turn % len(self.players)

    @property
    def current(self) -> PlayerState:
        return self.players[self.current_index]

    @property
    def round(self) -> int:
        """1-based round number; a round is one turn of every player from the first."""
        return self.turn // len(self.players) + 1

    def cell(self, pos: Pos) -> Cell:
        return self.board[pos[0] * self.game.size + pos[1]]

    def space_color(self, pos: Pos) -> str:
        return self.edition.board[pos[0]][pos[1]]

    def positions(self) -> Iterator[Pos]:
        size = self.edition.size
        return ((r, c) for r in range(size) for c in range(size))

    def towers(self) -> Iterator[tuple[Pos, Tower]]:
        size = self.game.size
        for i, cell in enumerate(self.board):
            if type(cell) is Tower:
                yield divmod(i, size), cell

    def figures(self, color: str) -> list[Pos]:
        size = self.game.size
        return [divmod(i, size) for i, cell in enumerate(self.board) if type(cell) is Figure and cell.color == color]

    def figures_off_board(self, color: str) -> int:
        return self.edition.figures_per_player - len(self.figures(color))

    def player(self, color: str) -> PlayerState:
        for p in self.players:
            if p.color == color:
                return p
        raise KeyError(color)

    def is_terminal(self) -> bool:
        return self.end_at is not None and self.turn >= self.end_at

    def scores(self) -> dict[str, int]:
        return {p.color: p.points for p in self.players}

    def ranking(self) -> list[tuple[int, PlayerState]]:
        """Players best first with their rank; equal points and blocks share a rank (R-BLOX-12)."""
        ordered = sorted(self.players, key=lambda p: (-p.points, -p.block_total))
        out: list[tuple[int, PlayerState]] = []
        for i, p in enumerate(ordered):
            prev = out[-1] if out else None
            same = prev is not None and (prev[1].points, prev[1].block_total) == (p.points, p.block_total)
            out.append((prev[0] if same else i + 1, p))
        return out

    def winners(self) -> list[str]:
        return [p.color for rank, p in self.ranking() if rank == 1]

    def tower_count(self, height: int) -> int:
        return sum(1 for cell in self.board if type(cell) is Tower and len(cell.blocks) == height)

    # ------------------------------------------------------------------ copies and undo

    def _snapshot(self) -> tuple[Any, ...]:
        return (
            self.board,
            self.players,
            self.phase,
            self.turn,
            self.end_at,
            self.draw_pile,
            self.discard_pile,
            self.reshuffles,
        )

    def _restore(self, snap: tuple[Any, ...]) -> None:
        (
            self.board,
            self.players,
            self.phase,
            self.turn,
            self.end_at,
            self.draw_pile,
            self.discard_pile,
            self.reshuffles,
        ) = snap

    def clone(self) -> BloxState:
        """An independent copy, undo history included."""
        other = BloxState(self.game, self.board, self.players, self.phase)
        other._restore(self._snapshot())
        other.seed = self.seed
        other._undo = list(self._undo)
        return other

    def undo(self) -> Action:
        """Take back the last action and return it."""
        if not self._undo:
            raise IndexError("nothing to undo")
        action, snap = self._undo.pop()
        self._restore(snap)
        return action

    @property
    def history(self) -> list[Action]:
        return [a for a, _ in self._undo]

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, BloxState):
            return NotImplemented
        return (
            self.game.players == other.game.players
            and self.game.edition == other.game.edition
            and self._snapshot() == other._snapshot()
            and self.seed == other.seed
        )

    __hash__ = None  # type: ignore[assignment]

    # ------------------------------------------------------------------ legal actions

    def legal_actions(self) -> Iterator[Action]:
        """Every legal action of the player to move.

        In full information each payment variant is its own action (which cards, or
        the Joker for which colour). In table mode, board actions are listed once each
        with the cards they imply; Exchange (invisible to the camera) is not listed.
        Build lists each block combination once, bottom to top in edition colour order.
        """
        if self.is_terminal():
            return
        me = self.current
        yield from self._legal_places(me)
        yield from self._legal_moves(me)
        yield from self._legal_destroys(me)
        yield from self._legal_knocks(me)
        yield from self._legal_builds(me)
        yield from self._legal_exchanges(me)

    def _first_reachable(self, path: Iterable[Pos]) -> dict[str, Pos]:
        """For a straight trip along ``path``: the space each colour's card leads to (R-BLOX-2)."""
        found: dict[str, Pos] = {}
        seen: set[str] = set()
        for pos in path:
            color = self.space_color(pos)
            occupied = self.cell(pos) is not None
            if color not in seen:
                seen.add(color)
                if not occupied:
                    found[color] = pos
            if occupied:
                break
        return found

    def _legal_places(self, me: PlayerState) -> Iterator[Action]:
        if self.figures_off_board(me.color) <= 0:
            return
        size = self.edition.size
        pay = self._single_card_payments(me)
        for entrance in all_entrances(size):
            for color, to in self._first_reachable(entrance.path(size)).items():
                for cards, joker in pay[color]:
                    yield Place(cards, joker, entrance, to)

    def _legal_moves(self, me: PlayerState) -> Iterator[Action]:
        size = self.edition.size
        pay = self._single_card_payments(me)
        for frm in self.figures(me.color):
            for side in Side:
                for color, to in self._first_reachable(ray(size, frm, side)).items():
                    for cards, joker in pay[color]:
                        yield Move(cards, joker, frm, to)

    def _single_card_payments(self, me: PlayerState) -> dict[str, list[tuple[tuple[str, ...], str | None]]]:
        return {color: self._payments(me, Counter({color: 1})) for color in self.edition.colors}

    def _line_targets(self, frm: Pos) -> Iterator[tuple[Pos, Cell, set[str]]]:
        """The first occupied space in each direction and the colours crossed to reach it."""
        size = self.edition.size
        for side in Side:
            crossed: set[str] = set()
            for pos in ray(size, frm, side):
                cell = self.cell(pos)
                if cell is not None:
                    yield pos, cell, crossed
                    break
                crossed.add(self.space_color(pos))

    def _legal_destroys(self, me: PlayerState) -> Iterator[Action]:
        if me.block_total >= 7:  # R-BLOX-5
            return
        for frm in self.figures(me.color):
            for to, cell, crossed in self._line_targets(frm):
                if isinstance(cell, Tower) and self._destroyable(cell.height) and not crossed & set(cell.blocks):
                    for cards, joker in self._payments(me, Counter(cell.blocks)):
                        yield Destroy(cards, joker, frm, to)

    def _legal_knocks(self, me: PlayerState) -> Iterator[Action]:
        for frm in self.figures(me.color):
            for to, cell, crossed in self._line_targets(frm):
                if isinstance(cell, Figure) and cell.color != me.color:
                    color = self.space_color(to)
                    if color in crossed:
                        continue
                    if me.hand is None:
                        yield Knock((color,) * 3, None, frm, to)
                        continue
                    have = me.hand.count(color)
                    for n in range(3, have + 1):
                        yield Knock((color,) * n, None, frm, to)
                    if me.joker_up:
                        for n in range(2, have + 1):
                            yield Knock((color,) * n, color, frm, to)

    def _legal_builds(self, me: PlayerState) -> Iterator[Action]:
        height = self.phase + 1  # R-BLOX-4
        if height > self.edition.max_tower_height or me.block_total < height:
            return
        spots = self.figures(me.color)
        if not spots:
            return
        for blocks in _sub_multisets(self.edition.colors, me.block_counts, height):
            payments = self._payments(me, Counter(blocks))
            if not payments:
                continue
            for at in spots:
                if self._reachable_after_build(at):
                    for cards, joker in payments:
                        yield Build(cards, joker, at, blocks)

    def _legal_exchanges(self, me: PlayerState) -> Iterator[Action]:
        if me.hand is None or not me.hand:
            return
        for cards in _sub_multisets(self.edition.colors, Counter(me.hand), None):
            if cards:
                yield Exchange(cards, False)
                if not me.joker_up:
                    yield Exchange(cards, True)

    def _payments(self, me: PlayerState, need: Counter[str]) -> list[tuple[tuple[str, ...], str | None]]:
        """Ways to pay ``need``: all regular cards, or the Joker standing for one colour (R-BLOX-9)."""
        ed = self.edition
        if me.hand is None:
            return [(_sorted_cards(ed, need.elements()), None)]
        hand = Counter(me.hand)
        out: list[tuple[tuple[str, ...], str | None]] = []
        if all(hand[c] >= n for c, n in need.items()):
            out.append((_sorted_cards(ed, need.elements()), None))
        if me.joker_up:
            for color in _sorted_cards(ed, need):
                rest = need - Counter({color: 1})
                if all(hand[c] >= n for c, n in rest.items()):
                    out.append((_sorted_cards(ed, rest.elements()), color))
        return out

    def _destroyable(self, height: int) -> bool:
        # R-BLOX-4: phase 1 exactly 1; phase p destroys 1..p; never a full-height tower.
        if height >= self.edition.max_tower_height:
            return False
        return height == 1 if self.phase == 1 else 1 <= height <= self.phase

    def _reachable_after_build(self, at: Pos, board: tuple[Cell, ...] | None = None) -> bool:
        """R-BLOX-7 with a tower on ``at``: every tower below full height keeps a tower-free neighbour."""
        return not self._unreachable_towers(at, board)

    def _unreachable_towers(self, at: Pos, board: tuple[Cell, ...] | None = None) -> list[Pos]:
        size = self.edition.size
        cells = board or self.board
        full = self.edition.max_tower_height

        def is_tower(p: Pos) -> bool:
            return p == at or isinstance(cells[p[0] * size + p[1]], Tower)

        def height(p: Pos) -> int:
            cell = cells[p[0] * size + p[1]]
            return cell.height if isinstance(cell, Tower) else 0

        # Only the new tower and its neighbours can lose their last free neighbour.
        check = [at, *neighbours(size, at)]
        bad = []
        for p in check:
            if not is_tower(p):
                continue
            if p != at and height(p) >= full:
                continue
            if p == at and self.phase + 1 >= full:
                continue
            if all(is_tower(n) for n in neighbours(size, p)):
                bad.append(p)
        return bad

    # ------------------------------------------------------------------ applying actions

    def apply_action(self, action: Action) -> None:
        """Carry out ``action`` for the player to move, then refill, phase and end checks.

        Raises :class:`IllegalAction` naming the ruling, with the state unchanged.
        """
        if self.is_terminal():
            raise IllegalAction("R-BLOX-11", "the game is over")
        me = self.current
        if isinstance(action, Exchange):
            effect = _Effect(self.board)
            self._check_exchange(me, action)
        else:
            effect = self.board_effect(action)
            self._check_payment(me, action)
        snap = self._snapshot()
        self._perform(me, action, effect)
        self._undo.append((action, snap))

    def board_effect(self, action: Action) -> _Effect:
        """Check a board action against every rule the board decides; return its effect.

        Cards are not looked at (see :meth:`_check_payment`), which is what table mode
        needs: the camera sees the board, not the hands.
        """
        me = self.current
        if isinstance(action, Place):
            return self._effect_place(me, action)
        if isinstance(action, Move):
            return self._effect_move(me, action)
        if isinstance(action, Destroy):
            return self._effect_destroy(me, action)
        if isinstance(action, Build):
            return self._effect_build(me, action)
        if isinstance(action, Knock):
            return self._effect_knock(me, action)
        raise IllegalAction("R-BLOX-15", f"{type(action).__name__} is not a board action")

    def _with(self, changes: dict[Pos, Cell]) -> tuple[Cell, ...]:
        size = self.edition.size
        board = list(self.board)
        for (r, c), cell in changes.items():
            board[r * size + c] = cell
        return tuple(board)

    def _check_on_board(self, *positions: Pos) -> None:
        size = self.edition.size
        for p in positions:
            if not (0 <= p[0] < size and 0 <= p[1] < size):
                raise IllegalAction("R-BLOX-1", f"{fmt_pos(p)} is not a space of the {size}x{size} board")

    def _own_figure(self, me: PlayerState, frm: Pos, rule: str) -> None:
        cell = self.cell(frm)
        if cell is None or isinstance(cell, Tower):
            raise IllegalAction(rule, f"there is no figure on {fmt_pos(frm)}")
        if cell.color != me.color:
            raise IllegalAction(
                "R-BLOX-16", f"it is {me.color}'s turn and the figure on {fmt_pos(frm)} is {cell.color}"
            )

    def _trip_error(self, path: list[Pos], to: Pos, color: str, start: str) -> str | None:
        """Why a straight trip along ``path`` with a ``color`` card does not end on ``to`` (R-BLOX-2)."""
        for pos in path:
            cell = self.cell(pos)
            if self.space_color(pos) == color:
                if cell is not None:
                    return f"the first {color} space {start}, {fmt_pos(pos)}, is occupied"
                if pos != to:
                    return (
                        f"the figure would stop on {fmt_pos(pos)}, the first {color} space {start}, "
                        f"before reaching {fmt_pos(to)}"
                    )
                return None
            if cell is not None:
                what = "tower" if isinstance(cell, Tower) else "figure"
                return f"a {what} on {fmt_pos(pos)} blocks the way to {fmt_pos(to)}"
        return f"there is no {color} space {start}"

    def _effect_place(self, me: PlayerState, a: Place) -> _Effect:
        self._check_on_board(a.to)
        size = self.edition.size
        if not 0 <= a.entrance.index < size:
            raise IllegalAction("R-BLOX-1", f"there is no entrance {a.entrance}")
        if self.figures_off_board(me.color) <= 0:
            raise IllegalAction("R-BLOX-16", f"{me.color} has no figure off the board to place")
        path = a.entrance.path(size)
        if a.to not in path:
            raise IllegalAction("R-BLOX-2", f"{fmt_pos(a.to)} is not in the line of entrance {a.entrance}")
        color = self.space_color(a.to)
        why = self._trip_error(path, a.to, color, f"from entrance {a.entrance}")
        if why:
            raise IllegalAction("R-BLOX-2", why)
        return _Effect(self._with({a.to: Figure(me.color)}))

    def _effect_move(self, me: PlayerState, a: Move) -> _Effect:
        self._check_on_board(a.frm, a.to)
        self._own_figure(me, a.frm, "R-BLOX-2")
        line = between(a.frm, a.to)
        if line is None:
            raise IllegalAction(
                "R-BLOX-2", f"figures move in a straight line; {fmt_pos(a.to)} is not in line with {fmt_pos(a.frm)}"
            )
        color = self.space_color(a.to)
        why = self._trip_error([*line, a.to], a.to, color, f"from {fmt_pos(a.frm)} in that direction")
        if why:
            raise IllegalAction("R-BLOX-2", why)
        return _Effect(self._with({a.frm: None, a.to: Figure(me.color)}))

    def _effect_destroy(self, me: PlayerState, a: Destroy) -> _Effect:
        self._check_on_board(a.frm, a.to)
        self._own_figure(me, a.frm, "R-BLOX-3")
        tower = self.cell(a.to)
        if not isinstance(tower, Tower):
            raise IllegalAction("R-BLOX-3", f"there is no tower on {fmt_pos(a.to)}")
        if not self._destroyable(tower.height):
            if tower.height >= self.edition.max_tower_height:
                why = f"a {tower.height}-block tower can never be destroyed"
            else:
                allowed = "exactly 1 block" if self.phase == 1 else f"1 to {self.phase} blocks"
                why = f"in phase {self.phase} only towers of {allowed} can be destroyed, this one has {tower.height}"
            raise IllegalAction("R-BLOX-4", why)
        if me.block_total >= 7:
            raise IllegalAction(
                "R-BLOX-5", f"{me.color} has {me.block_total} blocks; with 7 or more a player must build before destroying"
            )
        line = between(a.frm, a.to)
        if line is None:
            raise IllegalAction(
                "R-BLOX-3", f"the figure on {fmt_pos(a.frm)} does not share a row or column with the tower"
            )
        for pos in line:
            cell = self.cell(pos)
            if cell is not None:
                what = "tower" if isinstance(cell, Tower) else "figure"
                raise IllegalAction("R-BLOX-3", f"a {what} on {fmt_pos(pos)} stands between the figure and the tower")
            color = self.space_color(pos)
            if color in tower.blocks:
                raise IllegalAction(
                    "R-BLOX-3",
                    f"the figure passed a {color} space {fmt_pos(pos)} on its way to the tower, "
                    f"which has a {color} block",
                )
        return _Effect(
            self._with({a.frm: None, a.to: Figure(me.color)}),
            points=tower.height,
            blocks_gained=tower.blocks,
        )

    def _effect_build(self, me: PlayerState, a: Build) -> _Effect:
        self._check_on_board(a.at)
        self._own_figure(me, a.at, "R-BLOX-6")
        height = len(a.blocks)
        if height != self.phase + 1:
            raise IllegalAction(
                "R-BLOX-4", f"in phase {self.phase} towers are built of exactly {self.phase + 1} blocks, not {height}"
            )
        unknown = [b for b in a.blocks if b not in self.edition.colors]
        if unknown:
            raise IllegalAction("R-BLOX-14", f"unknown block colour(s) {unknown}")
        missing = Counter(a.blocks) - me.block_counts
        if missing:
            raise IllegalAction(
                "R-BLOX-6",
                f"{me.color} does not have the blocks: missing {_describe_counter(missing)} "
                f"(has {_describe_counter(me.block_counts) or 'none'})",
            )
        board = self._with({a.at: Tower(tuple(a.blocks))})
        cut_off = self._unreachable_towers(a.at, board)
        if cut_off:
            raise IllegalAction(
                "R-BLOX-7",
                "the build would leave the tower(s) on "
                + ", ".join(fmt_pos(p) for p in cut_off)
                + " with no free neighbouring space",
            )
        return _Effect(board, points=height, blocks_spent=tuple(a.blocks))

    def _effect_knock(self, me: PlayerState, a: Knock) -> _Effect:
        self._check_on_board(a.frm, a.to)
        self._own_figure(me, a.frm, "R-BLOX-8")
        target = self.cell(a.to)
        if not isinstance(target, Figure):
            raise IllegalAction("R-BLOX-8", f"there is no figure on {fmt_pos(a.to)} to knock off")
        if target.color == me.color:
            raise IllegalAction("R-BLOX-8", "a player cannot knock off their own figure")
        line = between(a.frm, a.to)
        if line is None:
            raise IllegalAction("R-BLOX-8", f"the figure on {fmt_pos(a.frm)} does not share a row or column with the target")
        color = self.space_color(a.to)
        for pos in line:
            cell = self.cell(pos)
            if cell is not None:
                what = "tower" if isinstance(cell, Tower) else "figure"
                raise IllegalAction("R-BLOX-8", f"a {what} on {fmt_pos(pos)} stands between the two figures")
            if self.space_color(pos) == color:
                raise IllegalAction(
                    "R-BLOX-8",
                    f"the figure passed a {color} space {fmt_pos(pos)} on its way to the figure on a {color} space",
                )
        return _Effect(self._with({a.frm: None, a.to: Figure(me.color)}), points=a.card_count)

    def _required_cards(self, action: Action) -> tuple[str, Counter[str] | None]:
        """The ruling and the exact cards an action needs; None for knock (3 or more of one colour)."""
        if isinstance(action, (Place, Move)):
            return "R-BLOX-2", Counter({self.space_color(action.to): 1})
        if isinstance(action, Destroy):
            tower = self.cell(action.to)
            assert isinstance(tower, Tower)
            return "R-BLOX-3", Counter(tower.blocks)
        if isinstance(action, Build):
            return "R-BLOX-6", Counter(action.blocks)
        return "R-BLOX-8", None

    def _check_payment(self, me: PlayerState, action: Action) -> None:
        rule, need = self._required_cards(action)
        paid = list(action.cards)
        if action.joker is not None:
            paid.append(action.joker)
        if need is None:  # knock off: 3 or more cards of the target space's colour
            color = self.space_color(action.to)
            if len(paid) < 3 or any(c != color for c in paid):
                raise IllegalAction(rule, f"knocking off a figure on a {color} space takes 3 or more {color} cards")
        elif sorted(paid) != sorted(need.elements()):
            raise IllegalAction(
                rule, f"this action costs {_describe_counter(need)}, not {_describe_counter(Counter(paid)) or 'nothing'}"
            )
        if action.joker is not None and not me.joker_up and me.hand is not None:
            raise IllegalAction("R-BLOX-9", f"{me.color}'s Joker is face down; an Exchange turns it face up")
        if me.hand is not None:
            remaining = list(me.hand)
            for card in action.cards:
                if card not in remaining:
                    missing = Counter(action.cards) - Counter(me.hand)
                    raise IllegalAction(rule, f"{me.color} does not hold {_describe_counter(missing)}")
                remaining.remove(card)

    def _check_exchange(self, me: PlayerState, a: Exchange) -> None:
        size = self.edition.hand_size
        if not 1 <= len(a.cards) <= size:
            raise IllegalAction("R-BLOX-9", f"an exchange discards 1 to {size} cards, not {len(a.cards)}")
        # In table mode the Joker's side is not seen, so only full information can refuse this.
        if a.reactivate_joker and me.joker_up and me.hand is not None:
            raise IllegalAction("R-BLOX-9", f"{me.color}'s Joker is already face up")
        if me.hand is not None:
            missing = Counter(a.cards) - Counter(me.hand)
            if missing:
                raise IllegalAction("R-BLOX-9", f"{me.color} does not hold {_describe_counter(missing)}")

    def _perform(self, me: PlayerState, action: Action, effect: _Effect) -> None:
        ed = self.edition
        blocks = me.blocks
        if effect.blocks_gained or effect.blocks_spent:
            counts = dict(me.blocks)
            for b in effect.blocks_gained:
                counts[b] = counts.get(b, 0) + 1
            for b in effect.blocks_spent:
                counts[b] -= 1
            blocks = tuple((c, counts[c]) for c in ed.colors if counts.get(c, 0) > 0)
        joker_up = me.joker_up
        if action.joker is not None:
            joker_up = False
        if isinstance(action, Exchange) and action.reactivate_joker:
            joker_up = True
        hand = me.hand
        if hand is not None:
            remaining = list(hand)
            for card in action.cards:
                remaining.remove(card)
            self.discard_pile = (self.discard_pile or ()) + tuple(action.cards)
            hand = _sorted_cards(ed, self._refill(tuple(remaining)))
        updated = PlayerState(me.color, me.points + effect.points, blocks, hand, joker_up)
        players = list(self.players)
        players[self.current_index] = updated
        self.players = tuple(players)
        self.board = effect.board
        if effect.blocks_gained or effect.blocks_spent:
            # Only destroying and building change the towers, so only they move the phase.
            self.phase = self._phase_after(self.phase)
            if self.end_at is None and self.phase == ed.phases and self.tower_count(ed.phases) <= 1:
                n = len(self.players)
                self.end_at = (self.turn // n + 1) * n  # R-BLOX-11: finish the round
        self.turn += 1

    def _refill(self, hand: tuple[str, ...]) -> tuple[str, ...]:
        """Draw up to the hand size, reshuffling the discards into a new pile when needed."""
        need = self.edition.hand_size - len(hand)
        drawn: list[str] = []
        pile = list(self.draw_pile or ())
        while need > 0:
            if not pile:
                if not self.discard_pile:
                    break
                pile = list(self.discard_pile)
                self.discard_pile = ()
                random.Random(self.seed * 7919 + self.reshuffles).shuffle(pile)
                self.reshuffles += 1
            drawn.append(pile.pop())
            need -= 1
        self.draw_pile = tuple(pile)
        return hand + tuple(drawn)

    def _phase_after(self, phase: int) -> int:
        # R-BLOX-10: advance while at most one tower of the phase's height stands.
        while phase < self.edition.phases and self.tower_count(phase) <= 1:
            phase += 1
        return phase

    # ------------------------------------------------------------------ JSON and text

    def observation_state(self) -> dict[str, Any]:
        """The visible board as the ``blox`` observation state (observation.md)."""
        size = self.edition.size
        return {
            "colors": [list(row) for row in self.edition.board],
            "cells": [[cell_json(self.board[r * size + c]) for c in range(size)] for r in range(size)],
        }

    def to_json(self) -> dict[str, Any]:
        """The ``blox`` observation state plus everything hidden; :meth:`from_json` inverts it."""
        out = self.observation_state()
        out.update(
            {
                "players": [p.color for p in self.players],
                "phase": self.phase,
                "turn": self.turn,
                "current": self.current.color,
                "end_at": self.end_at,
                "scores": self.scores(),
                "blocks": {p.color: dict(p.blocks) for p in self.players},
                "jokers": {p.color: p.joker_up for p in self.players},
                "hands": None if self.players[0].hand is None else {p.color: list(p.hand or ()) for p in self.players},
                "draw": None if self.draw_pile is None else list(self.draw_pile),
                "discard": None if self.discard_pile is None else list(self.discard_pile),
                "seed": self.seed,
                "reshuffles": self.reshuffles,
            }
        )
        return out

    @classmethod
    def from_json(cls, data: dict[str, Any], edition: BloxEdition | None = None) -> BloxState:
        """Rebuild a state from :meth:`to_json` output; raises ValueError naming what is wrong."""
        try:
            edition = edition or load_edition()
            if "colors" in data and [list(r) for r in edition.board] != data["colors"]:
                edition = edition.with_board(data["colors"])
            game = BloxGame(data["players"], edition)
            hands = data.get("hands")
            players = tuple(
                PlayerState(
                    color=c,
                    points=int(data["scores"][c]),
                    blocks=tuple((b, int(n)) for b, n in data["blocks"][c].items()),
                    hand=None if hands is None else _sorted_cards(edition, hands[c]),
                    joker_up=bool(data["jokers"][c]),
                )
                for c in game.players
            )
            state = cls(
                game=game,
                board=parse_cells(edition, data["cells"]),
                players=players,
                phase=int(data["phase"]),
                turn=int(data["turn"]),
                end_at=data.get("end_at"),
                draw_pile=None if data.get("draw") is None else tuple(data["draw"]),
                discard_pile=None if data.get("discard") is None else tuple(data["discard"]),
                seed=int(data.get("seed", 0)),
                reshuffles=int(data.get("reshuffles", 0)),
            )
        except KeyError as exc:
            raise ValueError(f"blox state is missing {exc.args[0]!r}") from exc
        if data.get("current", state.current.color) != state.current.color:
            raise ValueError(f"'current' is {data['current']} but turn {state.turn} belongs to {state.current.color}")
        return state

    def __str__(self) -> str:
        ed = self.edition
        letter = _initials(ed.colors)
        lines = ["    " + " ".join(f"{c:>3}" for c in range(ed.size))]
        for r in range(ed.size):
            row = []
            for c in range(ed.size):
                cell = self.cell((r, c))
                if cell is None:
                    row.append(f"  {letter[ed.board[r][c]]}")
                elif isinstance(cell, Figure):
                    row.append(f" {cell.color[:2].upper()}")
                else:
                    row.append(f" T{cell.height}")
            lines.append(f"{r:>3} " + " ".join(row))
        lines.append(
            f"phase {self.phase}, round {self.round}, {self.current.color} to play"
            + (" (game over)" if self.is_terminal() else "")
        )
        for p in self.players:
            hand = "?" if p.hand is None else " ".join(p.hand)
            joker = "up" if p.joker_up else "down"
            lines.append(
                f"  {p.color:<7} {p.points:>3} pts  blocks {_describe_counter(p.block_counts) or '-'}"
                f"  joker {joker}  hand {hand}"
            )
        return "\n".join(lines)

    def __repr__(self) -> str:
        return f"<BloxState phase={self.phase} turn={self.turn} current={self.current.color}>"


def _sub_multisets(order: Sequence[str], counts: Counter[str], size: int | None) -> Iterator[tuple[str, ...]]:
    """Distinct sub-multisets of ``counts`` (of exactly ``size`` items when given), in ``order``."""
    colors = [c for c in order if counts[c] > 0]
    ranges = [range(counts[c] + 1) for c in colors]
    for combo in itertools.product(*ranges):
        if size is not None and sum(combo) != size:
            continue
        yield tuple(c for c, n in zip(colors, combo) for _ in range(n))


def _initials(names: Sequence[str]) -> dict[str, str]:
    """A distinct lower-case letter per name, its first free letter (black -> b, blue -> l)."""
    out: dict[str, str] = {}
    for name in names:
        out[name] = next((ch for ch in name if ch not in out.values()), "?")
    return out


def _describe_counter(counts: Counter[str]) -> str:
    return ", ".join(f"{n} {c}" for c, n in counts.items() if n > 0)
