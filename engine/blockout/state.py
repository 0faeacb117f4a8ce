"""The Block Out! game and state (full-information play).

Turn structure (rulebook "How to Play" and rulings R-BLOCKOUT-2..6)::

    phase "action"   the player to move plays a block card (naming the block placed),
                     Pass, Reverse, or - holding nothing playable - draws until they can.
        | block on an empty stack (first block: no count, R-BLOCKOUT-4) -> turn ends
        | block on a non-empty stack -> phase "count"
        | Pass / Reverse -> turn ends
    phase "count"    the placed block awaits the three-second count (R-BLOCKOUT-3); only
                     its outcome is accepted: Stood (turn ends) or Fell.
        | Fell -> all blocks leave the stack, the player draws 3 -> phase "restart"
    phase "restart"  the same player must start a new stack with a block card, drawing
                     until they hold one (R-BLOCKOUT-4). The block needs no count.
    phase "final"    advanced rule only: the player who played their last card must place
                     any free block; it must stand through its count (R-BLOCKOUT-5).
    phase "over"     someone won.

At the end of a turn (R-BLOCKOUT-5) the player wins when the ninth block stood through its
count, or when their hand is empty (with the advanced rule: they must first make a final
placement stand). Otherwise play moves one seat in the direction of play.
"""

from __future__ import annotations

import enum
import random
from collections import Counter
from dataclasses import dataclass, field, replace
from typing import Any, Iterator, Sequence

from engine.blockout.actions import (
    Action,
    Draw,
    FinalBlock,
    Fell,
    PlayBlock,
    PlayPass,
    PlayReverse,
    Stood,
)
from engine.blockout.edition import PASS, REVERSE, Block, BlockOutEdition, Card, load_edition
from engine.blockout.stability import COUNT_SECONDS, COUNT_TOLERANCE, StabilityEvent, StabilityKind
from engine.common import IllegalAction

MIN_PLAYERS = 2
MAX_PLAYERS = 6
#: Game Setup: "deal each player seven cards".
HAND_SIZE = 7
#: R-BLOCKOUT-4: after a fall the player draws three cards.
FALL_DRAW = 3

# No ruling speaks of turn order itself; R-BLOCKOUT-6 is the one about the order of
# play, so an action out of turn cites it.
RULE_TURN_ORDER = "R-BLOCKOUT-6"


class Phase(str, enum.Enum):
    ACTION = "action"
    COUNT = "count"
    RESTART = "restart"
    FINAL = "final"
    OVER = "over"


class WinReason(str, enum.Enum):
    LAST_CARD = "last_card"
    NINTH_BLOCK = "ninth_block"


@dataclass
class Count:
    """The count in progress for the block on top of the stack (R-BLOCKOUT-3).

    ``final`` marks the advanced rule's final placement. ``placed_t`` / ``counting_t`` are
    the sensor times of the ``placed`` and ``counting`` events, when reported.
    """

    final: bool = False
    placed_t: float | None = None
    counting_t: float | None = None

    def to_json(self) -> dict[str, Any]:
        return {"final": self.final, "placed_t": self.placed_t, "counting_t": self.counting_t}

    @classmethod
    def from_json(cls, data: Any) -> "Count":
        if not isinstance(data, dict) or not isinstance(data.get("final"), bool):
            raise ValueError(f"bad count {data!r}")
        times = []
        for key in ("placed_t", "counting_t"):
            v = data.get(key)
            if v is not None and (isinstance(v, bool) or not isinstance(v, (int, float))):
                raise ValueError(f"count {key} must be a number or null")
            times.append(None if v is None else float(v))
        return cls(data["final"], times[0], times[1])


