"""Block Out! property tests: random games (2 to 6 players, basic and advanced rule) with
random falls, driven by actions and by stability events."""

from __future__ import annotations

import json
import random
from collections import Counter
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from engine.blockout import (
    BlockOutGame,
    BlockOutState,
    Fell,
    IllegalAction,
    Phase,
    PlayBlock,
    PlayPass,
    PlayReverse,
    Stood,
    load_edition,
)

EDITION = load_edition()
ALL_BLOCK_PLAYS = [
    PlayBlock(card, block)
    for card in EDITION.iter_card_types()
    if card.is_block_card
    for block in EDITION.blocks
]
MAX_STEPS = 3000


def check_invariants(s: BlockOutState) -> None:
    # Cards conserved: every card of the edition is in exactly one hand or pile.
    cards = Counter(c for h in s.hands for c in h) + Counter(s.draw_pile) + Counter(s.discard)
    assert cards == Counter(EDITION.deck())
    # Blocks conserved and the stack never holds a block twice.
    assert len(set(s.stack)) == len(s.stack) <= 9
    assert sorted(s.stack + s.free_blocks) == sorted(EDITION.blocks)
    assert s.direction in (1, -1) and 0 <= s.current < len(s.players)
    assert (s.phase is Phase.COUNT) == (s.count is not None)
    if s.phase is Phase.COUNT:
        assert len(s.stack) >= 2  # R-BLOCKOUT-4: a first block is never counted
    if s.phase is Phase.RESTART:
        assert s.stack == []
    if s.phase is Phase.FINAL:
        assert s.game.advanced and s.hands[s.current] == []
    if len(s.players) == 2:
        assert s.direction == 1  # R-BLOCKOUT-6
    legal = list(s.legal_actions())
    assert len(set(legal)) == len(legal)
    assert bool(legal) != s.is_terminal()


def play_random_game(
    seed: int, players: int, advanced: bool, fall_p: float, use_events: bool, check_illegal: bool
) -> BlockOutState:
    rng = random.Random(seed)
    state = BlockOutGame.create(players, advanced=advanced).new_initial_state(random.Random(seed ^ 0x5EED))
    t = 0.0
    check_invariants(state)
    for _ in range(MAX_STEPS):
        if state.is_terminal():
            break
        if state.phase is Phase.COUNT:
            fell = rng.random() < fall_p
            if use_events:
                t += 0.4
                state.apply_stability_event({"kind": "stability", "event": "placed", "t": t})
                t += 0.3
                state.apply_stability_event({"kind": "stability", "event": "counting", "t": t})
                t += rng.uniform(0.0, 2.9) if fell else 3.0
                out = state.apply_stability_event({"kind": "stability", "event": "fell" if fell else "stood", "t": t})
                assert out == (Fell() if fell else Stood())
            else:
                state.apply_action(Fell() if fell else Stood())
        else:
            legal = list(state.legal_actions())
            if check_illegal:
                # Any block play not listed is refused with a ruling and changes nothing.
                wrong = [a for a in ALL_BLOCK_PLAYS if a not in legal]
                probe = rng.choice(wrong)
                before = json.dumps(state.to_json())
                try:
                    state.apply_action(probe)
                except IllegalAction as exc:
                    assert exc.rule.startswith("R-BLOCKOUT-")
                else:
                    raise AssertionError(f"illegal {probe} was accepted")
                assert json.dumps(state.to_json()) == before
                if state.phase is Phase.ACTION:
                    for extra in (PlayPass(), PlayReverse()):
                        assert (extra in legal) == state.is_legal(extra)
            state.apply_action(rng.choice(legal))
        check_invariants(state)
    return state


@settings(max_examples=150, deadline=None)
@given(
    seed=st.integers(0, 2**32 - 1),
    players=st.integers(2, 6),
    advanced=st.booleans(),
    fall_p=st.floats(0.0, 0.4),
    use_events=st.booleans(),
)
def test_random_games_conserve_cards_and_blocks(
    seed: int, players: int, advanced: bool, fall_p: float, use_events: bool
) -> None:
    state = play_random_game(seed, players, advanced, fall_p, use_events, check_illegal=False)
    if state.is_terminal():
        assert state.winner is not None and sum(state.scores().values()) == 1
        if state.win_reason.value == "ninth_block":
            assert len(state.stack) == 9
        elif not advanced:
            assert state.hands[state.winner] == []


@settings(max_examples=60, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), players=st.integers(2, 6), advanced=st.booleans())
def test_random_games_refuse_illegal_block_plays(seed: int, players: int, advanced: bool) -> None:
    play_random_game(seed, players, advanced, 0.2, use_events=False, check_illegal=True)


@settings(max_examples=30, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), players=st.integers(2, 6), cut=st.integers(0, 400))
def test_json_round_trip_and_undo_anywhere(seed: int, players: int, cut: int) -> None:
    rng = random.Random(seed)
    state = BlockOutGame.create(players, advanced=bool(seed % 2)).new_initial_state(random.Random(seed))
    start = json.dumps(state.to_json())
    for _ in range(cut):
        if state.is_terminal():
            break
        state.apply_action(rng.choice(list(state.legal_actions())))
    data = state.to_json()
    back = BlockOutState.from_json(json.loads(json.dumps(data)), rng=random.Random(1))
    assert back.to_json() == data
    assert set(back.legal_actions()) == set(state.legal_actions())
    while state.history():
        state.undo()
    assert json.dumps(state.to_json()) == start


def test_random_games_reach_every_outcome() -> None:
    """Sanity of the generator above: falls, both win kinds and the advanced final
    placement all happen across a modest number of seeded games."""
    reasons: Counter[str] = Counter()
    falls = finals = 0
    for seed in range(60):
        s = play_random_game(seed, 2 + seed % 5, seed % 2 == 1, 0.15, use_events=seed % 3 == 0, check_illegal=False)
        hist = s.history()
        falls += sum(1 for h in hist if h == Fell())
        finals += sum(1 for h in hist if type(h).__name__ == "FinalBlock")
        if s.is_terminal():
            reasons[s.win_reason.value] += 1
    assert falls > 0 and finals > 0
    assert reasons["ninth_block"] > 0 and reasons["last_card"] > 0
