"""Table mode (R-BLOX-15): naming the action behind a change of the observed board."""

from __future__ import annotations

import copy

from blox_helpers import F, T, cards, scenario, uniform, with_row
from engine import VerdictKind
from engine.blox import BloxGame, Build, Destroy, Entrance, Knock, Move, Place, Side, infer


def observe(state, changes):
    """The state's board as observation JSON, with ``changes`` ({(r, c): cell JSON}) applied."""
    cells = copy.deepcopy(state.observation_state()["cells"])
    for (r, c), cell in changes.items():
        cells[r][c] = cell
    return cells


def table(**kwargs):
    return scenario(table_mode=True, **kwargs)


def test_no_change():
    state = table(colors=uniform("w"), pieces={(4, 4): F("green")})
    verdict = infer(state, observe(state, {}))
    assert verdict.kind is VerdictKind.NO_CHANGE


def test_place_named_with_its_entrance_and_implied_card():
    colors = with_row(uniform("k"), 5, "kkkkkkkgk")
    state = table(colors=colors)
    verdict = infer(state, observe(state, {(5, 7): {"figure": "green"}}))
    assert verdict.kind is VerdictKind.ACTION, verdict
    assert isinstance(verdict.action, Place) and verdict.action.to == (5, 7)
    assert verdict.implied_cards == ("grey",)
    state.apply_action(verdict.action)
    assert state.cell((5, 7)) == F("green") and state.current.color == "brown"


def test_figure_that_skipped_the_first_space_of_its_colour():
    colors = with_row(uniform("k"), 4, "kkkkwkkwk")
    state = table(colors=colors, pieces={(4, 0): F("green")})
    verdict = infer(state, observe(state, {(4, 0): None, (4, 7): {"figure": "green"}}))
    assert verdict.kind is VerdictKind.ILLEGAL
    assert verdict.rule == "R-BLOX-2"
    assert "[4,4], the first white space" in verdict.why
    assert isinstance(verdict.action, Move)


def test_move_destroy_knock_build_are_named():
    colors = with_row(uniform("w"), 4, "wwwwkwwww")
    state = table(
        colors=colors,
        pieces={(4, 0): F("green"), (0, 0): T("k"), (2, 0): T("g"), (6, 6): F("brown"), (8, 8): T("kkkk")},
        phase=1,
        blocks={"green": "kg"},
    )
    move = infer(state, observe(state, {(4, 0): None, (4, 4): {"figure": "green"}}))
    assert move.kind is VerdictKind.ACTION and move.action == Move(cards("k"), None, (4, 0), (4, 4))
    destroy = infer(state, observe(state, {(4, 0): None, (2, 0): {"figure": "green"}}))
    assert destroy.kind is VerdictKind.ACTION and destroy.action == Destroy(cards("g"), None, (4, 0), (2, 0))
    assert destroy.points == 1
    build = infer(state, observe(state, {(4, 0): {"tower": ["grey", "black"]}}))
    assert build.kind is VerdictKind.ACTION and build.action == Build(cards("kg"), None, (4, 0), ("grey", "black"))
    assert build.points == 2

    knock_state = table(colors=with_row(uniform("w"), 4, "wwwwwwgww"), pieces={(4, 0): F("green"), (4, 6): F("brown"), (0, 0): T("k")})
    knock = infer(knock_state, observe(knock_state, {(4, 0): None, (4, 6): {"figure": "green"}}))
    assert knock.kind is VerdictKind.ACTION and isinstance(knock.action, Knock)
    assert knock.implied_cards == ("grey",) * 3  # at least three; the table may correct the count


def test_figure_passed_a_grey_space_on_its_way_to_the_grey_tower():
    colors = with_row(uniform("k"), 4, "kkgkkkkkk")
    state = table(colors=colors, pieces={(4, 0): F("green"), (4, 5): T("gw")}, phase=2)
    verdict = infer(state, observe(state, {(4, 0): None, (4, 5): {"figure": "green"}}))
    assert verdict.kind is VerdictKind.ILLEGAL and verdict.rule == "R-BLOX-3"
    assert "passed a grey space [4,2] on its way to the tower" in verdict.why


