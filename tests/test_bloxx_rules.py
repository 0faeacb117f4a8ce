"""Bloxx! rules: every R-BLOXX ruling with legal and illegal cases, and the turn order."""

from __future__ import annotations

import pytest

from engine.bloxx import (
    BloxxGame,
    BloxxState,
    ChooseDie,
    Forfeit,
    Phase,
    Place,
    Roll,
    Sheet,
    action_from_json,
    load_edition,
)
from engine.common import IllegalAction

EDITION = load_edition()
GEO = EDITION.geometry
BLANK = ["......."] * 10
FULL_BUT_TOP_PAIR = ["..xxxxx"] + ["xxxxxxx"] * 9  # only a domino fits


def game(n: int = 2) -> BloxxGame:
    return BloxxGame.create(n, EDITION)


def with_sheets(rows_per_player: list[list[str]], roll=None, active: int = 0) -> BloxxState:
    st = game(len(rows_per_player)).new_initial_state(active)
    st.sheets = [Sheet.from_rows(GEO, rows) for rows in rows_per_player]
    for p, sheet in enumerate(st.sheets):
        assert not sheet.problems()
        for colour, row in EDITION.coloured_rows:
            if sheet.row_complete(row):
                st.completed[p][colour] = 0
    if roll is not None:
        st.apply_action(Roll(roll))
    return st


def place(st: BloxxState, player: int, die: str, cells, circle=None) -> Place:
    """The Place action drawing ``die``'s rolled face on exactly ``cells``."""
    want = frozenset(map(tuple, cells))
    face = st.rolled_face(die)
    for p in EDITION.placements(face.name):
        if frozenset(p.cells) == want and (circle is None or p.circle == tuple(circle)):
            return Place(player, die, face.name, p.orientation, p.row, p.col)
    raise AssertionError(f"{face.name} cannot cover {sorted(want)}")


def assert_illegal(st: BloxxState, action, rule: str) -> IllegalAction:
    before = st.clone()
    before_json = st.to_json()
    with pytest.raises(IllegalAction) as info:
        st.apply_action(action)
    assert info.value.rule == rule, info.value
    # The state is exactly as it was: same fields, same JSON, same undo history.
    assert st == before
    assert st.to_json() == before_json
    assert st._history == before._history
    return info.value


def rows_of(st: BloxxState, p: int) -> list[str]:
    return st.sheets[p].rows()


# -- R-BLOXX-2 ---------------------------------------------------------------------------


def test_r_bloxx_2_every_rotation_and_mirror_is_offered_once():
    st = with_sheets([BLANK], roll=("w3", "b1"))
    st.apply_action(ChooseDie(0, "white"))
    offered = list(st.legal_actions())
    assert offered and all(isinstance(a, Place) for a in offered)
    keys = [(frozenset(st.resolve(a)[0]), st.resolve(a)[1]) for a in offered]
    assert len(keys) == len(set(keys))
    # Brute force over all 8 orientations and positions, keeping legal ones.
    brute = set()
    for k in range(8):
        for r in range(-3, 11):
            for c in range(-3, 8):
                trial = st.clone()
                try:
                    trial.apply_action(Place(0, "white", "w3", k, r, c))
                except IllegalAction:
                    continue
                brute.add((frozenset(st.resolve(Place(0, "white", "w3", k, r, c))[0]),
                           st.resolve(Place(0, "white", "w3", k, r, c))[1]))
    assert set(keys) == brute
    # Mirror images are there: the L with its circle at the foot pointing both ways.
    assert (frozenset({(8, 0), (9, 0), (9, 1)}), (9, 1)) in brute
    assert (frozenset({(8, 1), (9, 0), (9, 1)}), (9, 0)) in brute


def test_r_bloxx_2_circle_stays_on_its_square():
    st = with_sheets([BLANK], roll=("w3", "b1"))
    # w3's circle is an end of the L (one neighbour in the shape), never its corner.
    for k in range(8):
        cells, circle = st.resolve(Place(0, "white", "w3", k, 8, 0))
        shape = set(cells)
        touching = [(circle[0] + dr, circle[1] + dc) in shape
                    for dr, dc in ((0, 1), (0, -1), (1, 0), (-1, 0))]
        assert circle in shape and sum(touching) == 1


def test_r_bloxx_2_orientation_out_of_range_is_illegal():
    st = with_sheets([BLANK], roll=("w3", "b1"))
    assert_illegal(st, Place(0, "white", "w3", 8, 8, 0), "R-BLOXX-2")
    assert_illegal(st, Place(0, "white", "w3", -1, 8, 0), "R-BLOXX-2")


