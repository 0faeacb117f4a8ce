"""The Blox rulebook's examples (1-5, A-C) and every R-BLOX ruling, legal and illegal."""

from __future__ import annotations

import json
import random

import pytest

from blox_helpers import F, T, cards, scenario, uniform, with_col, with_row
from engine import IllegalAction
from engine.blox import (
    BloxGame,
    Build,
    Destroy,
    Entrance,
    Exchange,
    Figure,
    Knock,
    Move,
    Place,
    Side,
    Tower,
)


def assert_illegal(state, action, rule: str, *words: str) -> IllegalAction:
    """The action is refused for ``rule``, the reason mentions ``words``, the state is untouched."""
    before = json.dumps(state.to_json(), sort_keys=True)
    with pytest.raises(IllegalAction) as err:
        state.apply_action(action)
    assert err.value.rule == rule, err.value
    for word in words:
        assert word in err.value.why, err.value.why
    assert json.dumps(state.to_json(), sort_keys=True) == before
    assert action not in set(state.legal_actions())
    return err.value


def legal(state, action) -> None:
    assert action in set(state.legal_actions()), f"{action} not among the legal actions"
    state.apply_action(action)


# ----------------------------------------------------------------------------- examples


def example1_board() -> list[str]:
    # Column 7, far to near: a grey space on row 1 and the target grey space on row 5.
    return with_col(uniform("k"), 7, "kgkkkgkkk")


def test_example_1_place_a_figure_from_the_near_side():
    state = scenario(colors=example1_board(), hands={"green": "gkkww"})
    draw_before = len(state.draw_pile)
    legal(state, Place(cards("g"), None, Entrance(Side.S, 7), (5, 7)))
    assert state.cell((5, 7)) == Figure("green")
    assert len(state.player("green").hand) == 5 and len(state.draw_pile) == draw_before - 1
    assert state.discard_pile == ("grey",)
    assert state.current.color == "brown"


def test_example_1_same_space_unreachable_from_the_top():
    state = scenario(colors=example1_board(), hands={"green": "gkkww"})
    assert_illegal(state, Place(cards("g"), None, Entrance(Side.N, 7), (5, 7)), "R-BLOX-2", "[1,7]", "first grey")
    # From the top the grey card leads to row 1 instead.
    assert Place(cards("g"), None, Entrance(Side.N, 7), (1, 7)) in set(state.legal_actions())


def example2_state():
    colors = uniform("w")
    for r, c in [(4, 6), (4, 1), (1, 4)]:
        colors = with_row(colors, r, colors[r][:c] + "k" + colors[r][c + 1 :])
    return scenario(
        colors=colors,
        pieces={(4, 4): F("brown"), (2, 4): F("green")},
        hands={"brown": "kwwgp"},
        current=1,
    )


def test_example_2_move_reaches_left_and_right_black_spaces_not_the_blocked_one():
    state = example2_state()
    targets = {a.to for a in state.legal_actions() if isinstance(a, Move) and a.cards == ("black",)}
    assert targets == {(4, 6), (4, 1)}
    assert_illegal(state, Move(cards("k"), None, (4, 4), (1, 4)), "R-BLOX-2", "figure on [2,4] blocks")
    legal(state, Move(cards("k"), None, (4, 4), (4, 6)))
    assert state.cell((4, 6)) == Figure("brown") and state.cell((4, 4)) is None
    assert len(state.player("brown").hand) == 5


def example3_state():
    colors = with_row(uniform("g"), 4, "ggkgggggg")  # a black space on the way to the 2-tower
    return scenario(
        colors=colors,
        pieces={(6, 2): F("blue"), (6, 6): T("wwp"), (2, 2): T("wk")},
        hands={"blue": "wwpkg"},
        current=2,
        phase=3,
    )


def test_example_3_destroy_a_tower_of_three():
    state = example3_state()
    draw_before = len(state.draw_pile)
    legal(state, Destroy(cards("wwp"), None, (6, 2), (6, 6)))
    chris = state.player("blue")
    assert chris.points == 3
    assert chris.block_counts == {"white": 2, "purple": 1}
    assert state.cell((6, 6)) == Figure("blue") and state.cell((6, 2)) is None
    assert len(chris.hand) == 5 and len(state.draw_pile) == draw_before - 3


def test_example_3_black_space_on_the_path_to_the_two_tower():
    state = example3_state()
    assert_illegal(
        state,
        Destroy(cards("wk"), None, (6, 2), (2, 2)),
        "R-BLOX-3",
        "passed a black space [4,2]",
        "black block",
    )


