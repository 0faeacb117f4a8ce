"""Blockers! table mode: naming the placement or capture from two stable boards.

Racks are face down in table mode, so a face is possible when it is unseen; the group rule
(R-BLOCKERS-3) and whose colour it is are decided by colour alone, also for unread faces.
"""

from __future__ import annotations

import copy
import random

from hypothesis import given, settings
from hypothesis import strategies as st
from test_blockers_support import build, diagram, line

from engine.blockers import BlockersGame, Capture, ForcedPass, Place, Tile, infer, infer_action
from engine.common import VerdictKind

TWO = BlockersGame(["red", "blue"])
E = TWO.edition


def sp(name: str) -> int:
    return E.space_index(name)


def obs_after(state, changes: dict[str, dict | None], stable: bool = True, occluded=()) -> dict:
    cells = copy.deepcopy(state.observation_state()["cells"])
    for name, cell in changes.items():
        i = sp(name)
        cells[i // 9][i % 9] = cell
    return {"game": "blockers", "frame": 1, "t": 0.1, "stable": stable, "occluded": [list(o) for o in occluded],
            "confidence": 0.99, "state": {"cells": cells}}


def table_state(tiles: dict[str, str] | None = None, current: int = 0):
    """A table-mode state whose board holds ``tiles`` (placed through the engine)."""
    state = TWO.new_table_state(current)
    for name, (colour, face) in (tiles or {}).items():
        state.current = TWO.owner[colour]
        state.apply_action(Place(colour, face, sp(name)))
    state.current = current
    state._history.clear()
    return state


def test_no_change_and_unstable() -> None:
    state = table_state()
    assert infer_action(state, obs_after(state, {})).kind is VerdictKind.NO_CHANGE
    unstable = obs_after(state, {"E5": {"color": "red", "face": "5"}}, stable=False)
    assert infer_action(state, unstable).kind is VerdictKind.NO_CHANGE


def test_placement_is_named_and_applies_in_table_mode() -> None:
    state = table_state()
    v = infer_action(state, obs_after(state, {"E5": {"color": "red", "face": "5"}}))
    assert v.kind is VerdictKind.ACTION and v.player == "red"
    assert v.action == Place("red", "5", sp("E5"))
    assert v.to_json()["action"] == {"type": "place", "color": "red", "face": "5", "space": "E5"}
    state.apply_action(v.action)
    assert state.tile_at("E5") == Tile("red", "5") and len(state.racks["red"]) == 5
    assert state.racks["red"].count(None) == 5 and len(state.supplies["red"]) == 22


def test_capture_is_named() -> None:
    state = table_state({"E5": ("blue", "E")})
    v = infer_action(state, obs_after(state, {"E5": {"color": "red", "face": "wild"}}))
    assert v.kind is VerdictKind.ACTION
    assert v.action == Capture("red", "wild", sp("E5"), Tile("blue", "E"))
    state.apply_action(v.action)
    assert state.captured["red"] == {"blue": ["E"]}


def test_visible_rules_are_checked_strictly() -> None:
    state = table_state({**{s: ("blue", s[1]) for s in ["D4", "D5", "D6"]}, "A1": ("red", "A")})
    # wrong colour for the turn (R-BLOCKERS-2)
    v = infer_action(state, obs_after(state, {"I9": {"color": "blue", "face": "9"}}))
    assert v.kind is VerdictKind.ILLEGAL and v.rule == "R-BLOCKERS-2" and v.player == "blue"
    # wrong space for the face (R-BLOCKERS-2)
    v = infer_action(state, obs_after(state, {"I9": {"color": "red", "face": "5"}}))
    assert (v.kind, v.rule) == (VerdictKind.ILLEGAL, "R-BLOCKERS-2")
    # a face already on the board cannot come from the rack (R-BLOCKERS-2)
    v = infer_action(state, obs_after(state, {"A2": {"color": "red", "face": "A"}}))
    assert (v.kind, v.rule) == (VerdictKind.ILLEGAL, "R-BLOCKERS-2")
    # capture from the middle of a line of three (R-BLOCKERS-3), and its explanation
    v = infer_action(state, obs_after(state, {"D5": {"color": "red", "face": "D"}}))
    assert (v.kind, v.rule) == (VerdictKind.ILLEGAL, "R-BLOCKERS-3")
    assert "D4" in v.why and "D6" in v.why and "split" in v.why


def test_unread_face_placement_lists_the_faces_that_would_be_legal() -> None:
    # red E already on the board: only 5, flower or wild could be the new tile on E5.
    state = table_state({"E1": ("red", "E")})
    v = infer_action(state, obs_after(state, {"E5": {"color": "red", "face": None}}))
    assert v.kind is VerdictKind.ACTION and v.action == Place("red", None, sp("E5"))
    assert {a.face for a in v.candidates} == {"5", "flower", "wild"}
    assert all(a.space == sp("E5") and a.color == "red" for a in v.candidates)
    state.apply_action(v.action)  # table mode accepts the unread tile
    assert state.tile_at("E5") == Tile("red", None)
    state.reveal_face("E5", "flower")
    assert state.tile_at("E5") == Tile("red", "flower")
    state.validate()


def test_unread_face_still_checks_the_group_rule_and_the_turn() -> None:
    state = table_state({s: ("blue", s[1]) for s in ["D4", "D5", "D6"]})
    v = infer_action(state, obs_after(state, {"D5": {"color": "red", "face": None}}))
    assert (v.kind, v.rule) == (VerdictKind.ILLEGAL, "R-BLOCKERS-3")
    assert "into 2 groups" in v.why
    v = infer_action(state, obs_after(state, {"D4": {"color": "red", "face": None}}))
    assert v.kind is VerdictKind.ACTION and isinstance(v.action, Capture)
    assert {a.face for a in v.candidates} == {"D", "4", E.space_symbol[sp("D4")], "wild"}
    v = infer_action(state, obs_after(state, {"I1": {"color": "blue", "face": None}}))
    assert (v.kind, v.rule) == (VerdictKind.ILLEGAL, "R-BLOCKERS-2")


def test_unread_face_with_no_possible_face_is_illegal() -> None:
    # E, 5, flower and wild of red are all visible elsewhere: nothing red may go on E5.
    state = table_state({"E1": ("red", "E"), "A5": ("red", "5"), "D4": ("red", "flower"), "I9": ("red", "wild")})
    v = infer_action(state, obs_after(state, {"E5": {"color": "red", "face": None}}))
    assert (v.kind, v.rule) == (VerdictKind.ILLEGAL, "R-BLOCKERS-2")


def test_unread_face_with_a_known_rack_names_the_tile() -> None:
    state = build(TWO, diagram({}), racks={"red": ["E", "1", "2", "3", "4"]})
    v = infer_action(state, obs_after(state, {"E5": {"color": "red", "face": None}}))
    assert v.kind is VerdictKind.ACTION and v.action == Place("red", "E", sp("E5"))


def test_several_changes_or_a_removal_are_unrecognised() -> None:
    state = table_state({"C3": ("blue", "C")})
    v = infer_action(state, obs_after(state, {"E5": {"color": "red", "face": "5"}, "E6": {"color": "red", "face": "6"}}))
    assert v.kind is VerdictKind.UNRECOGNISED and len(v.candidates) == 2
    v = infer_action(state, obs_after(state, {"C3": None}))
    assert v.kind is VerdictKind.UNRECOGNISED and "C3" in v.why
    v = infer_action(state, {"state": {"cells": [[None] * 9] * 8}, "stable": True})
    assert v.kind is VerdictKind.UNRECOGNISED
    v = infer_action(state, obs_after(state, {"E5": {"color": "pink", "face": "5"}}))
    assert v.kind is VerdictKind.UNRECOGNISED
    v = infer_action(state, obs_after(state, {"E5": {"color": "red", "face": "Z"}}))
    assert v.kind is VerdictKind.UNRECOGNISED


def test_bare_cells_are_accepted() -> None:
    state = table_state()
    cells = obs_after(state, {"E5": {"color": "red", "face": "E"}})["state"]["cells"]
    assert infer(state, cells).action == Place("red", "E", sp("E5"))
    assert infer(state, {"cells": cells}).action == Place("red", "E", sp("E5"))


def test_occluded_spaces_and_unread_faces_of_old_tiles_are_not_changes() -> None:
    state = table_state({"C3": ("blue", "C")})
    v = infer_action(state, obs_after(state, {"C3": None}, occluded=[(2, 2)]))
    assert v.kind is VerdictKind.NO_CHANGE
    v = infer_action(state, obs_after(state, {"C3": {"color": "blue", "face": None}}))
    assert v.kind is VerdictKind.NO_CHANGE


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), players=st.sampled_from([2, 3, 5]), hide=st.floats(0, 0.5))
def test_replaying_a_game_through_table_mode(seed: int, players: int, hide: float) -> None:
    """A full-information game seen only through its boards: every turn is named (or, with
    an unread face, is among the candidates), and the table state keeps the same score."""
    game = BlockersGame(list(E.colors[:players]))
    rng = random.Random(seed)
    truth = game.new_initial_state(rng)
    table = game.new_table_state(truth.current)
    while not truth.is_terminal():
        action = rng.choice(list(truth.legal_actions()))
        truth.apply_action(action)
        if isinstance(action, ForcedPass):
            table.apply_action(ForcedPass(action.revealed))
            continue
        obs = {"stable": True, "state": truth.observation_state()}
        i = action.space
        if rng.random() < hide:
            obs["state"]["cells"][i // 9][i % 9]["face"] = None
        verdict = infer_action(table, obs)
        assert verdict.kind is VerdictKind.ACTION, verdict
        assert verdict.player == game.players[game.owner[action.color]].name
        assert verdict.action == action or action in verdict.candidates
        table.apply_action(action)
        assert table.board == truth.board
    assert table.is_terminal() and table.scores() == truth.scores()
    table.validate()