# -- R-BLOXX-3 ---------------------------------------------------------------------------


def test_r_bloxx_3_first_shape_touches_bottom_row():
    st = with_sheets([BLANK], roll=("w4", "b1"))
    assert_illegal(st, place(st, 0, "white", [(8, 0), (8, 1), (8, 2), (8, 3)]), "R-BLOXX-3")
    assert_illegal(st, place(st, 0, "black", [(0, 0), (0, 1), (1, 0), (1, 1)]), "R-BLOXX-3")
    # Standing on end it touches the bottom with one square: legal.
    st.apply_action(place(st, 0, "white", [(6, 3), (7, 3), (8, 3), (9, 3)]))
    assert rows_of(st, 0)[6:] == ["...o...", "...x...", "...x...", "...x..."]


def test_r_bloxx_3_later_shapes_share_a_side():
    sheet = ["......."] * 9 + ["xx....."]
    st = with_sheets([sheet], roll=("w1", "b1"))
    # Only a corner touches the drawn squares.
    assert_illegal(st, place(st, 0, "white", [(8, 2), (8, 3)]), "R-BLOXX-3")
    # Touching the bottom is not enough once something is drawn.
    assert_illegal(st, place(st, 0, "white", [(9, 4), (9, 5)]), "R-BLOXX-3")
    st.apply_action(place(st, 0, "white", [(9, 2), (9, 3)], circle=(9, 3)))
    assert rows_of(st, 0)[9] == "xxxo..."


def test_r_bloxx_3_gaps_do_not_count_as_drawn():
    sheet = ["......."] * 8 + ["xx.....", "x#....."]
    st = with_sheets([sheet], roll=("w1", "b1"))
    # (9,2) touches only the gap at (9,1).
    assert_illegal(st, place(st, 0, "white", [(9, 2), (9, 3)]), "R-BLOXX-3")
    # (8,2) touches the cross at (8,1).
    st.apply_action(place(st, 0, "white", [(8, 2), (8, 3)]))


def test_r_bloxx_3_only_empty_squares_inside_the_sheet():
    sheet = ["......."] * 9 + ["xx....."]
    st = with_sheets([sheet], roll=("w1", "b1"))
    assert_illegal(st, place(st, 0, "white", [(9, 1), (9, 2)]), "R-BLOXX-3")
    assert_illegal(st, Place(0, "white", "w1", 0, 9, 6), "R-BLOXX-3")  # runs off the right
    assert_illegal(st, Place(0, "white", "w1", 1, 9, 0), "R-BLOXX-3")  # runs off the bottom
    assert_illegal(st, Place(0, "white", "w1", 0, -1, 0), "R-BLOXX-3")  # above the top
    gap = ["......."] * 8 + ["xx.....", "x#....."]
    st = with_sheets([gap], roll=("w1", "b1"))
    assert_illegal(st, place(st, 0, "white", [(9, 1), (9, 2)]), "R-BLOXX-3")


# -- R-BLOXX-4 ---------------------------------------------------------------------------


def test_r_bloxx_4_overhang_creates_exactly_the_gaps_beneath():
    sheet = ["......."] * 8 + ["x......", "x......"]
    st = with_sheets([sheet], roll=("w4", "b1"))
    st.apply_action(place(st, 0, "white", [(7, 0), (7, 1), (7, 2), (7, 3)], circle=(7, 0)))
    assert rows_of(st, 0)[6:] == [
        ".......",
        "oxxx...",
        "x###...",
        "x###...",
    ]
    assert st.sheets[0].count("#") == 6


def test_r_bloxx_4_gap_under_the_shape_itself():
    st = with_sheets([BLANK], roll=("w1", "b5"))
    # The U upside down: its middle square hangs over an empty bottom square.
    st.apply_action(place(st, 0, "black", [(8, 0), (8, 1), (8, 2), (9, 0), (9, 2)]))
    assert rows_of(st, 0)[8:] == ["xox....", "x#x...."]


def test_r_bloxx_4_no_gaps_without_overhang():
    sheet = ["......."] * 9 + ["xxxx..."]
    st = with_sheets([sheet], roll=("w4", "b1"))
    st.apply_action(place(st, 0, "white", [(8, 0), (8, 1), (8, 2), (8, 3)]))
    assert st.sheets[0].count("#") == 0


# -- R-BLOXX-5 ---------------------------------------------------------------------------


