"""Hypothesis properties of Blockers!: random complete games, the group rule, and legality.

Complete games: tiles are conserved after every turn, a capture never splits a group
(R-BLOCKERS-3), every player ends with four tiles per colour (R-BLOCKERS-6/-7) when no
forced pass delayed anyone, undo restores the exact state, and legal_actions() is exactly
the set of actions the engine accepts; an illegal action leaves the state unchanged.
"""

from __future__ import annotations

import random

from hypothesis import given, settings
from hypothesis import strategies as st
from test_blockers_support import snapshot

from engine.blockers import (
    BlockersGame,
    Capture,
    ForcedPass,
    Place,
    Tile,
    capturable_map,
    count_groups,
    cut_vertices,
    groups,
    split_parts,
)
from engine.blockers.edition import load_edition
from engine.common import IllegalAction

E = load_edition()
SETUPS = [
    ("red", "blue"),
    ("red", "blue", "green"),
    ("yellow", "violet", "red", "green"),
    ("red", "green", "blue", "yellow", "violet"),
    (("red", "green"), ("blue", "yellow")),
]


def _conserved(state) -> None:
    for colour in state.game.colors:
        faces = [t.face for t in state.board if t is not None and t.color == colour]
        faces += [f for d in state.captured.values() for f in d.get(colour, [])]
        faces += state.racks[colour] + state.supplies[colour]
        assert sorted(faces) == sorted(E.faces), colour
    for colour in set(E.colors) - set(state.game.colors):
        assert all(t is None or t.color != colour for t in state.board)


@settings(max_examples=80, deadline=None)
@given(setup=st.sampled_from(SETUPS), seed=st.integers(0, 2**32 - 1))
def test_random_complete_games(setup, seed: int) -> None:
    game = BlockersGame(list(setup))
    rng = random.Random(seed)
    state = game.new_initial_state(rng)
    forced_passes = 0
    while not state.is_terminal():
        actions = list(state.legal_actions())
        assert actions
        action = rng.choice(actions)
        if rng.random() < 0.05:  # undo restores exactly
            before = snapshot(state)
            state.apply_action(action)
            assert state.undo() == action
            assert snapshot(state) == before
        if isinstance(action, Capture):
            colour = action.captured.color
            size = len(split_parts(state.board, E.neighbours, action.space))
            before_groups = count_groups(state.board, E.neighbours, [colour])
            state.apply_action(action)
            after_groups = count_groups(state.board, E.neighbours, [colour])
            # a lone tile's group disappears; any other group survives in one piece
            assert after_groups == before_groups - (1 if size == 0 else 0)
        else:
            forced_passes += isinstance(action, ForcedPass)
            state.apply_action(action)
        _conserved(state)
        assert all(len(r) <= E.rack_size for r in state.racks.values())
    if forced_passes == 0:
        assert state.ended == "end"
        assert all(len(state.racks[c]) == 4 for c in game.colors)
        assert all(not s for s in state.supplies.values())
        per_player = {p.name: 0 for p in game.players}
        for a in state.history:
            per_player[game.players[game.owner[a.color]].name] += 1
        assert set(per_player.values()) == {24 * len(game.players[0].colors)}
    assert state.winners() and set(state.winners()) <= {p.name for p in game.players}


def _random_action(state, rng: random.Random):
    colour = rng.choice(state.game.colors + ("violet",))
    face = rng.choice(E.faces + ("nope",))
    space = rng.randrange(81)
    if rng.random() < 0.1:
        return ForcedPass()
    occupant = state.board[space]
    if occupant is not None and rng.random() < 0.8:
        return Capture(colour, face, space, occupant)
    if rng.random() < 0.5 and state.racks.get(colour):
        face = rng.choice(state.racks[colour])
        space = rng.choice(E.targets[face])
        occupant = state.board[space]
        return Place(colour, face, space) if occupant is None else Capture(colour, face, space, occupant)
    return Place(colour, face, space)


@settings(max_examples=50, deadline=None)
@given(setup=st.sampled_from(SETUPS), seed=st.integers(0, 2**32 - 1), turns=st.integers(0, 130))
def test_legal_actions_are_exactly_the_accepted_ones(setup, seed: int, turns: int) -> None:
    game = BlockersGame(list(setup))
    rng = random.Random(seed)
    state = game.new_initial_state(rng)
    for _ in range(turns):
        if state.is_terminal():
            break
        state.apply_action(rng.choice(list(state.legal_actions())))
    legal = set(state.legal_actions())
    # every rack tile on every space, both as a placement and as a capture
    for colour in game.colors:
        for face in state.racks[colour]:
            for space in range(81):
                occ = state.board[space]
                for a in (Place(colour, face, space), Capture(colour, face, space, occ or Tile("blue", "A"))):
                    try:
                        state.check_action(a)
                        accepted = True
                    except IllegalAction:
                        accepted = False
                    assert accepted == (a in legal), a
    # arbitrary (mostly illegal) actions leave the state exactly unchanged
    for _ in range(40):
        a = _random_action(state, rng)
        before = snapshot(state)
        try:
            state.apply_action(a)
        except IllegalAction as exc:
            assert exc.rule.startswith("R-BLOCKERS-")
            assert snapshot(state) == before
        else:
            assert a in legal or (isinstance(a, ForcedPass) and any(isinstance(x, ForcedPass) for x in legal))
            state.undo()
            assert snapshot(state) == before


def _random_board(rng: random.Random, fill: float, colours: int):
    return [Tile(E.colors[rng.randrange(colours)], None) if rng.random() < fill else None for _ in range(81)]


def _components(cells: set[int]) -> int:
    cells = set(cells)
    n = 0
    while cells:
        n += 1
        todo = [cells.pop()]
        while todo:
            v = todo.pop()
            for w in E.neighbours[v]:
                if w in cells:
                    cells.remove(w)
                    todo.append(w)
    return n


@settings(max_examples=60, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), fill=st.floats(0.2, 1.0), colours=st.integers(1, 5))
def test_group_rule_functions_agree_with_brute_force(seed: int, fill: float, colours: int) -> None:
    rng = random.Random(seed)
    board = _random_board(rng, fill, colours)
    cap = capturable_map(board, E.neighbours)
    total = 0
    for colour in E.colors[:colours]:
        cells = {i for i, t in enumerate(board) if t is not None and t.color == colour}
        total += _components(cells)
        assert count_groups(board, E.neighbours, [colour]) == _components(cells)
    assert len(groups(board, E.neighbours)) == total
    for g in groups(board, E.neighbours):
        cuts = cut_vertices(g, E.neighbours)
        for v in g:
            splits = len(g) > 2 and _components(set(g) - {v}) > 1
            assert (v in cuts) == splits
            assert cap[v] == (not splits)
            assert (len(split_parts(board, E.neighbours, v)) > 1) == splits
    assert all(not cap[i] for i, t in enumerate(board) if t is None)
