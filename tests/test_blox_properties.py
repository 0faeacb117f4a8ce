"""Property tests over random complete Blox games (full information) and table-mode inference."""

from __future__ import annotations

import json
import random
from collections import Counter

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from engine import VerdictKind
from engine.blox import BloxState, Build, Destroy, Exchange, Knock, Tower, check_position, infer
from engine.blox.playout import choose_action

PLAYER_SETS = [["green", "brown"], ["green", "brown", "blue"], ["green", "brown", "blue", "yellow"]]
SETTINGS = settings(max_examples=6, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def check_invariants(state: BloxState, supply: Counter, phase_before: int) -> None:
    ed = state.edition
    on_board = Counter(b for _, t in state.towers() for b in t.blocks)
    in_front = sum((p.block_counts for p in state.players), Counter())
    assert on_board + in_front == supply, "blocks are conserved"
    held = Counter(c for p in state.players for c in p.hand)
    cards = held + Counter(state.draw_pile) + Counter(state.discard_pile)
    assert cards == Counter({c: ed.cards_per_color for c in ed.colors}), "cards are conserved"
    assert all(len(p.hand) <= ed.hand_size for p in state.players)
    assert not check_position(ed, state.observation_state()["cells"]), "a possible position"
    for color in state.game.players:
        assert 0 <= state.figures_off_board(color) <= ed.figures_per_player
    assert state.phase >= phase_before, "the phase never goes back"


def earned(state: BloxState, action) -> int:
    if isinstance(action, (Destroy,)):
        tower = state.cell(action.to)
        assert isinstance(tower, Tower)
        return tower.height
    if isinstance(action, Build):
        return len(action.blocks)
    if isinstance(action, Knock):
        return action.card_count
    return 0


@SETTINGS
@given(seed=st.integers(0, 2**31), players=st.sampled_from(PLAYER_SETS))
def test_random_complete_games_keep_the_invariants(seed, players):
    from engine.blox import BloxGame

    rng = random.Random(seed)
    game = BloxGame(players)
    state = game.new_initial_state(rng)
    supply = game.block_supply()
    expected = Counter()
    check_invariants(state, supply, state.phase)
    while not state.is_terminal():
        assert state.turn < 3000, "game did not finish"
        action = choose_action(state, rng)
        assert action is not None, "a running game always has a legal action"
        actor = state.current.color
        expected[actor] += earned(state, action)
        phase = state.phase
        state.apply_action(action)
        check_invariants(state, supply, phase)
        assert state.scores() == {c: expected[c] for c in players}, "points equal what the actions earned"
    assert list(state.legal_actions()) == []
    assert state.phase == 4 and state.tower_count(4) <= 1
    assert state.turn % len(players) == 0, "every player had the same number of turns"


def random_midgame_state(seed: int, players: list[str]) -> BloxState:
    from engine.blox import BloxGame

    rng = random.Random(seed)
    state = BloxGame(players).new_initial_state(rng)
    for _ in range(rng.randrange(0, 150)):
        if state.is_terminal():
            break
        state.apply_action(choose_action(state, rng))
    return state


@SETTINGS
@given(seed=st.integers(0, 2**31), players=st.sampled_from(PLAYER_SETS))
def test_inference_names_every_legal_action(seed, players):
    state = random_midgame_state(seed, players)
    for action in state.legal_actions():
        after = state.clone()
        after.apply_action(action)
        verdict = infer(state, after.observation_state()["cells"])
        if isinstance(action, Exchange):
            assert verdict.kind is VerdictKind.NO_CHANGE
            continue
        assert verdict.kind is VerdictKind.ACTION, (action, verdict)
        named = state.clone()
        effect = named.board_effect(verdict.action)
        assert effect.board == after.board, "the named action has the identical board effect"
        assert type(verdict.action) is type(action)


@SETTINGS
@given(seed=st.integers(0, 2**31), players=st.sampled_from(PLAYER_SETS))
def test_clone_undo_and_json_round_trip(seed, players):
    state = random_midgame_state(seed, players)
    data = json.loads(json.dumps(state.to_json()))
    again = BloxState.from_json(data)
    assert again == state
    assert again.to_json() == state.to_json()
    assert list(again.legal_actions()) == list(state.legal_actions())
    copy = state.clone()
    history = len(state.history)
    before = state.to_json()
    rng = random.Random(seed)
    actions = []
    for _ in range(5):
        if state.is_terminal():
            break
        action = choose_action(state, rng)
        actions.append(action)
        state.apply_action(action)
    for action in reversed(actions):
        assert state.undo() == action
    assert state.to_json() == before and state == copy and len(state.history) == history