def test_two_figures_moved_at_once():
    state = table(colors=uniform("w"), pieces={(4, 0): F("green"), (6, 6): F("brown"), (0, 0): T("k")})
    verdict = infer(
        state,
        observe(state, {(4, 0): None, (4, 1): {"figure": "green"}, (6, 6): None, (6, 7): {"figure": "brown"}}),
    )
    assert verdict.kind is VerdictKind.UNRECOGNISED
    assert "2 figures moved at once" in verdict.why
    assert Move(cards("w"), None, (4, 0), (4, 1)) in verdict.candidates


def test_build_of_the_wrong_height():
    state = table(colors=uniform("w"), pieces={(4, 4): F("green"), (0, 0): T("kk"), (8, 8): T("kk")}, phase=2, blocks={"green": "kkk"})
    verdict = infer(state, observe(state, {(4, 4): {"tower": ["black", "black"]}}))
    assert verdict.kind is VerdictKind.ILLEGAL and verdict.rule == "R-BLOX-4"
    assert "exactly 3 blocks, not 2" in verdict.why


def test_tower_that_grew():
    state = table(colors=uniform("w"), pieces={(4, 4): T("kk"), (0, 0): T("kk")}, phase=2)
    verdict = infer(state, observe(state, {(4, 4): {"tower": ["black", "black", "grey"]}}))
    assert verdict.kind is VerdictKind.UNRECOGNISED and verdict.rule == "R-BLOX-6"
    assert "grew from 2 to 3 blocks" in verdict.why


def test_wrong_player_acts():
    state = table(colors=uniform("w"), pieces={(6, 6): F("brown"), (0, 0): T("k")})
    verdict = infer(state, observe(state, {(6, 6): None, (6, 7): {"figure": "brown"}}))
    assert verdict.kind is VerdictKind.ILLEGAL and verdict.rule == "R-BLOX-16"
    assert "green's turn" in verdict.why and verdict.player == "brown"


def test_figure_removed_and_tower_vanished_are_explained():
    state = table(colors=uniform("w"), pieces={(4, 4): F("green"), (0, 0): T("k"), (8, 8): T("k")})
    gone = infer(state, observe(state, {(4, 4): None}))
    assert gone.kind is VerdictKind.UNRECOGNISED and "left the board" in gone.why
    vanished = infer(state, observe(state, {(0, 0): None}))
    assert vanished.kind is VerdictKind.UNRECOGNISED and "disappeared" in vanished.why


def test_malformed_observation_is_unrecognised_not_a_crash():
    state = table(colors=uniform("w"))
    verdict = infer(state, [[None] * 9] * 8)
    assert verdict.kind is VerdictKind.UNRECOGNISED and "malformed" in verdict.why
    cells = observe(state, {(1, 1): {"figure": "green", "tower": ["black"]}})
    assert "both" in infer(state, cells).why


def test_table_state_from_a_setup_observation():
    game = BloxGame(["green", "brown", "blue"])
    full = game.new_initial_state(__import__("random").Random(2))
    state = game.table_state(full.observation_state()["cells"])
    assert state.board == full.board and state.phase == 1 and not state.full_information
    place = next(a for a in state.legal_actions() if isinstance(a, Place))
    after = state.clone()
    after.apply_action(place)
    verdict = infer(state, after.observation_state()["cells"])
    assert verdict.kind is VerdictKind.ACTION
    assert verdict.action.to == place.to and isinstance(verdict.action.entrance, Entrance)


def test_verdict_json_is_an_event_payload():
    colors = with_row(uniform("k"), 5, "kkkkkkkgk")
    state = table(colors=colors)
    data = infer(state, observe(state, {(5, 7): {"figure": "green"}})).to_json()
    assert data["kind"] == "action" and data["player"] == "green"
    assert data["action"]["type"] == "place" and data["action"]["to"] == [5, 7]
    assert data["cards"] == ["grey"]
    assert Side(data["action"]["entrance"][0]) in Side
