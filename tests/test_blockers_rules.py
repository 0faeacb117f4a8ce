"""Blockers! rulings R-BLOCKERS-2, -3, -4, -6 and -7, each with legal and illegal cases.

Every illegal case also checks that the state is exactly unchanged afterwards.
"""

from __future__ import annotations

import random

import pytest
from test_blockers_support import build, diagram, line, snapshot

from engine.blockers import (
    BlockersGame,
    Capture,
    ForcedPass,
    Place,
    SplitsGroup,
    Tile,
)
from engine.common import IllegalAction

TWO = BlockersGame(["red", "blue"])
E = TWO.edition
RACK = ["wild", "E", "5", "flower", "A"]


def sp(name: str) -> int:
    return E.space_index(name)


def assert_illegal(state, action, rule: str, *words: str) -> IllegalAction:
    before = snapshot(state)
    with pytest.raises(IllegalAction) as info:
        state.apply_action(action)
    assert info.value.rule == rule, info.value
    for w in words:
        assert w in info.value.why, info.value.why
    assert snapshot(state) == before
    assert action not in set(state.legal_actions())
    return info.value


def capture_with_wild(state, name: str) -> Capture:
    i = sp(name)
    return Capture("red", "wild", i, state.board[i])


# -- R-BLOCKERS-2: where a tile may go ---------------------------------------------------


def test_r_blockers_2_targets_on_an_empty_board() -> None:
    state = build(TWO, diagram({}), racks={"red": RACK})
    places = [a for a in state.legal_actions() if isinstance(a, Place)]
    by_face: dict[str, set[str]] = {}
    for a in places:
        by_face.setdefault(a.face, set()).add(E.space_name(a.space))
    assert by_face["E"] == {f"E{c}" for c in range(1, 10)}
    assert by_face["5"] == {f"{r}5" for r in "ABCDEFGHI"}
    assert by_face["flower"] == {f"{r}{c}" for r in "DEF" for c in (4, 5, 6)}
    assert by_face["A"] == {f"A{c}" for c in range(1, 10)}
    assert len(by_face["wild"]) == 81
    assert len(places) == 9 * 4 + 81


@pytest.mark.parametrize("face, space", [("E", "E9"), ("5", "I5"), ("flower", "F6"), ("wild", "A1"), ("A", "A5")])
def test_r_blockers_2_legal_placement(face: str, space: str) -> None:
    state = build(TWO, diagram({}), racks={"red": RACK})
    supply_top = state.supplies["red"][0]
    state.apply_action(Place("red", face, sp(space)))
    assert state.board[sp(space)] == Tile("red", face)
    assert face not in state.racks["red"] and supply_top in state.racks["red"]
    assert len(state.racks["red"]) == 5
    assert state.current_player.name == "blue"


@pytest.mark.parametrize(
    "face, space, words",
    [
        ("E", "D5", "its row"),
        ("5", "E4", "its column"),
        ("flower", "A1", "flower section"),
        ("A", "B1", "its row"),
    ],
)
def test_r_blockers_2_wrong_space_is_illegal(face: str, space: str, words: str) -> None:
    state = build(TWO, diagram({}), racks={"red": RACK})
    assert_illegal(state, Place("red", face, sp(space)), "R-BLOCKERS-2", words)


def test_r_blockers_2_tile_not_on_rack_or_not_own_colour() -> None:
    state = build(TWO, diagram({}), racks={"red": RACK, "blue": ["B", "1", "2", "3", "4"]})
    assert_illegal(state, Place("red", "B", sp("B1")), "R-BLOCKERS-2", "not on red's rack")
    assert_illegal(state, Place("blue", "B", sp("B1")), "R-BLOCKERS-2", "own tiles")
    assert_illegal(state, Place("green", "B", sp("B1")), "R-BLOCKERS-2", "own tiles")
    assert_illegal(state, Place("red", "Z", sp("B1")), "R-BLOCKERS-2")
    assert_illegal(state, Place("red", None, sp("E1")), "R-BLOCKERS-2", "must be named")


# -- R-BLOCKERS-3: captures and the group rule ------------------------------------------


def test_r_blockers_3_group_of_one() -> None:
    state = build(TWO, diagram({"E5": "b"}), racks={"red": RACK})
    taken = state.board[sp("E5")]
    action = capture_with_wild(state, "E5")
    assert action in set(state.legal_actions())
    state.apply_action(action)
    assert state.board[sp("E5")] == Tile("red", "wild")
    assert state.captured["red"] == {"blue": [taken.face]}
    assert len(state.racks["red"]) == 5


