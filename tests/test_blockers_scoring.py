"""R-BLOCKERS-5 scoring and tie-breaks (and R-BLOCKERS-7's two-colour count) on
hand-built end positions."""

from __future__ import annotations

from test_blockers_support import build, diagram, line

from engine.blockers import BlockersGame, count_groups, groups

FOUR = BlockersGame(["red", "blue", "green", "yellow"])
E = FOUR.edition

END_BOARD = {
    # red: an L of three, a lone tile, and a diagonal pair (two groups: diagonals do not join)
    **line("E5 E6 F6", "r"),
    "A1": "r",
    **line("B2 C3", "r"),
    # blue: a ring of eight (one group) and a lone tile touching red only
    **line("G1 G2 G3 H1 H3 I1 I2 I3", "b"),
    "F5": "b",
    # green: a line of four broken by a yellow tile -> two groups
    **line("A6 A7", "g"),
    "A8": "y",
    **line("A9 B9", "g"),
}


def _end_state(captured: dict, racks: dict | None = None):
    return build(FOUR, diagram(END_BOARD), racks=racks, captured=captured)


def test_group_counting_r_blockers_3_and_5() -> None:
    state = _end_state({})
    nb = E.neighbours
    assert count_groups(state.board, nb, ["red"]) == 4
    assert count_groups(state.board, nb, ["blue"]) == 2
    assert count_groups(state.board, nb, ["green"]) == 2
    assert count_groups(state.board, nb, ["yellow"]) == 1
    assert count_groups(state.board, nb, ["violet"]) == 0
    assert count_groups(state.board, nb, ["red", "blue"]) == 6
    sizes = sorted(len(g) for g in groups(state.board, nb, ["red"]))
    assert sizes == [1, 1, 1, 3]


def test_score_is_groups_plus_the_largest_captured_colour_once() -> None:
    captured = {
        "red": {"blue": ["A", "B", "C"], "green": ["A", "B", "C"], "yellow": ["A"]},
        "blue": {"red": ["D", "E"]},
    }
    state = _end_state(captured)
    red = state.score_line("red")
    assert (red.groups, red.captured_most, red.captured_total, red.points) == (4, 3, 7, 7)
    assert state.score_line("blue").points == 2 + 2
    assert state.score_line("green").points == 2 + 0
    assert state.score_line("yellow").points == 1 + 0
    assert state.scores() == {"red": 7, "blue": 4, "green": 2, "yellow": 1}
    assert state.winners() == ["yellow"]  # fewest points wins


def test_tie_broken_by_fewer_captured_tiles_in_all() -> None:
    # yellow 1 group + 1 captured = 2 (1 tile in all); green 2 groups + 0 = 2 (0 in all);
    # blue 2 + 1 = 3; red 4 groups.
    state = _end_state({"yellow": {"red": ["A"]}, "blue": {"red": ["D"]}})
    assert state.scores()["yellow"] == state.scores()["green"] == 2
    assert state.winners() == ["green"]
    # yellow captures one red and one blue: still 2 points (one colour counts), but 2 in all.
    state = _end_state({"yellow": {"red": ["A"], "blue": ["A"]}, "green": {"red": ["B"]}, "blue": {"red": ["D"]}})
    assert state.scores()["yellow"] == 2 and state.scores()["green"] == 3
    assert state.winners() == ["yellow"]


def test_still_tied_players_share() -> None:
    # A second yellow group: yellow 2 + 1 = 3 against green 2 + 1 = 3, one captured each.
    board = {**END_BOARD, "C7": "y"}
    state = build(FOUR, diagram(board), captured={"yellow": {"red": ["A"]}, "green": {"blue": ["A"]}, "blue": {"red": ["D", "E"]}})
    assert state.scores()["yellow"] == state.scores()["green"] == 3
    assert state.winners() == ["green", "yellow"]


def test_r_blockers_7_two_colour_score_counts_both_colours_and_own_captures() -> None:
    game = BlockersGame([("red", "green"), ("blue", "yellow")])
    state = build(
        game,
        diagram(END_BOARD),
        captured={"red+green": {"green": ["C", "D", "E"], "blue": ["A", "B"]}, "blue+yellow": {"red": ["F"]}},
    )
    rg = state.score_line("red+green")
    assert (rg.groups, rg.captured_most, rg.captured_total) == (4 + 2, 3, 5)
    by = state.score_line("blue+yellow")
    assert (by.groups, by.captured_most, by.captured_total) == (2 + 1, 1, 1)
    assert state.scores() == {"red+green": 9, "blue+yellow": 4}
    assert state.winners() == ["blue+yellow"]