@dataclass(frozen=True)
class BlockOutGame:
    """Edition, players and options; creates initial states.

    ``players`` are the seat names in clockwise order (2 to 6). ``advanced`` switches on the
    advanced rule of R-BLOCKOUT-5. ``first_player`` is the seat that starts (the rulebook's
    "next birthday").
    """

    edition: BlockOutEdition
    players: tuple[str, ...]
    advanced: bool = False
    first_player: int = 0

    def __post_init__(self) -> None:
        n = len(self.players)
        if not MIN_PLAYERS <= n <= MAX_PLAYERS:
            raise ValueError(f"Block Out! takes {MIN_PLAYERS} to {MAX_PLAYERS} players, got {n}")
        if len(set(self.players)) != n or not all(isinstance(p, str) and p for p in self.players):
            raise ValueError(f"player names must be distinct non-empty strings: {self.players}")
        if not 0 <= self.first_player < n:
            raise ValueError(f"first_player must be a seat 0..{n - 1}")
        if HAND_SIZE * n > len(self.edition.deck()):
            raise ValueError("not enough cards to deal")

    @classmethod
    def create(
        cls,
        players: int | Sequence[str] = 2,
        *,
        advanced: bool = False,
        edition: BlockOutEdition | None = None,
        first_player: int = 0,
    ) -> "BlockOutGame":
        """``players`` is a count (seats named ``p1``..``pN``) or a sequence of names."""
        names = (
            tuple(f"p{i + 1}" for i in range(players))
            if isinstance(players, int)
            else tuple(players)
        )
        return cls(edition or load_edition(), names, advanced, first_player)

    @property
    def num_players(self) -> int:
        return len(self.players)

    def new_initial_state(self, rng: random.Random) -> "BlockOutState":
        """Shuffle the cards with ``rng``, deal seven to each player; no stack yet."""
        deck = self.edition.deck()
        rng.shuffle(deck)
        n = self.num_players
        hands: list[list[Card]] = [[] for _ in range(n)]
        for i in range(HAND_SIZE * n):
            # Deal one at a time from the top (the end of the list), starting with the first player.
            hands[(self.first_player + i) % n].append(deck.pop())
        return BlockOutState(
            game=self,
            stack=[],
            hands=hands,
            draw_pile=deck,
            discard=[],
            direction=1,
            current=self.first_player,
            phase=Phase.ACTION,
            rng=rng,
        )


@dataclass(frozen=True)
class _Snapshot:
    stack: tuple[Block, ...]
    hands: tuple[tuple[Card, ...], ...]
    draw_pile: tuple[Card, ...]
    discard: tuple[Card, ...]
    direction: int
    current: int
    phase: Phase
    count: Count | None
    winner: int | None
    win_reason: WinReason | None
    rng_state: Any


