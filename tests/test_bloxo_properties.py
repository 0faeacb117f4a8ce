"""Property tests over random complete Bloxo games (hypothesis).

Each example plays a whole game with a random policy, full information, while a parallel
table-mode state follows it only through observations and verdicts. Checked at every
turn: cards are conserved (R-BLOXO-7), the tableau is edge-consistent (R-BLOXO-3), every
placement scores the sizes of its blocks computed independently (R-BLOXO-4), inference
names the action played, illegal attempts change nothing, and the game ends per R-BLOXO-6.
"""

from __future__ import annotations

import json
import random

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from engine.bloxo import (
    END_ALL_PLAYED,
    END_BLOCKED,
    BloxoGame,
    BloxoState,
    Pass,
    Place,
    Redraw,
    TableChange,
    infer,
    load_edition,
)
from engine.common import IllegalAction, VerdictKind

ED = load_edition()
# quadrant index -> offset inside the card, written out independently of engine.bloxo.grid
OFFSET = [(0, 0), (1, 0), (1, 1), (0, 1)]


def fine_grid(state: BloxoState) -> dict[tuple[int, int], tuple[str, tuple[int, int]]]:
    """quadrant cell -> (colour, card position), from the public observation state only."""
    cells = {}
    for c in state.observation_state()["cards"]:
        x, y = c["at"]
        for q, (colour, _shape) in enumerate(c["quadrants"]):
            dx, dy = OFFSET[q]
            cells[(2 * x + dx, 2 * y + dy)] = (colour, (x, y))
    return cells


def blocks(cells) -> list[set]:
    """4-connected one-colour groups by union-find (a different algorithm from the engine's)."""
    parent = {c: c for c in cells}

    def find(c):
        while parent[c] != c:
            parent[c] = parent[parent[c]]
            c = parent[c]
        return c

    for (x, y), (colour, _) in cells.items():
        for n in ((x + 1, y), (x, y + 1)):
            if n in cells and cells[n][0] == colour:
                parent[find((x, y))] = find(n)
    groups: dict = {}
    for c in cells:
        groups.setdefault(find(c), set()).add(c)
    return list(groups.values())


def expected_points(state: BloxoState, at) -> int:
    cells = fine_grid(state)
    total = 0
    for group in blocks(cells):
        owners = {cells[c][1] for c in group}
        if at in owners and len(owners) > 1:
            total += len(group)
    return total


def assert_edge_consistent(state: BloxoState) -> None:
    cells = fine_grid(state)
    for (x, y), (colour, owner) in cells.items():
        for n in ((x + 1, y), (x, y + 1)):
            if n in cells and cells[n][1] != owner:
                assert cells[n][0] == colour, f"touching quadrants {(x, y)} and {n} differ"


def assert_conserved(state: BloxoState) -> None:
    everything = [p.card for p in state.tableau.values()] + state.draw_pile + state.out_of_game
    everything += [c for h in state.hands for c in h]
    assert sorted(everything) == sorted(ED.card_ids)
    assert state.hand_counts == [len(h) for h in state.hands]
    assert state.pile_count == len(state.draw_pile) and state.out_count == len(state.out_of_game)


def same_placement(a: Place, b: Place) -> bool:
    return (a.at == b.at and ED.card(a.card).design == ED.card(b.card).design
            and ED.card(a.card).seen(a.rotation) == ED.card(b.card).seen(b.rotation))


def check_enumeration(state: BloxoState, rng: random.Random) -> None:
    """legal_placements() equals brute force over hand x positions x rotations (by outcome)."""
    hand = state.hands[state.current]
    legal = {(ED.card(a.card).design, a.at, ED.card(a.card).seen(a.rotation)) for a in state.legal_placements()}
    xs = [p[0] for p in state.tableau]
    ys = [p[1] for p in state.tableau]
    brute = set()
    for x in range(min(xs) - 1, max(xs) + 2):
        for y in range(min(ys) - 1, max(ys) + 2):
            for c in hand:
                for r in range(4):
                    try:
                        state.check(Place(c, (x, y), r))
                    except IllegalAction as exc:
                        assert exc.rule == "R-BLOXO-3"
                        continue
                    brute.add((ED.card(c).design, (x, y), ED.card(c).seen(r)))
    assert legal == brute


def play(seed: int, players: int, pass_rate: float) -> BloxoState:
    rng = random.Random(seed)
    game = BloxoGame(["ann", "bob", "cy", "dee"][:players], ED, first=rng.randrange(players))
    state = game.new_initial_state(rng)
    table = game.new_table_state({"stable": True, "state": state.observation_state()})
    assert_conserved(state)
    step = 0
    while not state.is_terminal():
        actions = list(state.legal_actions())
        placements = [a for a in actions if isinstance(a, Place)]
        if isinstance(actions[0], Redraw) and rng.random() < 0.5:
            action = actions[0]
        elif placements and rng.random() >= pass_rate:
            action = rng.choice(placements)
        else:
            action = rng.choice([a for a in actions if isinstance(a, Pass)])

        if step % 7 == 0:
            check_enumeration(state, rng)
        # An illegal attempt leaves the state exactly as it was.
        before = json.dumps(state.to_json(), sort_keys=True)
        bad = Place(rng.choice(ED.card_ids), (rng.randint(-4, 4), rng.randint(-4, 4)), rng.randrange(4))
        if not any(same_placement(bad, p) and bad.card in state.hands[state.current] for p in placements):
            try:
                state.apply_action(bad)
            except IllegalAction:
                pass
            else:
                raise AssertionError(f"{bad} was accepted")
            assert json.dumps(state.to_json(), sort_keys=True) == before

        player = state.current_player()
        forced = not placements
        points = state.apply_action(action)
        assert_conserved(state)
        assert_edge_consistent(state)

        if isinstance(action, Pass):
            assert points == -4 and state.log[-1].forced == forced
            table.apply_action(Pass(forced=forced))
        else:
            if isinstance(action, Place):
                assert points == expected_points(state, action.at)
            verdict = infer(table, {"stable": True, "state": state.observation_state()})
            assert verdict.kind is VerdictKind.ACTION, verdict
            if isinstance(action, Place):
                assert verdict.change is TableChange.PLACED and verdict.player == player
                assert same_placement(verdict.action, action) and verdict.points == points
            else:
                assert verdict.change is TableChange.REDRAW
            table.apply_action(verdict.action)
        assert table.looks() == state.looks()
        assert table.scores() == state.scores() and table.current == state.current
        assert table.hand_counts == state.hand_counts and table.pile_count == state.pile_count
        step += 1

    assert table.is_terminal() and table.end_reason == state.end_reason
    if state.end_reason == END_ALL_PLAYED:
        assert sum(state.hand_counts) == 0 and state.pile_count == 0
    else:
        assert state.end_reason == END_BLOCKED
        active = {i for i, n in enumerate(state.hand_counts) if n}
        assert active <= state.stuck
    assert sum(r.points for r in state.log) == sum(state.score_list)
    again = BloxoState.from_json(game, json.loads(json.dumps(state.to_json())))
    assert again == state
    return state


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 2**32 - 1), players=st.integers(2, 4), pass_rate=st.sampled_from([0.0, 0.1, 0.5]))
def test_random_complete_games(seed, players, pass_rate):
    play(seed, players, pass_rate)

