"""Random complete games, for property tests and benchmarks.

The policy weights action types so that random games make progress towards the end (a
uniform choice mostly exchanges cards and shuffles figures about, and rarely finishes).
"""

from __future__ import annotations

import random
from collections.abc import Callable

from engine.blox.actions import Action, Move
from engine.blox.board import Figure, Pos, Side, ray
from engine.blox.state import BloxGame, BloxState
from engine.common import IllegalAction

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


def recorded_game(
    players: list[str],
    seed: int,
    *,
    illegal_attempts: int = 1,
    max_turns: int = 5000,
) -> tuple[list[dict], BloxState]:
    """A table recording of a random complete game, as the camera and the page would give it.

    Returns the lines of a game recording and the final full-information state. Lines are
    ``blox`` observations (observation.md) and, for the actions a camera cannot see, a
    declaration the players make on the page: ``{"t": .., "declare": {"player": ..,
    "action": {"type": "exchange", ...}}}``. Between actions a hand covers a few cells
    (``stable`` false, ``occluded`` set). ``illegal_attempts`` times, a player first makes
    an illegal move and takes it back before playing the real action.
    """
    rng = random.Random(seed)
    game = BloxGame(players)
    state = game.new_initial_state(rng)
    size = game.size
    lines: list[dict] = []
    clock = 0.0
    frame = 0

    def observe(board_cells: list, stable: bool, occluded: list[list[int]] | None = None) -> None:
        nonlocal clock, frame
        obs = {
            "game": "blox",
            "frame": frame,
            "t": round(clock, 3),
            "stable": stable,
            "occluded": occluded or [],
            "confidence": 1.0,
            "state": {"cells": board_cells},
        }
        if frame == 0:
            obs["state"]["colors"] = [list(row) for row in game.edition.board]
        lines.append(obs)
        frame += 1
        clock += 0.5

    def cells_of(s: BloxState) -> list:
        return s.observation_state()["cells"]

    def hand_over(s: BloxState) -> None:
        r, c = rng.randrange(size), rng.randrange(size)
        cells = cells_of(s)
        covered = [[r, c]] + [[rr, cc] for rr, cc in ((r + 1, c), (r, c + 1)) if rr < size and cc < size]
        for rr, cc in covered:
            cells[rr][cc] = None  # what is under the hand is unknown; the truth marks it occluded
        observe(cells, False, covered)

    observe(cells_of(state), True)
    attempts_left = illegal_attempts
    while not state.is_terminal() and state.turn < max_turns:
        action = choose_action(state, rng)
        if action is None:
            break
        if action.type == "exchange":
            lines.append(
                {"t": round(clock, 3), "declare": {"player": state.current.color, "action": action.to_json()}}
            )
            clock += 0.5
            state.apply_action(action)
            continue
        if attempts_left and state.turn > 2 * len(players):
            figures = state.figures(state.current.color)
            for frm in figures:
                targets = [p for side in Side for p in ray(size, frm, side)]
                skips = [p for p in targets if state.cell(p) is None and not _legal_move_to(state, frm, p)]
                if skips:
                    bad = state.clone()
                    to = rng.choice(skips)
                    bad.board = bad._with({frm: None, to: Figure(state.current.color)})
                    hand_over(state)
                    observe(cells_of(bad), True)
                    hand_over(bad)
                    observe(cells_of(state), True)
                    attempts_left -= 1
                    break
        hand_over(state)
        state.apply_action(action)
        hand_over(state)
        observe(cells_of(state), True)
        if action.type == "knock" and action.card_count > 3:
            # The camera sees a knock-off but not how many cards paid for it.
            lines.append({"t": round(clock, 3), "correct": {"player": players[(state.turn - 1) % len(players)],
                                                           "action": action.to_json()}})
            clock += 0.5
    return lines, state


def _legal_move_to(state: BloxState, frm: Pos, to: Pos) -> bool:
    try:
        state.board_effect(Move((state.space_color(to),), None, frm, to))
    except IllegalAction:
        return False
    return True