@pytest.mark.parametrize("target", ["D4", "D5"])
def test_r_blockers_3_group_of_two_either_tile(target: str) -> None:
    state = build(TWO, diagram(line("D4 D5", "b")), racks={"red": RACK})
    action = capture_with_wild(state, target)
    assert action in set(state.legal_actions())
    state.apply_action(action)
    assert len(state.captured["red"]["blue"]) == 1


@pytest.mark.parametrize("spaces", ["D4 D5 D6", "C5 D5 E5"])
def test_r_blockers_3_line_of_three_from_the_end(spaces: str) -> None:
    names = spaces.split()
    for end in (names[0], names[2]):
        state = build(TWO, diagram(line(spaces, "b")), racks={"red": RACK})
        action = capture_with_wild(state, end)
        assert action in set(state.legal_actions())
        state.apply_action(action)


@pytest.mark.parametrize("spaces", ["D4 D5 D6", "C5 D5 E5"])
def test_r_blockers_3_line_of_three_from_the_middle_is_illegal(spaces: str) -> None:
    a, middle, b = spaces.split()
    state = build(TWO, diagram(line(spaces, "b")), racks={"red": RACK})
    err = assert_illegal(state, capture_with_wild(state, middle), "R-BLOCKERS-3", "group of 3", "into 2 groups", a, b)
    assert isinstance(err, SplitsGroup)
    assert err.group == frozenset(sp(s) for s in spaces.split())
    assert sorted(sorted(p) for p in err.parts) == sorted([[sp(a)], [sp(b)]])


L4 = "D4 E4 F4 F5"


@pytest.mark.parametrize("target", ["D4", "F5"])
def test_r_blockers_3_l_of_four_ends(target: str) -> None:
    state = build(TWO, diagram(line(L4, "b")), racks={"red": RACK})
    action = capture_with_wild(state, target)
    assert action in set(state.legal_actions())
    state.apply_action(action)


@pytest.mark.parametrize("target, parts", [("E4", [["D4"], ["F4", "F5"]]), ("F4", [["D4", "E4"], ["F5"]])])
def test_r_blockers_3_l_of_four_inner_tiles_are_illegal(target: str, parts: list[list[str]]) -> None:
    state = build(TWO, diagram(line(L4, "b")), racks={"red": RACK})
    err = assert_illegal(state, capture_with_wild(state, target), "R-BLOCKERS-3", "group of 4")
    assert isinstance(err, SplitsGroup)
    assert sorted(sorted(E.space_name(s) for s in p) for p in err.parts) == parts


RING = "D4 D5 D6 E4 E6 F4 F5 F6"


@pytest.mark.parametrize("target", RING.split())
def test_r_blockers_3_any_tile_of_a_ring(target: str) -> None:
    state = build(TWO, diagram(line(RING, "b")), racks={"red": RACK})
    action = capture_with_wild(state, target)
    assert action in set(state.legal_actions())
    state.apply_action(action)
    assert state.captured["red"]["blue"]


def test_r_blockers_3_t_splits_into_three() -> None:
    state = build(TWO, diagram(line("D5 E4 E5 E6", "b")), racks={"red": RACK})
    err = assert_illegal(state, capture_with_wild(state, "E5"), "R-BLOCKERS-3", "into 3 groups")
    assert len(err.parts) == 3


def test_r_blockers_3_other_colours_do_not_hold_a_group_together() -> None:
    # Blue D4-D5-D6 with red above: red tiles next to blue do not join the blue group.
    state = build(TWO, diagram({**line("D4 D5 D6", "b"), **line("C4 C5 C6", "r")}), racks={"red": RACK})
    assert_illegal(state, capture_with_wild(state, "D5"), "R-BLOCKERS-3")


def test_r_blockers_3_own_colour_and_mismatched_captures_are_illegal() -> None:
    state = build(TWO, diagram({"G5": "r", "D5": "b"}), racks={"red": RACK})
    assert_illegal(state, capture_with_wild(state, "G5"), "R-BLOCKERS-3", "own colour")
    assert_illegal(state, Place("red", "wild", sp("D5")), "R-BLOCKERS-3", "capture")
    assert_illegal(state, Capture("red", "wild", sp("C5"), Tile("blue", "C")), "R-BLOCKERS-3", "empty")
    wrong = Tile("blue", "Z")
    assert_illegal(state, Capture("red", "wild", sp("D5"), wrong), "R-BLOCKERS-3")
    # The capturing tile must still fit the space (R-BLOCKERS-2).
    assert_illegal(state, Capture("red", "A", sp("D5"), state.board[sp("D5")]), "R-BLOCKERS-2")