def test_r_bloxx_5_same_die_as_active_draws_a_cross():
    st = with_sheets([BLANK, BLANK, BLANK], roll=("w1", "b1"))
    st.apply_action(place(st, 0, "white", [(9, 0), (9, 1)], circle=(9, 0)))
    assert rows_of(st, 0)[9] == "ox....."
    # Same die as the active player: the circle becomes a cross.
    st.apply_action(place(st, 1, "white", [(9, 0), (9, 1)], circle=(9, 0)))
    assert rows_of(st, 1)[9] == "xx....."
    # The other die keeps its circle.
    st.apply_action(place(st, 2, "black", [(8, 0), (8, 1), (9, 0), (9, 1)], circle=(8, 0)))
    assert rows_of(st, 2)[8:] == ["ox.....", "xx....."]


def test_r_bloxx_5_circle_scores_its_number_cross_does_not():
    # (9,3) holds a 2 on the default sheet.
    assert EDITION.value(9, 3) == 2
    st = with_sheets([BLANK, BLANK], roll=("w1", "b1"))
    st.apply_action(place(st, 0, "white", [(9, 3), (9, 4)], circle=(9, 3)))
    st.apply_action(place(st, 1, "white", [(9, 3), (9, 4)], circle=(9, 3)))
    assert st.score(0).circled == 2
    assert st.score(1).circled == 0
    assert rows_of(st, 1)[9] == "...xx.."


# -- R-BLOXX-6 ---------------------------------------------------------------------------


def test_r_bloxx_6_must_place_when_a_shape_fits():
    st = with_sheets([FULL_BUT_TOP_PAIR, BLANK], roll=("w1", "b1"))
    assert_illegal(st, Forfeit(0), "R-BLOXX-6")
    assert_illegal(st, ChooseDie(0, "black"), "R-BLOXX-6")  # the square does not fit
    assert list(st.legal_actions()) == [ChooseDie(0, "white")]
    st.apply_action(ChooseDie(0, "white"))
    assert_illegal(st, Forfeit(0), "R-BLOXX-6")  # took a die: must draw it
    assert_illegal(st, place(st, 0, "black", [(0, 0), (0, 1), (1, 0), (1, 1)]), "R-BLOXX-6")
    st.apply_action(place(st, 0, "white", [(0, 0), (0, 1)]))
    assert st.could_place[0] is True


def test_r_bloxx_6_active_player_who_cannot_place_takes_no_die():
    st = with_sheets([FULL_BUT_TOP_PAIR, BLANK, BLANK], roll=("w2", "b1"))
    assert list(st.legal_actions()) == [Forfeit(0)]
    assert_illegal(st, ChooseDie(0, "white"), "R-BLOXX-6")
    st.apply_action(Forfeit(0))
    assert st.took[0] is None and st.could_place[0] is False
    # Nobody took a die first, so both dice are drawn with their circle.
    st.apply_action(place(st, 1, "white", [(9, 0), (9, 1), (9, 2)]))
    st.apply_action(place(st, 2, "black", [(8, 0), (8, 1), (9, 0), (9, 1)], circle=(8, 0)))
    assert rows_of(st, 1)[9] == "xox...."
    assert rows_of(st, 2)[8] == "ox....."


def test_r_bloxx_6_player_who_cannot_place_forfeits():
    st = with_sheets([BLANK, FULL_BUT_TOP_PAIR], roll=("w2", "b1"))
    st.apply_action(place(st, 0, "white", [(9, 0), (9, 1), (9, 2)]))
    assert list(st.legal_actions()) == [Forfeit(1)]
    assert_illegal(st, place(st, 1, "white", [(0, 0), (0, 1), (0, 2)]), "R-BLOXX-3")
    st.apply_action(Forfeit(1))
    assert not st.is_terminal()  # one player alone does not end a 2-player game


# -- R-BLOXX-7 ---------------------------------------------------------------------------


GREEN_ALMOST = ["......."] * 7 + ["xxxxxx.", "xxxxxxx", "xxxxxxx"]  # green is row 7


def test_r_bloxx_7_same_turn_completers_all_get_4_later_ones_2():
    assert ("green", 7) in EDITION.coloured_rows
    st = with_sheets([GREEN_ALMOST] * 3, roll=("w1", "b1"))
    finish = [(6, 6), (7, 6)]
    st.apply_action(place(st, 0, "white", finish))
    st.apply_action(place(st, 1, "white", finish))
    st.apply_action(place(st, 2, "black", [(5, 0), (5, 1), (6, 0), (6, 1)]))
    assert st.completed[0] == {"green": 0} and st.completed[1] == {"green": 0}
    assert st.completed[2] == {}
    assert st.turn == 1 and st.active == 1
    st.apply_action(Roll(("w1", "b1")))
    st.apply_action(place(st, 1, "black", [(5, 0), (5, 1), (6, 0), (6, 1)]))
    st.apply_action(place(st, 2, "white", finish))
    st.apply_action(place(st, 0, "black", [(5, 0), (5, 1), (6, 0), (6, 1)]))
    assert st.completed[2] == {"green": 1}
    assert [st.row_bonus(p) for p in range(3)] == [4, 4, 2]
    rows = st.to_json()["rows"]["green"]
    assert rows["first_turn"] == 0 and rows["first"] == [0, 1]


