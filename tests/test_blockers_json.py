"""Blockers! JSON: the state round-trips, its ``cells`` are the ``blockers`` observation state
(rows in letter order, columns in number order), and actions round-trip."""

from __future__ import annotations

import json
import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from engine.blockers import BlockersGame, BlockersState, Place, Tile, action_from_json

GAMES = [
    BlockersGame(["red", "blue"]),
    BlockersGame(["green", "violet", "red"]),
    BlockersGame(["red", "green", "blue", "yellow", "violet"]),
    BlockersGame([("red", "green"), ("blue", "yellow")]),
]


def _played(game: BlockersGame, seed: int, turns: int) -> BlockersState:
    rng = random.Random(seed)
    state = game.new_initial_state(rng)
    for _ in range(turns):
        if state.is_terminal():
            break
        state.apply_action(rng.choice(list(state.legal_actions())))
    return state


@settings(max_examples=25, deadline=None)
@given(game=st.sampled_from(GAMES), seed=st.integers(0, 10**6), turns=st.integers(0, 130))
def test_state_round_trip(game: BlockersGame, seed: int, turns: int) -> None:
    state = _played(game, seed, turns)
    text = json.dumps(state.to_json())
    back = BlockersState.from_json(json.loads(text))
    assert back == state
    assert back.to_json() == state.to_json()
    assert list(back.legal_actions()) == list(state.legal_actions())
    assert back.scores() == state.scores() and back.is_terminal() == state.is_terminal()
    for action in list(state.legal_actions())[:3]:
        assert action_from_json(json.loads(json.dumps(action.to_json())), game.edition) == action


def test_cells_are_the_observation_state_in_board_order() -> None:
    game = GAMES[0]
    state = game.new_initial_state(random.Random(1), first_player=0)
    face = next(f for f in state.racks["red"] if f != "wild")
    space = game.edition.targets[face][-1]
    state.apply_action(Place("red", face, space))
    obs = state.observation_state()
    assert set(obs) == {"cells"}
    r, c = divmod(space, 9)
    assert obs["cells"][r][c] == {"color": "red", "face": face}
    assert sum(cell is not None for row in obs["cells"] for cell in row) == 1
    name = game.edition.space_name(space)
    assert "ABCDEFGHI"[r] == name[0] and str(c + 1) == name[1:]
    assert state.to_json()["cells"] == obs["cells"]
    assert state.to_json()["hidden"]["racks"]["red"] == state.racks["red"]


def test_table_state_round_trip_keeps_unknown_tiles() -> None:
    game = GAMES[1]
    state = game.new_table_state(1)
    state.apply_action(Place("violet", "C", game.edition.space_index("C4")))
    data = json.loads(json.dumps(state.to_json()))
    assert data["hidden"]["racks"]["violet"] == [None] * 5
    back = BlockersState.from_json(data)
    assert back == state and back.tile_at("C4") == Tile("violet", "C")


@pytest.mark.parametrize(
    "corrupt",
    [
        lambda d: d["hidden"]["racks"]["red"].append("A"),  # one tile too many
        lambda d: d["hidden"]["supplies"]["red"].pop(),  # one tile missing
        lambda d: d["hidden"]["racks"]["red"].__setitem__(0, d["hidden"]["supplies"]["red"][0]),  # twice
        lambda d: d["cells"][0].__setitem__(0, {"color": "violet", "face": "A"}),  # colour not in game
        lambda d: d["cells"][0].__setitem__(0, {"color": "red", "face": "I"}),  # wrong row (R-BLOCKERS-2)
        lambda d: d.__setitem__("game", "blox"),
    ],
)
def test_inconsistent_state_json_is_rejected(corrupt) -> None:
    state = GAMES[0].new_initial_state(random.Random(2))
    data = state.to_json()
    corrupt(data)
    with pytest.raises(ValueError):
        BlockersState.from_json(data)