def test_example_4_build_a_tower_of_four():
    state = scenario(
        pieces={(4, 4): F("yellow")},
        hands={"yellow": "kwgpg"},
        blocks={"yellow": "kkwgp"},
        current=3,
        phase=3,
    )
    legal(state, Build(cards("kwgp"), None, (4, 4), cards("kwgp")))
    dirk = state.player("yellow")
    assert state.cell((4, 4)) == T("kwgp")
    assert dirk.points == 4
    assert dirk.block_counts == {"black": 1}
    assert state.figures_off_board("yellow") == 4
    assert len(dirk.hand) == 5


def example5_state():
    colors = with_row(uniform("w"), 4, "wwwwwwpww")
    colors = with_row(colors, 8, "pwwwwwwww")
    return scenario(
        colors=colors,
        pieces={(4, 0): F("green"), (4, 6): F("brown"), (8, 0): F("yellow"), (6, 0): T("kk")},
        hands={"green": "ppppg"},
        phase=3,
    )


def test_example_5_knock_off_with_four_purple_cards():
    state = example5_state()
    assert_illegal(state, Knock(cards("pppp"), None, (4, 0), (8, 0)), "R-BLOX-8", "tower on [6,0]")
    legal(state, Knock(cards("pppp"), None, (4, 0), (4, 6)))
    assert state.player("green").points == 4
    assert state.cell((4, 6)) == Figure("green")
    assert state.figures_off_board("brown") == 4  # returned to Bea
    assert len(state.player("green").hand) == 5


# Towers far from the action that keep the phase and the end where a test needs them.
KEEP_PHASE = {(8, 0): T("kkk"), (8, 2): T("kkk"), (0, 0): T("kkkk"), (0, 2): T("kkkk")}


def example_a_state(blocks: str):
    return scenario(
        colors=uniform("w"),
        pieces={(4, 4): F("green"), (4, 6): T("ggg"), (1, 4): T("k"), **KEEP_PHASE},
        hands={"green": "gggkk"},
        blocks={"green": blocks},
        phase=3,
    )


def test_example_A_rule_of_seven():
    state = example_a_state("kkkppp")
    legal(state, Destroy(cards("ggg"), None, (4, 4), (4, 6)))
    assert state.player("green").block_total == 9
    # With 9 blocks in front of her, Anne cannot destroy the 1-tower in line with her figure.
    again = example_a_state("kkkpppwww")
    assert not any(isinstance(a, Destroy) for a in again.legal_actions())
    assert_illegal(again, Destroy(cards("k"), None, (4, 4), (1, 4)), "R-BLOX-5", "9 blocks")


def test_example_B_joker_completes_a_knock_off():
    colors = with_row(uniform("w"), 4, "wwwwwgwww")
    state = scenario(
        colors=colors, pieces={(4, 0): F("brown"), (4, 5): F("green")}, hands={"brown": "ggkwp"}, current=1
    )
    assert_illegal(state, Knock(cards("gg"), None, (4, 0), (4, 5)), "R-BLOX-8", "3 or more grey")
    draw_before = len(state.draw_pile)
    legal(state, Knock(cards("gg"), "grey", (4, 0), (4, 5)))
    bea = state.player("brown")
    assert bea.points == 3 and not bea.joker_up
    assert len(state.draw_pile) == draw_before - 2 and len(bea.hand) == 5


def test_example_C_joker_alone_draws_nothing():
    colors = with_row(uniform("g"), 4, "gggggggwg")
    state = scenario(colors=colors, pieces={(4, 4): F("blue")}, hands={"blue": "kkggp"}, current=2)
    hand_before, draw_before = state.player("blue").hand, len(state.draw_pile)
    legal(state, Move((), "white", (4, 4), (4, 7)))
    chris = state.player("blue")
    assert chris.hand == hand_before and len(state.draw_pile) == draw_before
    assert not chris.joker_up


# ----------------------------------------------------------------------------- rulings


def test_R_BLOX_1_entrances_cross_the_edge_space_first():
    assert Entrance(Side.N, 3).path(9)[0] == (0, 3)
    assert Entrance(Side.S, 3).path(9)[0] == (8, 3)
    assert Entrance(Side.E, 2).path(9)[0] == (2, 8)
    assert Entrance(Side.W, 2).path(9)[0] == (2, 0)
    state = scenario(colors=uniform("w"), hands={"green": "wkkkk"})
    places = {a for a in state.legal_actions() if isinstance(a, Place)}
    assert len({a.entrance for a in places}) == 36  # every entrance reaches its edge space
    assert Place(cards("w"), None, Entrance(Side.E, 2), (2, 8)) in places


