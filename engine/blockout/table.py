"""Block Out! in table mode: the stack, the turn and the count as the table sees them.

Hands are hidden, so the cards are not checked: a player says on the page which block
they place (the card is *implied*: one that allows that block), and Pass and Reverse,
which leave no trace on the stack, are declared the same way. The stack sensor's
stability events (``placed``, ``counting``, ``stood``, ``fell``; see
:mod:`engine.blockout.stability`) time the three-second count and catch the fall.
Everything visible is checked strictly: a block already on the stack (R-BLOCKOUT-2),
playing before the count ended (R-BLOCKOUT-3), a new stack after a fall started with
anything but a block (R-BLOCKOUT-4), playing out of turn (R-BLOCKOUT-6).
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field
from typing import Any

from engine.blockout.edition import Block, BlockOutEdition, load_edition
from engine.blockout.stability import COUNT_SECONDS, COUNT_TOLERANCE
from engine.common import IllegalAction

STACK_TO_WIN = 9


class TablePhase(str, enum.Enum):
    TURN = "turn"  # the player to move may play a block, Pass or Reverse
    RESTART = "restart"  # after a fall: the same player starts a new stack with a block
    PLACING = "placing"  # a block was placed; waiting for the stack to settle
    COUNTING = "counting"  # the three-second count runs
    OVER = "over"


@dataclass
class BlockOutTable:
    """The visible state of a Block Out! game; see the module docstring."""

    players: list[str]
    edition: BlockOutEdition = field(default_factory=load_edition)
    advanced: bool = False
    stack: list[Block] = field(default_factory=list)
    current: int = 0
    direction: int = 1
    phase: TablePhase = TablePhase.TURN
    count_started: float | None = None
    winner: str | None = None
    final_block: bool = False  # advanced rule: the player who played their last card places one more
    falls: dict[str, int] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if not 2 <= len(self.players) <= 6:
            raise ValueError(f"Block Out! is played by 2 to 6 players, not {len(self.players)}")
        if len(set(self.players)) != len(self.players):
            raise ValueError(f"player names must be distinct: {self.players}")

    @property
    def current_player(self) -> str:
        return self.players[self.current]

    def is_terminal(self) -> bool:
        return self.phase is TablePhase.OVER

    def scores(self) -> dict[str, int]:
        """1 for the winner, 0 for everyone else (Block Out! has no points)."""
        return {p: int(p == self.winner) for p in self.players}

    def free_blocks(self) -> list[Block]:
        return [b for b in self.edition.blocks if b not in self.stack]

    # ------------------------------------------------------------------ declared plays

    def play_block(self, player: str, block: Block) -> None:
        """``player`` places ``block`` (a block card implied). Raises IllegalAction, state unchanged."""
        self._check_turn(player)
        if block not in self.edition.blocks:
            raise IllegalAction("R-BLOCKOUT-1", f"there is no {block} block in this edition")
        if block in self.stack:
            raise IllegalAction("R-BLOCKOUT-2", f"the {block} block is already on the stack")
        self.stack.append(block)
        if len(self.stack) == 1:
            # R-BLOCKOUT-4: the first block of a stack stands on the base and needs no count
            # (so the advanced rule's final block on an empty base wins at once, as in the engine).
            if self.final_block:
                self._win(player)
            else:
                self._next_turn()
        else:
            self.phase = TablePhase.PLACING

    def play_action_card(self, player: str, card: str) -> None:
        """Pass or Reverse (R-BLOCKOUT-6: with two players Reverse acts as a Pass)."""
        self._check_turn(player)
        if card not in ("pass", "reverse"):
            raise IllegalAction("R-BLOCKOUT-1", f"{card!r} is not an action card (pass or reverse)")
        if self.phase is TablePhase.RESTART:
            raise IllegalAction("R-BLOCKOUT-4", "after a fall the new stack must be started with a block card")
        if self.final_block:
            raise IllegalAction("R-BLOCKOUT-5", "the last card was played: now a free block must be placed")
        if card == "reverse" and len(self.players) > 2:
            self.direction = -self.direction
        self._next_turn()

    def out_of_cards(self, player: str) -> None:
        """``player`` has played their last card (checked at the end of their turn, R-BLOCKOUT-5)."""
        previous = self.players[(self.current - self.direction) % len(self.players)]
        if self.phase is not TablePhase.TURN or player != previous:
            raise IllegalAction("R-BLOCKOUT-5", f"{player} can only go out at the end of their own turn")
        if self.advanced:
            # Advanced rule: they must now place any free block and it must stand.
            self.current = self.players.index(player)
            self.final_block = True
            return
        self._win(player)

    def _check_turn(self, player: str) -> None:
        if self.phase is TablePhase.OVER:
            raise IllegalAction("R-BLOCKOUT-5", f"the game is over: {self.winner} won")
        if self.phase in (TablePhase.PLACING, TablePhase.COUNTING):
            raise IllegalAction("R-BLOCKOUT-3", "the three-second count for the last block has not ended")
        if player != self.current_player:
            raise IllegalAction("R-BLOCKOUT-6", f"it is {self.current_player}'s turn, not {player}'s")

    # ------------------------------------------------------------------ the stack sensor

    def stability(self, event: str, t: float) -> str | None:
        """Apply a stability event; returns what it decided (``counting``, ``stood``, ``fell``) or None."""
        if event == "placed":
            return None  # the declared play already put the block on the stack
        if event == "counting":
            if self.phase is not TablePhase.PLACING:
                return None  # the base settling after something else (a first block, a knock)
            self.phase, self.count_started = TablePhase.COUNTING, t
            return "counting"
        if event == "stood":
            if self.phase is not TablePhase.COUNTING or self.count_started is None:
                return None
            if t - self.count_started < COUNT_SECONDS - COUNT_TOLERANCE:
                raise IllegalAction(
                    "R-BLOCKOUT-3", f"the count started at {self.count_started:.2f} s; 3.0 s had not passed at {t:.2f} s"
                )
            player = self.current_player
            if self.final_block or len(self.stack) == STACK_TO_WIN:
                self._win(player)
            else:
                self._next_turn()
            return "stood"
        if event == "fell":
            if not self.stack or self.phase is TablePhase.OVER:
                return None
            player = self.current_player
            self.falls[player] = self.falls.get(player, 0) + 1
            # R-BLOCKOUT-4: every block leaves the stack; the same player starts a new one.
            self.stack.clear()
            self.phase, self.count_started, self.final_block = TablePhase.RESTART, None, False
            return "fell"
        raise ValueError(f"unknown stability event {event!r}")

    def _next_turn(self) -> None:
        self.current = (self.current + self.direction) % len(self.players)
        self.phase, self.count_started = TablePhase.TURN, None

    def _win(self, player: str) -> None:
        self.winner, self.phase, self.count_started = player, TablePhase.OVER, None

    # ------------------------------------------------------------------ JSON

    def to_json(self) -> dict[str, Any]:
        return {
            "stack": [b.to_json() for b in self.stack],
            "players": list(self.players),
            "current": self.current_player,
            "direction": self.direction,
            "phase": self.phase.value,
            "count_started": self.count_started,
            "winner": self.winner,
            "final_block": self.final_block,
            "advanced": self.advanced,
            "falls": dict(self.falls),
        }