def test_r_bloxx_7_a_gap_spoils_the_row_for_good():
    sheet = ["......."] * 6 + [".x.....", "x#xxxx.", "xxxxxxx", "xxxxxxx"]
    st = with_sheets([sheet], roll=("w1", "b1"))
    st.apply_action(place(st, 0, "white", [(6, 6), (7, 6)]))
    assert st.completed[0] == {}
    assert st.row_bonus(0) == 0


# -- R-BLOXX-8 ---------------------------------------------------------------------------


def rulebook_example_state() -> BloxxState:
    """Klaus-Juergen (player 0): orange first, violet after player 1, 26 circled,
    7 blank squares and 7 gaps."""
    kj = [
        ".......",
        "xxxoxxx",  # violet, complete
        "xoxxxox",
        "o#x#xxo",  # blue, spoiled by gaps
        "xxxoxxx",
        "xxxxxxx",  # orange, complete
        "xxoxoxx",
        "x#xxx#x",  # green, spoiled by gaps
        "#xxxxx#",
        "oxx#xxx",
    ]
    other = [".......", "xxxxxxx", "xxxxxxx", "#xxxxxx", "xxxxxxx",
             "#xxxxxx", "xxxxxxx", "#xxxxxx", "xxxxxxx", "xxxxxxx"]
    g = BloxxGame.create(["klaus-juergen", "ute"], EDITION)
    data = g.new_initial_state().to_json()
    data.update(
        turn=11, phase="ended", roll={"white": "w1", "black": "b1"},
        sheets=[{"sheet": kj}, {"sheet": other}],
        took=[None, None], done=[True, True], could_place=[False, False],
        completed=[{"orange": 5, "violet": 9}, {"violet": 8}],
    )
    return BloxxState.from_json(g, data)


def test_r_bloxx_8_rulebook_example_scores_18():
    st = rulebook_example_state()
    assert dict(EDITION.coloured_rows)["orange"] == 5
    assert dict(EDITION.coloured_rows)["violet"] == 1
    score = st.score(0)
    assert score.bonus == 6  # orange first (4) + violet later (2)
    assert score.circled == 26
    assert score.empty == 7 and score.gaps == 7
    assert score.total == 6 + 26 - 14 == 18
    assert st.scores()["klaus-juergen"] == 18
    assert st.is_terminal()


def test_r_bloxx_8_empty_numbered_squares_cost_a_point():
    st = game(1).new_initial_state()
    assert st.score(0).total == -70
    assert st.scores() == {"p1": -70}


# -- R-BLOXX-9 ---------------------------------------------------------------------------


@pytest.mark.parametrize("players,stuck,ends", [
    (1, 1, True), (2, 1, False), (2, 2, True), (3, 1, False), (3, 2, True), (6, 2, True),
])
def test_r_bloxx_9_end_after_two_players_cannot_place(players, stuck, ends):
    sheets = [FULL_BUT_TOP_PAIR] * stuck + [BLANK] * (players - stuck)
    st = with_sheets(sheets, roll=("w2", "b1"))
    while st.pending_players():
        p = st.pending_players()[0]
        if st.can_place(p):
            st.apply_action(place(st, p, "black", [(8, 0), (8, 1), (9, 0), (9, 1)]))
        else:
            st.apply_action(Forfeit(p))
    assert st.is_terminal() is ends
    if ends:
        assert st.phase is Phase.ENDED
        assert list(st.legal_actions()) == []
        assert_illegal(st, Roll(("w1", "b1")), "R-BLOXX-9")
    else:
        assert st.phase is Phase.ROLL and st.turn == 1


def test_r_bloxx_9_ties_share_the_win():
    st = with_sheets([BLANK, BLANK], roll=("w2", "b1"))
    assert st.winners() == ["p1", "p2"]
    st.apply_action(place(st, 0, "white", [(9, 0), (9, 1), (9, 2)]))
    assert st.winners() == ["p1"]


# -- turn order (R-BLOXX-6) ----------------------------------------------------------------