def test_R_BLOX_1_no_such_entrance_or_space():
    state = scenario(colors=uniform("w"), hands={"green": "wkkkk"})
    assert_illegal(state, Place(cards("w"), None, Entrance(Side.N, 9), (0, 9)), "R-BLOX-1")
    assert_illegal(state, Move(cards("w"), None, (4, 4), (4, 9)), "R-BLOX-1")


def test_R_BLOX_2_first_space_of_the_colour_occupied_means_no_trip():
    colors = with_row(uniform("k"), 0, "kkkwkkwkk")
    state = scenario(colors=colors, pieces={(0, 3): F("brown")}, hands={"green": "wkkkk"})
    # Entering from W0 the first white space is [0,3], occupied: the figure never looks further.
    assert_illegal(state, Place(cards("w"), None, Entrance(Side.W, 0), (0, 6)), "R-BLOX-2", "occupied")
    legal(state, Place(cards("w"), None, Entrance(Side.E, 0), (0, 6)))


def test_R_BLOX_2_moves_are_straight():
    state = scenario(colors=uniform("w"), pieces={(4, 4): F("green")}, hands={"green": "wkkkk"})
    assert_illegal(state, Move(cards("w"), None, (4, 4), (5, 5)), "R-BLOX-2", "straight line")
    legal(state, Move(cards("w"), None, (4, 4), (5, 4)))


def test_R_BLOX_2_card_colour_must_match_the_target():
    state = scenario(colors=uniform("w"), pieces={(4, 4): F("green")}, hands={"green": "wkkkk"})
    assert_illegal(state, Move(cards("k"), None, (4, 4), (5, 4)), "R-BLOX-2", "costs 1 white")


def test_R_BLOX_3_adjacent_tower_needs_only_cards_and_phase():
    state = scenario(
        colors=uniform("k"), pieces={(4, 4): F("green"), (4, 5): T("kk")}, hands={"green": "kkwww"}, phase=2
    )
    legal(state, Destroy(cards("kk"), None, (4, 4), (4, 5)))
    assert state.player("green").points == 2


def test_R_BLOX_3_two_grey_blocks_need_two_grey_cards():
    state = scenario(
        colors=uniform("w"), pieces={(4, 4): F("green"), (4, 7): T("gg")}, hands={"green": "gkkkk"}, phase=2
    )
    assert_illegal(state, Destroy(cards("g"), None, (4, 4), (4, 7)), "R-BLOX-3", "costs 2 grey")
    assert_illegal(state, Destroy(cards("gg"), None, (4, 4), (4, 7)), "R-BLOX-3", "does not hold 1 grey")


def test_R_BLOX_3_path_must_be_empty_and_tower_in_line():
    state = scenario(
        colors=uniform("w"),
        pieces={(4, 0): F("green"), (4, 3): F("brown"), (4, 6): T("k"), (6, 6): T("k")},
        hands={"green": "kkkkk"},
        phase=2,
    )
    assert_illegal(state, Destroy(cards("k"), None, (4, 0), (4, 6)), "R-BLOX-3", "figure on [4,3]")
    assert_illegal(state, Destroy(cards("k"), None, (4, 0), (6, 6)), "R-BLOX-3", "row or column")


def test_R_BLOX_3_grey_space_on_the_way_to_the_grey_tower():
    colors = with_row(uniform("k"), 4, "kkgkkkkkk")
    state = scenario(colors=colors, pieces={(4, 0): F("green"), (4, 5): T("gw")}, hands={"green": "gwkkk"}, phase=2)
    assert_illegal(
        state, Destroy(cards("wg"), None, (4, 0), (4, 5)), "R-BLOX-3", "passed a grey space [4,2] on its way to the tower"
    )


@pytest.mark.parametrize(
    "phase,height,ok",
    [(1, 1, True), (1, 2, False), (2, 1, True), (2, 2, True), (2, 3, False), (3, 3, True), (4, 4, True), (4, 5, False)],
)
def test_R_BLOX_4_destroyable_heights(phase, height, ok):
    state = scenario(
        colors=uniform("w"),
        pieces={(4, 4): F("green"), (4, 5): T("k" * height), (0, 0): T("g")},
        hands={"green": "kkkkk"},
        phase=phase,
    )
    action = Destroy(cards("k" * height), None, (4, 4), (4, 5))
    if ok:
        legal(state, action)
    else:
        assert_illegal(state, action, "R-BLOX-4", "never" if height == 5 else f"phase {phase}")