@dataclass(eq=False)
class BlockOutState:
    """A Block Out! position with everything known (hands and piles included).

    * ``stack``: blocks bottom to top; ``free_blocks`` are the others (never on the stack twice).
    * ``hands[i]``: the cards of seat ``i``; ``draw_pile`` and ``discard`` have their top at
      the end of the list.
    * ``direction``: +1 clockwise (seat order), -1 after a Reverse with 3+ players.
    * ``current``: the seat to move; ``phase`` and ``count`` as in the module docstring.
    * ``rng``: the source used when the discards are reshuffled into a new draw pile
      (R-BLOCKOUT-2). It may be ``None`` (e.g. after :meth:`from_json` without ``rng=``); a
      reshuffle then raises ``ValueError`` and the state is left unchanged.
    """

    game: BlockOutGame
    stack: list[Block]
    hands: list[list[Card]]
    draw_pile: list[Card]
    discard: list[Card]
    direction: int
    current: int
    phase: Phase
    count: Count | None = None
    winner: int | None = None
    win_reason: WinReason | None = None
    rng: random.Random | None = None
    _history: list[tuple[_Snapshot, Any]] = field(default_factory=list, repr=False)

    # ------------------------------------------------------------------ queries

    @property
    def edition(self) -> BlockOutEdition:
        return self.game.edition

    @property
    def players(self) -> tuple[str, ...]:
        return self.game.players

    @property
    def current_name(self) -> str:
        return self.game.players[self.current]

    @property
    def free_blocks(self) -> list[Block]:
        """Blocks not on the stack, in edition order."""
        on = set(self.stack)
        return [b for b in self.edition.blocks if b not in on]

    def is_terminal(self) -> bool:
        return self.phase is Phase.OVER

    def scores(self) -> dict[str, int]:
        """1 for the winner, 0 for everyone else (all 0 while the game runs)."""
        return {p: int(i == self.winner) for i, p in enumerate(self.players)}

    def history(self) -> list[Any]:
        """Actions and stability events applied so far (those :meth:`undo` can take back)."""
        return [what for _, what in self._history]

    def observation(self) -> dict[str, Any]:
        """The public ``blockout`` state of observation.md: ``{"stack": [...]}``."""
        return {"stack": [b.to_json() for b in self.stack]}

    def _playable(self, card: Card) -> bool:
        """R-BLOCKOUT-2 (and R-BLOCKOUT-4 while restarting): can ``card`` be played now?"""
        if self.phase is Phase.RESTART:
            return card.is_block_card
        if not card.is_block_card:
            return True
        on = set(self.stack)
        return any(card.allows(b) and b not in on for b in self.edition.blocks)

    def has_playable_card(self, seat: int | None = None) -> bool:
        seat = self.current if seat is None else seat
        return any(self._playable(c) for c in set(self.hands[seat]))

    def legal_actions(self) -> Iterator[Action]:
        """Every legal action for the player to move, without duplicates, in a stable order.

        During a count the two outcomes (:class:`Stood`, :class:`Fell`) are listed: they are
        inputs from the stability sensor rather than a player's choice.
        """
        phase = self.phase
        if phase is Phase.OVER:
            return
        if phase is Phase.COUNT:
            yield Stood()
            yield Fell()
            return
        if phase is Phase.FINAL:
            for b in self.free_blocks:
                yield FinalBlock(b)
            return
        free = self.free_blocks
        any_playable = False
        for card in sorted(set(self.hands[self.current])):
            if card.is_block_card:
                for b in free:
                    if card.allows(b):
                        any_playable = True
                        yield PlayBlock(card, b)
            elif phase is Phase.ACTION:
                any_playable = True
                yield PlayPass() if card == PASS else PlayReverse()
        if not any_playable:
            yield Draw()

    def is_legal(self, action: Action, player: int | str | None = None) -> bool:
        try:
            self._check(action, player)
        except IllegalAction:
            return False
        return True

    # ------------------------------------------------------------------ checking

    def _seat(self, player: int | str) -> int:
        if isinstance(player, str):
            if player not in self.players:
                raise ValueError(f"unknown player {player!r}")
            return self.players.index(player)
        if not 0 <= player < len(self.players):
            raise ValueError(f"no seat {player}")
        return player

    def _check(self, action: Action, player: int | str | None) -> None:
        """Raise :class:`IllegalAction` unless ``action`` is legal now. Never mutates."""
        phase = self.phase
        if phase is Phase.OVER:
            raise IllegalAction("R-BLOCKOUT-5", f"the game is over: {self.players[self.winner or 0]} won")
        outcome = isinstance(action, (Stood, Fell))
        if phase is Phase.COUNT and not outcome:
            raise IllegalAction(
                "R-BLOCKOUT-3",
                f"the {self.stack[-1]} block is still being counted; nothing may be played "
                "before the count ends",
            )
        if outcome:
            if phase is not Phase.COUNT:
                raise IllegalAction("R-BLOCKOUT-3", "no block is awaiting its count")
            return  # the sensor's outcome does not belong to a player
        if player is not None and self._seat(player) != self.current:
            raise IllegalAction(
                RULE_TURN_ORDER,
                f"it is {self.current_name}'s turn, not {self.players[self._seat(player)]}'s",
            )
        hand = self.hands[self.current]
        if phase is Phase.FINAL:
            if not isinstance(action, FinalBlock):
                raise IllegalAction(
                    "R-BLOCKOUT-5",
                    f"{self.current_name} played their last card and must now place a free block "
                    "(advanced rule)",
                )
            self._check_block_exists(action.block)
            if action.block in self.stack:
                raise IllegalAction("R-BLOCKOUT-5", f"the {action.block} block is already on the stack")
            return
        if isinstance(action, FinalBlock):
            raise IllegalAction(
                "R-BLOCKOUT-5", "a block without a card is only placed after the last card (advanced rule)"
            )
        if isinstance(action, Draw):
            if self.has_playable_card():
                if phase is Phase.RESTART:
                    raise IllegalAction(
                        "R-BLOCKOUT-4", "the player holds a block card to start the new stack; no drawing"
                    )
                raise IllegalAction("R-BLOCKOUT-2", "the player holds a playable card; no drawing")
            return
        if isinstance(action, (PlayPass, PlayReverse)):
            card = PASS if isinstance(action, PlayPass) else REVERSE
            if phase is Phase.RESTART:
                raise IllegalAction(
                    "R-BLOCKOUT-4", f"after a fall the new stack must be started with a block card, not {card}"
                )
            if card not in hand:
                raise IllegalAction("R-BLOCKOUT-2", f"{self.current_name} holds no {card} card")
            return
        if isinstance(action, PlayBlock):
            card, block = action.card, action.block
            if not card.is_block_card:
                raise IllegalAction("R-BLOCKOUT-1", f"{card} is not a block card")
            try:
                self.edition.check_card(card)
            except ValueError as exc:
                raise IllegalAction("R-BLOCKOUT-1", str(exc)) from None
            self._check_block_exists(block)
            if card not in hand:
                raise IllegalAction("R-BLOCKOUT-2", f"{self.current_name} holds no {card} card")
            if not card.allows(block):
                raise IllegalAction("R-BLOCKOUT-1", f"the {block} block does not match the card {card}")
            if block in self.stack:
                raise IllegalAction("R-BLOCKOUT-2", f"the {block} block is already on the stack")
            return
        raise TypeError(f"not a Block Out! action: {action!r}")

    def _check_block_exists(self, block: Block) -> None:
        try:
            self.edition.check_block(block)
        except ValueError as exc:
            raise IllegalAction("R-BLOCKOUT-1", str(exc)) from None

    # ------------------------------------------------------------------ applying

    def apply_action(self, action: Action, player: int | str | None = None) -> None:
        """Apply ``action`` for the player to move.

        ``player`` (seat index or name), when given, must be the player to move; it is not
        checked for :class:`Stood` / :class:`Fell`, which come from the stability sensor.
        Raises :class:`IllegalAction` (naming the ruling) and leaves the state unchanged when
        the action is illegal.
        """
        self._check(action, player)
        # Only drawing can reshuffle, so only Draw and Fell need the rng saved for undo.
        self._commit(action, lambda: self._do(action), with_rng=isinstance(action, (Draw, Fell)))

    def _commit(self, what: Any, mutate: Any, with_rng: bool = False) -> None:
        snap = self._snapshot(with_rng)
        try:
            mutate()
        except BaseException:
            self._restore(snap)
            raise
        self._history.append((snap, what))

    def _do(self, action: Action) -> None:
        if isinstance(action, PlayBlock):
            self._play_card(action.card)
            first = not self.stack
            self.stack.append(action.block)
            if first:
                self._end_turn()  # R-BLOCKOUT-4: the first block of a stack needs no count
            else:
                self.phase, self.count = Phase.COUNT, Count()
        elif isinstance(action, PlayPass):
            self._play_card(PASS)
            self._end_turn()
        elif isinstance(action, PlayReverse):
            self._play_card(REVERSE)
            if len(self.players) > 2:
                self.direction = -self.direction
            # R-BLOCKOUT-6: with two players Reverse acts as a Pass (the other player moves next).
            self._end_turn()
        elif isinstance(action, Draw):
            self._draw_until_playable()
        elif isinstance(action, FinalBlock):
            first = not self.stack
            self.stack.append(action.block)
            if first:
                self._win(WinReason.LAST_CARD)
            else:
                self.phase, self.count = Phase.COUNT, Count(final=True)
        elif isinstance(action, Stood):
            final = self.count is not None and self.count.final
            self.count = None
            if len(self.stack) == len(self.edition.blocks):
                self._win(WinReason.NINTH_BLOCK)  # R-BLOCKOUT-5
            elif final:
                self._win(WinReason.LAST_CARD)  # R-BLOCKOUT-5 advanced rule
            else:
                self._end_turn()
        elif isinstance(action, Fell):
            # R-BLOCKOUT-4: every block leaves the stack, three cards, then a new stack.
            self.count = None
            self.stack.clear()
            for _ in range(FALL_DRAW):
                if self._draw_one() is None:
                    break
            self.phase = Phase.RESTART

    def _play_card(self, card: Card) -> None:
        self.hands[self.current].remove(card)
        self.discard.append(card)

    def _draw_one(self) -> Card | None:
        """Draw the top card; reshuffle the discards first when the pile is empty (R-BLOCKOUT-2)."""
        if not self.draw_pile:
            if not self.discard:
                return None
            if self.rng is None:
                raise ValueError("the discards must be reshuffled but this state has no rng")
            self.draw_pile, self.discard = self.discard, []
            self.rng.shuffle(self.draw_pile)
        card = self.draw_pile.pop()
        self.hands[self.current].append(card)
        return card

    def _draw_until_playable(self) -> None:
        # R-BLOCKOUT-2 / R-BLOCKOUT-4. The books are silent when no card is left anywhere (every
        # card in a hand): the player then cannot play, and the turn passes.
        while True:
            card = self._draw_one()
            if card is None:
                self._end_turn()
                return
            if self._playable(card):
                return

    def _end_turn(self) -> None:
        """R-BLOCKOUT-5: the win check at the end of a turn, else the next player moves."""
        if not self.hands[self.current]:
            if self.game.advanced and self.free_blocks:
                self.phase, self.count = Phase.FINAL, None
                return
            self._win(WinReason.LAST_CARD)
            return
        self.current = (self.current + self.direction) % len(self.players)
        self.phase, self.count = Phase.ACTION, None

    def _win(self, reason: WinReason) -> None:
        self.phase, self.count = Phase.OVER, None
        self.winner, self.win_reason = self.current, reason

    # ------------------------------------------------------------------ stability events

    def apply_stability_event(self, event: Any) -> Action | None:
        """Feed one stability event from the stack sensor (R-BLOCKOUT-3).

        ``event`` is a mapping ``{"kind": "stability", "event": NAME, "t": SECONDS}`` (``kind``
        optional, extra keys ignored), a :class:`StabilityEvent`, or any object with ``event``
        and ``t`` attributes; NAME is ``placed``, ``counting``, ``stood`` or ``fell``. See
        :mod:`engine.blockout.stability`.

        Order of use: the player's :class:`PlayBlock` (or :class:`FinalBlock`) is applied
        first, then the sensor's events for that block. While a count is pending:

        * ``placed`` (optional): the block was set on the stack; its time is recorded.
        * ``counting`` (optional): the block was released and the stack settled; the count
          starts at ``t``.
        * ``stood``: the count finished. When ``counting`` was reported, ``t`` must be at least
          3.0 s after it, less ``COUNT_TOLERANCE`` (10 ms) for sensor granularity (else
          IllegalAction R-BLOCKOUT-3: a count cut short). Applies
          :class:`Stood` and returns it.
        * ``fell``: at any moment after the placement, settling or count included. Applies
          :class:`Fell` and returns it.

        Events must come in time order and in the order placed -> counting -> stood|fell; a
        repeated ``placed``/``counting`` or a time going backwards raises IllegalAction
        R-BLOCKOUT-3. When no count is pending (for instance the first block of a stack,
        which needs no count, R-BLOCKOUT-4), ``placed``, ``counting`` and ``stood`` carry no
        decision and are ignored (returns ``None``, state unchanged); ``fell`` raises
        IllegalAction R-BLOCKOUT-3, since a fall is only judged for a block being counted.

        A malformed event raises ``ValueError``. Every error leaves the state unchanged.
        Returns the outcome action applied, or ``None``.
        """
        ev = StabilityEvent.coerce(event)
        if self.phase is not Phase.COUNT:
            if ev.event is StabilityKind.FELL:
                raise IllegalAction(
                    "R-BLOCKOUT-3", "a fall was reported while no block was awaiting its count"
                )
            return None
        count = self.count
        assert count is not None
        known = [t for t in (count.placed_t, count.counting_t) if t is not None]
        if known and ev.t < max(known) - COUNT_TOLERANCE:
            raise IllegalAction(
                "R-BLOCKOUT-3", f"stability event '{ev.event.value}' at t={ev.t} is earlier than the last one"
            )
        if ev.event is StabilityKind.PLACED:
            if count.placed_t is not None or count.counting_t is not None:
                raise IllegalAction(
                    "R-BLOCKOUT-3", "a second 'placed' for the block being counted (one placement per turn)"
                )
            self._commit(ev.to_json(), lambda: setattr(self, "count", replace(count, placed_t=ev.t)))
            return None
        if ev.event is StabilityKind.COUNTING:
            if count.counting_t is not None:
                raise IllegalAction("R-BLOCKOUT-3", "the count has already started")
            self._commit(ev.to_json(), lambda: setattr(self, "count", replace(count, counting_t=ev.t)))
            return None
        if ev.event is StabilityKind.STOOD:
            if count.counting_t is not None:
                lasted = ev.t - count.counting_t
                if lasted < COUNT_SECONDS - COUNT_TOLERANCE:
                    raise IllegalAction(
                        "R-BLOCKOUT-3",
                        f"'stood' after {lasted:.3f} s; the count lasts {COUNT_SECONDS} s",
                    )
            outcome: Action = Stood()
        else:
            outcome = Fell()
        self.apply_action(outcome)
        return outcome

    # ------------------------------------------------------------------ undo, clone

    def _snapshot(self, with_rng: bool = True) -> _Snapshot:
        return _Snapshot(
            tuple(self.stack),
            tuple(tuple(h) for h in self.hands),
            tuple(self.draw_pile),
            tuple(self.discard),
            self.direction,
            self.current,
            self.phase,
            None if self.count is None else replace(self.count),
            self.winner,
            self.win_reason,
            self.rng.getstate() if with_rng and self.rng is not None else None,
        )

    def _restore(self, s: _Snapshot) -> None:
        self.stack = list(s.stack)
        self.hands = [list(h) for h in s.hands]
        self.draw_pile = list(s.draw_pile)
        self.discard = list(s.discard)
        self.direction, self.current, self.phase = s.direction, s.current, s.phase
        self.count = None if s.count is None else replace(s.count)
        self.winner, self.win_reason = s.winner, s.win_reason
        if self.rng is not None and s.rng_state is not None:
            self.rng.setstate(s.rng_state)

    def undo(self) -> Any:
        """Take back the last action or stability event (returns it); restores the rng too."""
        if not self._history:
            raise IndexError("nothing to undo")
        snap, what = self._history.pop()
        self._restore(snap)
        return what

    def clone(self) -> "BlockOutState":
        """An independent copy; its rng is a copy in the same state as this one's."""
        rng = None
        if self.rng is not None:
            rng = random.Random()
            rng.setstate(self.rng.getstate())
        return BlockOutState(
            game=self.game,
            stack=list(self.stack),
            hands=[list(h) for h in self.hands],
            draw_pile=list(self.draw_pile),
            discard=list(self.discard),
            direction=self.direction,
            current=self.current,
            phase=self.phase,
            count=None if self.count is None else replace(self.count),
            winner=self.winner,
            win_reason=self.win_reason,
            rng=rng,
            _history=list(self._history),
        )

    # ------------------------------------------------------------------ JSON

    def to_json(self) -> dict[str, Any]:
        """The whole state. ``stack`` is the public ``blockout`` state of observation.md; the
        rest (hands, piles, turn) is hidden at a real table. Pile tops are the list ends."""
        return {
            "game": "blockout",
            "edition": self.edition.name,
            "players": list(self.players),
            "advanced": self.game.advanced,
            "first_player": self.game.first_player,
            "stack": [b.to_json() for b in self.stack],
            "free": [b.to_json() for b in self.free_blocks],
            "hands": [[c.to_json() for c in h] for h in self.hands],
            "draw_pile": [c.to_json() for c in self.draw_pile],
            "discard": [c.to_json() for c in self.discard],
            "direction": self.direction,
            "current": self.current,
            "phase": self.phase.value,
            "count": None if self.count is None else self.count.to_json(),
            "winner": self.winner,
            "win_reason": None if self.win_reason is None else self.win_reason.value,
        }

    @classmethod
    def from_json(
        cls,
        data: dict[str, Any],
        *,
        edition: BlockOutEdition | None = None,
        rng: random.Random | None = None,
    ) -> "BlockOutState":
        """Rebuild a state from :meth:`to_json`, validating it (``ValueError`` when inconsistent):
        all cards and blocks accounted for, no block twice on the stack, phase and count agree."""
        if not isinstance(data, dict) or data.get("game") != "blockout":
            raise ValueError("not a Block Out! state")
        edition = edition or load_edition()
        if data.get("edition", edition.name) != edition.name:
            raise ValueError(f"state is for edition {data.get('edition')!r}, not {edition.name!r}")
        advanced = data.get("advanced", False)
        if not isinstance(advanced, bool):
            raise ValueError("'advanced' must be true or false")
        players = data.get("players")
        if not isinstance(players, list):
            raise ValueError("'players' must be a list of names")
        game = BlockOutGame(edition, tuple(players), advanced, int(data.get("first_player", 0)))

        stack = [Block.from_json(b) for b in data.get("stack", [])]
        for b in stack:
            edition.check_block(b)
        if len(set(stack)) != len(stack):
            raise ValueError("a block appears twice on the stack")

        def cards(raw: Any, what: str) -> list[Card]:
            if not isinstance(raw, list):
                raise ValueError(f"'{what}' must be a list of cards")
            out = [Card.from_json(c) for c in raw]
            for c in out:
                edition.check_card(c)
            return out

        hands_raw = data.get("hands")
        if not isinstance(hands_raw, list) or len(hands_raw) != len(players):
            raise ValueError("'hands' must hold one list per player")
        hands = [cards(h, "hands") for h in hands_raw]
        draw_pile = cards(data.get("draw_pile"), "draw_pile")
        discard = cards(data.get("discard"), "discard")
        held = Counter(c for h in hands for c in h) + Counter(draw_pile) + Counter(discard)
        if held != Counter(edition.deck()):
            raise ValueError("the cards in hands and piles are not exactly the edition's deck")
        if "free" in data and [Block.from_json(b) for b in data["free"]] != [
            b for b in edition.blocks if b not in set(stack)
        ]:
            raise ValueError("'free' does not list exactly the blocks not on the stack")

        direction = data.get("direction")
        if direction not in (1, -1):
            raise ValueError("'direction' must be 1 or -1")
        current = data.get("current")
        if not isinstance(current, int) or not 0 <= current < len(players):
            raise ValueError("'current' must be a seat index")
        phase = Phase(data.get("phase"))
        count = None if data.get("count") is None else Count.from_json(data["count"])
        if (phase is Phase.COUNT) != (count is not None):
            raise ValueError("a count is present exactly in phase 'count'")
        if phase is Phase.COUNT and len(stack) < 2:
            raise ValueError("only a block placed on another block is counted (R-BLOCKOUT-4)")
        if phase is Phase.RESTART and stack:
            raise ValueError("phase 'restart' follows a fall, so the stack must be empty")
        if phase is Phase.FINAL and (not advanced or hands[current]):
            raise ValueError("phase 'final' needs the advanced rule and an empty hand")
        winner = data.get("winner")
        reason = data.get("win_reason")
        if (phase is Phase.OVER) != (winner is not None) or (winner is None) != (reason is None):
            raise ValueError("'winner' and 'win_reason' are set exactly when the game is over")
        if winner is not None and (not isinstance(winner, int) or not 0 <= winner < len(players)):
            raise ValueError("'winner' must be a seat index")
        return cls(
            game=game,
            stack=stack,
            hands=hands,
            draw_pile=draw_pile,
            discard=discard,
            direction=direction,
            current=current,
            phase=phase,
            count=count,
            winner=winner,
            win_reason=None if reason is None else WinReason(reason),
            rng=rng,
        )

    # ------------------------------------------------------------------ display

    def __str__(self) -> str:
        turn = "clockwise" if self.direction == 1 else "anticlockwise"
        lines = [f"Block Out! ({len(self.players)} players{', advanced' if self.game.advanced else ''})"]
        if self.phase is Phase.OVER:
            assert self.winner is not None and self.win_reason is not None
            lines.append(f"{self.players[self.winner]} won ({self.win_reason.value.replace('_', ' ')})")
        else:
            lines.append(f"{self.current_name} to move, phase {self.phase.value}, play {turn}")
        lines.append("stack (bottom to top): " + (", ".join(map(str, self.stack)) or "none"))
        for i, name in enumerate(self.players):
            mark = "*" if i == self.current else " "
            lines.append(f"{mark} {name}: " + " ".join(str(c) for c in sorted(self.hands[i])))
        lines.append(f"draw pile {len(self.draw_pile)}, discard {len(self.discard)}")
        return "\n".join(lines)