# -- R-BLOCKERS-4: capture instead, forced capture, forced pass -------------------------


def test_r_blockers_4_capture_allowed_when_a_space_is_free() -> None:
    state = build(TWO, diagram({"E5": "b"}), racks={"red": RACK})
    actions = list(state.legal_actions())
    assert any(isinstance(a, Place) for a in actions)
    assert any(isinstance(a, Capture) for a in actions)
    assert not any(isinstance(a, ForcedPass) for a in actions)
    assert_illegal(state, ForcedPass(), "R-BLOCKERS-4", "passing is not allowed")


FOUR = BlockersGame(["red", "blue", "green", "yellow"])


def _striped(spaces: list[str]) -> dict[str, str]:
    # (row + column) % 3 stripes never put two tiles of one colour side by side, so every
    # tile is a group of one.
    out = {}
    for s in spaces:
        r, c = "ABCDEFGHI".index(s[0]), int(s[1]) - 1
        out[s] = "bgy"[(r + c) % 3]
    return out


def test_r_blockers_4_forced_capture() -> None:
    targets = sorted({f"A{c}" for c in range(1, 10)} | {f"{r}{c}" for r in "ABCDEFGHI" for c in (1, 2, 3)})
    state = build(FOUR, diagram(_striped(targets)), racks={"red": ["A", "1", "2", "3", "star"]})
    actions = list(state.legal_actions())
    assert actions and all(isinstance(a, Capture) for a in actions)
    assert len(actions) == 5 * 9  # every target of every rack tile is a capturable single
    assert_illegal(state, ForcedPass(), "R-BLOCKERS-4")
    state.apply_action(actions[0])
    assert sum(len(v) for v in state.captured["red"].values()) == 1


def test_r_blockers_4_forced_pass() -> None:
    # Red's only tile is A. Row A: red at the ends, and blue A2..A8 inside a longer blue path,
    # so every blue tile in row A is one the group cannot lose.
    tiles = {"A1": "r", "A9": "r", **line("C2 B2 A2 A3 A4 A5 A6 A7 A8 B8 C8", "b")}
    state = build(TWO, diagram(tiles), racks={"red": ["A"]})
    actions = list(state.legal_actions())
    assert actions == [ForcedPass((Tile("red", "A"),))]
    assert_illegal(state, Capture("red", "A", sp("A5"), state.board[sp("A5")]), "R-BLOCKERS-3", "split")
    assert_illegal(state, Capture("red", "A", sp("A1"), state.board[sp("A1")]), "R-BLOCKERS-3", "own colour")
    assert_illegal(state, ForcedPass((Tile("red", "B"),)), "R-BLOCKERS-4")
    supply = list(state.supplies["red"])
    state.apply_action(actions[0])
    assert state.racks["red"] == ["A"] and state.supplies["red"] == supply  # no draw
    assert state.current_player.name == "blue" and state.passes_in_row == 1
    assert not state.is_terminal()
    state.undo()
    state.apply_action(ForcedPass())  # the known rack need not be spelled out
    assert state.history[-1] == ForcedPass()


def test_forced_passes_all_round_end_a_blocked_game() -> None:
    tiles = {**line("A1 A2 A3 A4 A5 A6 A7 A8 A9", "r"), **line("I1 I2 I3 I4 I5 I6 I7 I8 I9", "b")}
    state = build(TWO, diagram(tiles), racks={"red": ["A"], "blue": ["I"]})
    state.apply_action(ForcedPass())
    assert not state.is_terminal()
    state.apply_action(ForcedPass())
    assert state.is_terminal() and state.ended == "blocked"
    assert list(state.legal_actions()) == []


# -- R-BLOCKERS-6: the end --------------------------------------------------------------