@pytest.mark.parametrize("phase", [1, 2, 3, 4])
def test_R_BLOX_4_build_exactly_phase_plus_one(phase):
    state = scenario(
        colors=uniform("w"),
        pieces={(4, 4): F("green"), (0, 0): T("g"), (8, 8): T("gg")},
        hands={"green": "kkkkk"},
        blocks={"green": "kkkkkk"},
        phase=phase,
    )
    assert_illegal(state, Build(cards("k" * phase), None, (4, 4), cards("k" * phase)), "R-BLOX-4", "exactly")
    legal(state, Build(cards("k" * (phase + 1)), None, (4, 4), cards("k" * (phase + 1))))
    assert state.cell((4, 4)).height == phase + 1


def test_R_BLOX_5_six_blocks_may_destroy_seven_may_not():
    def make(blocks: str):
        return scenario(
            colors=uniform("w"),
            pieces={(4, 4): F("green"), (4, 6): T("k"), (0, 0): T("k")},
            hands={"green": "kkkkk"},
            blocks={"green": blocks},
            phase=1,
        )

    legal(make("gggggg"), Destroy(cards("k"), None, (4, 4), (4, 6)))
    assert_illegal(make("ggggggg"), Destroy(cards("k"), None, (4, 4), (4, 6)), "R-BLOX-5", "7 blocks")


def test_R_BLOX_6_build_needs_own_figure_and_own_blocks():
    state = scenario(
        colors=uniform("w"),
        pieces={(4, 4): F("green"), (2, 2): F("brown"), (0, 0): T("g"), (8, 8): T("gg")},
        hands={"green": "kkggw"},
        blocks={"green": "kg"},
        phase=1,
    )
    assert_illegal(state, Build(cards("kk"), None, (4, 4), cards("kk")), "R-BLOX-6", "missing 1 black")
    assert_illegal(state, Build(cards("kg"), None, (2, 2), cards("kg")), "R-BLOX-16", "brown")
    assert_illegal(state, Build(cards("kg"), None, (3, 3), cards("kg")), "R-BLOX-6", "no figure")
    # Listed once in edition colour order; any stacking order is the same build.
    assert Build(cards("kg"), None, (4, 4), cards("kg")) in set(state.legal_actions())
    state.apply_action(Build(cards("kg"), None, (4, 4), cards("gk")))
    assert state.cell((4, 4)) == T("gk")  # bottom to top as the player stacked them
    assert state.player("green").points == 2 and state.player("green").block_total == 0


def test_R_BLOX_6_five_tower_scores_five():
    state = scenario(
        colors=uniform("w"),
        pieces={(4, 4): F("green"), (0, 0): T("g"), (8, 8): T("gggg")},
        hands={"green": "kkkkk"},
        blocks={"green": "kkkkk"},
        phase=4,
    )
    legal(state, Build(cards("kkkkk"), None, (4, 4), cards("kkkkk")))
    assert state.player("green").points == 5


def test_R_BLOX_7_build_may_not_enclose_a_tower():
    pieces = {(0, 1): T("g"), (0, 0): T("g"), (1, 1): T("g"), (0, 2): F("green"), (5, 5): F("green"), (8, 8): T("g")}
    state = scenario(colors=uniform("w"), pieces=pieces, hands={"green": "kkwww"}, blocks={"green": "kk"}, phase=1)
    assert_illegal(state, Build(cards("kk"), None, (0, 2), cards("kk")), "R-BLOX-7", "[0,1]")
    legal(state, Build(cards("kk"), None, (5, 5), cards("kk")))


def test_R_BLOX_7_a_figure_next_to_a_tower_does_not_block_it():
    pieces = {(0, 1): T("g"), (0, 0): T("g"), (1, 1): F("brown"), (0, 2): F("green"), (8, 8): T("g")}
    state = scenario(colors=uniform("w"), pieces=pieces, hands={"green": "kkwww"}, blocks={"green": "kk"}, phase=1)
    legal(state, Build(cards("kk"), None, (0, 2), cards("kk")))