def test_turn_order_is_enforced():
    st = game(3).new_initial_state()
    assert st.current_player() == 0 and st.phase is Phase.ROLL
    assert_illegal(st, Place(0, "white", "w1", 0, 9, 0), "R-BLOXX-6")  # not rolled
    assert_illegal(st, Roll(("w1",)), "R-BLOXX-1")
    assert_illegal(st, Roll(("b1", "w1")), "R-BLOXX-1")
    st.apply_action(Roll(("w1", "b1")))
    assert_illegal(st, Roll(("w1", "b1")), "R-BLOXX-6")
    assert_illegal(st, place(st, 1, "white", [(9, 0), (9, 1)]), "R-BLOXX-6")  # before active
    assert_illegal(st, Place(0, "white", "w2", 0, 9, 0), "R-BLOXX-6")  # not the rolled face
    assert_illegal(st, Place(0, "green", "w1", 0, 9, 0), "R-BLOXX-1")  # no such die
    assert_illegal(st, Forfeit(7), "R-BLOXX-6")
    st.apply_action(ChooseDie(0, "black"))
    assert_illegal(st, ChooseDie(0, "white"), "R-BLOXX-6")
    assert_illegal(st, place(st, 0, "white", [(9, 0), (9, 1)]), "R-BLOXX-6")
    st.apply_action(place(st, 0, "black", [(8, 0), (8, 1), (9, 0), (9, 1)]))
    assert_illegal(st, place(st, 0, "white", [(7, 0), (7, 1)]), "R-BLOXX-6")  # twice
    assert st.pending_players() == [1, 2]
    st.apply_action(place(st, 2, "white", [(9, 0), (9, 1)]))  # others in any order
    assert st.current_player() == 1
    st.apply_action(place(st, 1, "white", [(9, 0), (9, 1)]))
    assert st.active == 1 and st.phase is Phase.ROLL and st.turn == 1


def test_legal_actions_before_the_roll_are_all_rolls():
    st = game(2).new_initial_state()
    rolls = list(st.legal_actions())
    assert len(rolls) == 36 and len(set(rolls)) == 36
    assert all(isinstance(r, Roll) for r in rolls)


def test_undo_and_json_round_trip_through_a_turn():
    st = game(2).new_initial_state()
    states = [st.clone()]
    actions = [Roll(("w5", "b6"))]
    st.apply_action(actions[-1])
    states.append(st.clone())
    for p, die in ((0, "black"), (1, "black")):
        a = next(iter(st.placements(p, die)))
        actions.append(a)
        st.apply_action(a)
        states.append(st.clone())
    for s in states:
        data = s.to_json()
        back = BloxxState.from_json(s.game, data)
        assert back == s and back.to_json() == data
    for a in actions:
        assert action_from_json(a.to_json()) == a
    for s in reversed(states[:-1]):
        st.undo()
        assert st == s
    with pytest.raises(ValueError):
        st.undo()


def test_from_json_rejects_impossible_sheets():
    st = game(1).new_initial_state()
    data = st.to_json()
    data["sheets"] = [{"sheet": ["x......"] + ["......."] * 9}]  # empty under a cross
    with pytest.raises(ValueError):
        BloxxState.from_json(st.game, data)
    data["sheets"] = [{"sheet": ["......."] * 9 + ["#......"]}]  # gap under nothing
    with pytest.raises(ValueError):
        BloxxState.from_json(st.game, data)
    data["sheets"] = [{"sheet": ["......."] * 9 + ["xxxxxxq"]}]
    with pytest.raises(ValueError):
        BloxxState.from_json(st.game, data)


def test_player_counts():
    for n in range(1, 7):
        assert game(n).new_initial_state().num_players == n
    for bad in (0, 7):
        with pytest.raises(ValueError):
            game(bad)
    with pytest.raises(ValueError):
        BloxxGame.create(["a", "a"], EDITION)


def test_str_shows_every_sheet():
    st = with_sheets([BLANK, BLANK], roll=("w1", "b1"))
    text = str(st)
    assert "p1" in text and "p2" in text and "w1" in text
    assert len(text.splitlines()) == 12


def test_from_json_rejects_malformed_data():
    st = game(2).new_initial_state()
    for key in ("turn", "sheets", "took", "completed"):
        data = st.to_json()
        del data[key]
        with pytest.raises(ValueError):
            BloxxState.from_json(st.game, data)
    data = st.to_json()
    data["completed"] = [{"green": 0}, {}]  # green is not complete on a blank sheet
    with pytest.raises(ValueError):
        BloxxState.from_json(st.game, data)
    data = st.to_json()
    data["done"] = [True, False]  # done before the roll, without a verdict
    with pytest.raises(ValueError):
        BloxxState.from_json(st.game, data)