@pytest.mark.parametrize("players", [["red", "blue"], ["red", "blue", "green"], ["violet", "yellow", "red", "green", "blue"]])
def test_r_blockers_6_one_more_turn_each_after_the_last_draw(players: list[str]) -> None:
    game = BlockersGame(players)
    rng = random.Random(len(players))
    state = game.new_initial_state(rng)
    first = state.current
    n = len(players)
    last_draw_turn = None
    order = []
    while not state.is_terminal():
        order.append(state.current)
        had_supply = any(state.supplies.values())
        state.apply_action(rng.choice(list(state.legal_actions())))
        if had_supply and not any(state.supplies.values()):
            assert last_draw_turn is None
            last_draw_turn = state.turns
            assert state.countdown == n
        elif last_draw_turn is not None and not state.is_terminal():
            assert state.countdown == n - (state.turns - last_draw_turn)
    assert state.ended == "end"
    assert state.turns == last_draw_turn + n
    assert order == [(first + k) % n for k in range(len(order))]  # clockwise from the starter
    assert all(len(state.racks[c]) == 4 for c in players)
    assert all(order.count(i) == 24 for i in range(n))
    assert list(state.legal_actions()) == []
    before = snapshot(state)
    with pytest.raises(IllegalAction) as info:
        state.apply_action(Place(players[0], "wild", 0))
    assert info.value.rule == "R-BLOCKERS-6" and snapshot(state) == before


# -- R-BLOCKERS-7: two players, two colours each ----------------------------------------

VARIANT = BlockersGame([("red", "green"), ("blue", "yellow")])


def test_r_blockers_7_players_choose_colour_and_capture_own_second_colour() -> None:
    state = build(
        VARIANT,
        diagram({"E5": "g", **line("C4 C5 C6", "g"), "G5": "b"}),
        racks={"red": RACK, "green": ["A", "B", "C", "D", "E"]},
    )
    colours = {a.color for a in state.legal_actions()}
    assert colours == {"red", "green"}
    state.clone().apply_action(capture_with_wild(state, "E5"))  # own second colour
    state.clone().apply_action(capture_with_wild(state, "G5"))  # opponent's colour
    err = assert_illegal(state, capture_with_wild(state, "C5"), "R-BLOCKERS-3", "green group of 3")
    assert isinstance(err, SplitsGroup)
    assert_illegal(state, Capture("green", "E", sp("E5"), state.board[sp("E5")]), "R-BLOCKERS-3", "own colour")
    assert_illegal(state, Place("blue", "wild", sp("A1")), "R-BLOCKERS-7", "own tiles")
    green_supply_top = state.supplies["green"][0]
    red_rack = list(state.racks["red"])
    state.apply_action(Place("green", "A", sp("A1")))
    assert green_supply_top in state.racks["green"] and state.racks["red"] == red_rack  # drew green
    assert state.current_player.name == "blue+yellow"


def test_r_blockers_7_colour_retires_when_it_cannot_draw_and_game_ends_at_four_each() -> None:
    rng = random.Random(7)
    state = VARIANT.new_initial_state(rng)
    retired_seen: set[str] = set()
    checked_retired_play = False
    while not state.is_terminal():
        action = rng.choice(list(state.legal_actions()))
        colour = getattr(action, "color", None)
        empty_before = colour is not None and not state.supplies[colour]
        state.apply_action(action)
        if colour is not None:
            assert (colour in state.retired) == empty_before
            if empty_before:
                assert len(state.racks[colour]) == 4
                retired_seen.add(colour)
        for c in state.retired:
            assert len(state.racks[c]) == 4
        if state.retired and not state.is_terminal() and not checked_retired_play:
            c = next(iter(state.retired))
            if c in state.current_player.colors:
                face = state.racks[c][0]
                assert_illegal(state, Place(c, face, E.targets[face][0]), "R-BLOCKERS-7", "used up")
                assert all(a.color != c for a in state.legal_actions() if not isinstance(a, ForcedPass))
                checked_retired_play = True
    assert state.ended == "end"
    assert retired_seen == {"red", "green", "blue", "yellow"}
    assert checked_retired_play
    assert all(len(state.racks[c]) == 4 for c in VARIANT.colors)
    assert state.turns == 2 * 2 * 24


@pytest.mark.parametrize(
    "players",
    [["red"], ["red"] * 2, ["red", "blue", "green", "yellow", "violet", "red"], [("red", "green"), ("blue",)],
     [("red", "green"), ("blue", "yellow"), ("violet", "x")], ["red", "pink"]],
)
def test_player_setups_that_are_not_allowed(players) -> None:
    with pytest.raises(ValueError):
        BlockersGame(players)


def test_starting_player_is_random_and_racks_are_dealt() -> None:
    starters = {TWO.new_initial_state(random.Random(s)).current for s in range(20)}
    assert starters == {0, 1}
    state = BlockersGame(["red", "blue", "green"]).new_initial_state(random.Random(3))
    for c in ("red", "blue", "green"):
        assert len(state.racks[c]) == 5 and len(state.supplies[c]) == 23
        assert sorted(state.racks[c] + state.supplies[c]) == sorted(E.faces)