def test_R_BLOX_7_five_towers_need_not_be_reachable():
    pieces = {(0, 1): T("ggggg"), (1, 0): T("ggggg"), (0, 0): F("green"), (4, 4): T("kkkk")}
    state = scenario(colors=uniform("w"), pieces=pieces, hands={"green": "kkkkk"}, blocks={"green": "kkkkk"}, phase=4)
    legal(state, Build(cards("kkkkk"), None, (0, 0), cards("kkkkk")))


def test_R_BLOX_8_points_per_card_joker_included_up_to_six():
    colors = with_row(uniform("w"), 4, "wwwwwgwww")
    state = scenario(colors=colors, pieces={(4, 0): F("green"), (4, 5): F("brown")}, hands={"green": "ggggg"})
    legal(state, Knock(cards("ggggg"), "grey", (4, 0), (4, 5)))
    assert state.player("green").points == 6


def test_R_BLOX_8_path_may_not_cross_the_target_space_colour():
    colors = with_row(uniform("w"), 4, "wwgwwgwww")
    state = scenario(colors=colors, pieces={(4, 0): F("green"), (4, 5): F("brown")}, hands={"green": "ggggg"})
    assert_illegal(state, Knock(cards("ggg"), None, (4, 0), (4, 5)), "R-BLOX-8", "passed a grey space [4,2]")


def test_R_BLOX_8_own_figure_cannot_be_knocked_neutral_leaves_the_game():
    game = BloxGame(["green", "brown"])
    state = scenario(
        colors=with_col(with_row(uniform("w"), 4, "wwwwwgwww"), 0, "wwwwwwgww"),
        players=("green", "brown"),
        pieces={(4, 0): F("green"), (4, 5): F("green"), (6, 0): F("blue")},
        hands={"green": "ggggg"},
        phase=2,
    )
    assert game.neutral_colors == ("blue", "yellow")
    assert_illegal(state, Knock(cards("ggg"), None, (4, 0), (4, 5)), "R-BLOX-8", "own figure")
    legal(state, Knock(cards("ggg"), None, (4, 0), (6, 0)))
    assert state.cell((6, 0)) == Figure("green")
    assert not state.figures("blue")


def test_R_BLOX_9_joker_face_down_and_reactivated_by_exchange():
    colors = with_row(uniform("g"), 4, "gggggggwg")
    state = scenario(
        colors=colors,
        pieces={(4, 4): F("green"), **KEEP_PHASE},
        hands={"green": "kkggp"},
        jokers={"green": False},
        players=("green", "brown"),
    )
    assert_illegal(state, Move((), "white", (4, 4), (4, 7)), "R-BLOX-9", "face down")
    assert_illegal(state, Exchange((), True), "R-BLOX-9", "1 to 5")
    legal(state, Exchange(cards("kk"), True))
    assert state.player("green").joker_up
    assert len(state.player("green").hand) == 5
    state.apply_action(next(state.legal_actions()))  # brown's turn
    legal(state, Move((), "white", (4, 4), (4, 7)))


def test_R_BLOX_9_exchange_requires_cards_held_and_joker_already_up():
    state = scenario(hands={"green": "kkggp"})
    assert_illegal(state, Exchange(cards("www"), False), "R-BLOX-9", "does not hold")
    assert_illegal(state, Exchange(cards("k"), True), "R-BLOX-9", "already face up")


def test_R_BLOX_10_phase_advances_possibly_by_several():
    state = scenario(
        colors=uniform("w"),
        pieces={(4, 4): F("green"), (4, 5): T("k"), (0, 0): T("k"), (8, 8): T("kk"), (0, 8): T("kkk"), (8, 0): T("kkk")},
        hands={"green": "kkkkk"},
        phase=1,
    )
    legal(state, Destroy(cards("k"), None, (4, 4), (4, 5)))
    # one 1-tower left -> phase 2; one 2-tower -> phase 3; two 3-towers: stays.
    assert state.phase == 3


def test_R_BLOX_10_phase_never_goes_back():
    state = scenario(
        colors=uniform("w"),
        pieces={(4, 4): F("green"), (0, 0): T("kk"), (8, 8): T("kkk"), (0, 8): T("kkk")},
        hands={"green": "kkkkk"},
        blocks={"green": "kk"},
        phase=3,
    )
    legal(state, next(a for a in state.legal_actions() if isinstance(a, Exchange)))
    assert state.phase == 3


def end_state(current: int):
    return scenario(
        colors=uniform("w"),
        pieces={(4, 4): F(("green", "brown", "blue", "yellow")[current]), (4, 5): T("kkkk"), (0, 0): T("kkkk")},
        hands={c: "kkkkk" for c in ("green", "brown", "blue", "yellow")},
        phase=4,
        current=current,
    )


