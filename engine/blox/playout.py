"""Random complete games, for property tests and benchmarks.

The policy weights action types so that random games make progress towards the end (a
uniform choice mostly exchanges cards and shuffles figures about, and rarely finishes).
"""

from __future__ import annotations

import random
from collections.abc import Callable

from engine.blox.actions import Action
from engine.blox.state import BloxGame, BloxState

#: relative weight of choosing each action type, given at least one action of that type
DEFAULT_WEIGHTS = {"destroy": 40.0, "build": 30.0, "knock": 6.0, "place": 6.0, "move": 4.0, "exchange": 1.0}


def choose_action(state: BloxState, rng: random.Random, weights: dict[str, float] = DEFAULT_WEIGHTS) -> Action | None:
    by_type: dict[str, list[Action]] = {}
    for action in state.legal_actions():
        by_type.setdefault(action.type, []).append(action)
    if not by_type:
        return None
    types = sorted(by_type)
    kind = rng.choices(types, weights=[weights.get(t, 1.0) for t in types])[0]
    return rng.choice(by_type[kind])


def play_random_game(
    players: list[str],
    rng: random.Random,
    max_turns: int = 5000,
    on_step: Callable[[BloxState, Action], None] | None = None,
    game: BloxGame | None = None,
) -> BloxState:
    """Play one full-information game from set-up with the weighted random policy.

    ``on_step(state_after, action)`` is called after every action. Stops at the end of
    the game or after ``max_turns`` turns.
    """
    state = (game or BloxGame(players)).new_initial_state(rng)
    while not state.is_terminal() and state.turn < max_turns:
        action = choose_action(state, rng)
        if action is None:
            break
        state.apply_action(action)
        if on_step:
            on_step(state, action)
    return state