def test_R_BLOX_11_round_is_finished_after_the_last_four_tower_falls():
    state = end_state(1)
    colour = state.current.color
    legal(state, Destroy(cards("kkkk"), None, (4, 4), (4, 5)))
    assert state.end_at == 4 and not state.is_terminal()
    for _ in range(2):  # blue and yellow still play
        state.apply_action(next(state.legal_actions()))
    assert state.is_terminal()
    assert list(state.legal_actions()) == []
    assert_illegal(state, Exchange(cards("k"), False), "R-BLOX-11", "over")
    assert state.player(colour).points == 4


def test_R_BLOX_11_last_player_of_the_round_ends_it_at_once():
    state = end_state(3)
    legal(state, Destroy(cards("kkkk"), None, (4, 4), (4, 5)))
    assert state.is_terminal()


def test_R_BLOX_12_ranking_by_points_then_blocks_then_shared():
    state = scenario(
        points={"green": 20, "brown": 20, "blue": 20, "yellow": 9},
        blocks={"green": "kk", "brown": "kkk", "blue": "kk", "yellow": "kkkkk"},
    )
    ranks = [(rank, p.color) for rank, p in state.ranking()]
    assert ranks == [(1, "brown"), (2, "green"), (2, "blue"), (4, "yellow")]
    assert state.winners() == ["brown"]
    tied = scenario(points={"green": 5, "brown": 5, "blue": 1, "yellow": 0}, blocks={"green": "k", "brown": "g"})
    assert tied.winners() == ["green", "brown"]


def test_R_BLOX_13_two_player_setup():
    game = BloxGame(["green", "brown"])
    state = game.new_initial_state(random.Random(5))
    towers = dict(state.towers())
    blocks = sum(t.height for t in towers.values())
    assert blocks == 36
    assert all(t.height >= 2 for t in towers.values())
    assert state.phase == 2
    neutral = [p for p in state.positions() if isinstance(state.cell(p), Figure)]
    assert len(neutral) == 8
    assert {state.cell(p).color for p in neutral} == {"blue", "yellow"}
    ed = game.edition
    ones = ed.marked_spaces(1)
    extra = [p for p in ones if p in towers]
    assert sorted(ed.color_at(p) for p in extra) == ["grey", "grey", "white", "white"]
    assert all(towers[p].height == 2 for p in extra)
    assert set(neutral) == set(ones) - set(extra)
    for color in ed.colors:
        assert sum(t.blocks.count(color) for t in towers.values()) == 9


def test_R_BLOX_13_three_and_four_players_use_all_forty_blocks():
    for players in (["green", "brown", "blue"], ["green", "brown", "blue", "yellow"]):
        state = BloxGame(players).new_initial_state(random.Random(1))
        assert sum(t.height for _, t in state.towers()) == 40
        assert state.phase == 1
        assert all(len(p.hand) == 5 and p.joker_up for p in state.players)


def test_R_BLOX_16_own_figures_only_and_at_most_four_on_the_board():
    pieces = {(0, c): F("green") for c in (0, 2, 4, 6)}
    pieces[(8, 8)] = F("brown")
    state = scenario(colors=uniform("w"), pieces=pieces, hands={"green": "wwwww"})
    assert not any(isinstance(a, Place) for a in state.legal_actions())
    assert_illegal(state, Place(cards("w"), None, Entrance(Side.S, 1), (8, 1)), "R-BLOX-16", "no figure off the board")
    assert_illegal(state, Move(cards("w"), None, (8, 8), (7, 8)), "R-BLOX-16", "brown")


def test_illegal_action_leaves_undo_history_and_state_unchanged():
    state = BloxGame(["green", "brown", "blue"]).new_initial_state(random.Random(3))
    state.apply_action(next(state.legal_actions()))
    snapshot = state.clone()
    with pytest.raises(IllegalAction):
        state.apply_action(Destroy(cards("k"), None, (0, 0), (8, 8)))
    assert state == snapshot and state.history == snapshot.history


def test_other_player_s_turn_cannot_be_played_with_their_hand():
    state = scenario(colors=uniform("w"), pieces={(4, 4): F("brown")}, hands={"brown": "wwwww", "green": "kkkkk"})
    assert_illegal(state, Move(cards("w"), None, (4, 4), (5, 4)), "R-BLOX-16", "green's turn")
