"""Bloxo rules with full information: the rulebook's examples and every R-BLOXO ruling."""

from __future__ import annotations

import json
import random

import pytest

from engine.bloxo import (
    END_ALL_PLAYED,
    END_BLOCKED,
    BloxoGame,
    BloxoState,
    Pass,
    Place,
    Redraw,
    action_from_json,
    load_edition,
    rotation_for,
)
from engine.common import IllegalAction

ED = load_edition()
P, Y, B, G = "pink", "yellow", "blue", "green"


def showing(seen, exclude=()) -> tuple[str, int]:
    """A card id (not in ``exclude``) and the rotation that make it look like ``seen``."""
    design = ED.identify(tuple(seen))
    assert design is not None, seen
    card = next(c for c in ED.cards_of_design(design) if c not in exclude)
    return card, rotation_for(ED.card(card), tuple(seen))


def stacked(start: str, hands: list[list[str]], players=("ann", "bob"), pile_top=(), first=0) -> BloxoState:
    """A full-information state whose start card, hands (padded) and pile top are given."""
    game = BloxoGame(list(players), ED, first=first)
    used = {start, *pile_top, *(c for h in hands for c in h)}
    rest = [c for c in ED.card_ids if c not in used]
    order = [rest.pop() for _ in range(game.setup_discards)]
    n = len(players)
    for k in range(n):
        hand = list(hands[(first + k) % n]) if (first + k) % n < len(hands) else []
        while len(hand) < ED.hand_size:
            hand.append(rest.pop())
        order += hand
    order += [start, *pile_top, *rest]
    state = game.new_initial_state(deck=order)
    assert state.tableau[(0, 0)].card == start
    return state


def assert_illegal(state: BloxoState, action, rule: str, *words: str) -> IllegalAction:
    """The action raises IllegalAction(rule) mentioning ``words`` and changes nothing."""
    before = json.dumps(state.to_json(), sort_keys=True)
    history = len(state._history)
    with pytest.raises(IllegalAction) as info:
        state.apply_action(action)
    assert info.value.rule == rule, info.value
    for w in words:
        assert w in info.value.why, (w, info.value.why)
    assert json.dumps(state.to_json(), sort_keys=True) == before
    assert len(state._history) == history
    return info.value


def arranged(tableau, hands, players=("ann", "bob")) -> BloxoState:
    """A full-information state with the given tableau ((at, seen) pairs, the first at
    (0, 0)) and the hands given as card faces (padded with other cards); rest in the pile."""
    game = BloxoGame(list(players), ED)
    used: list[str] = []
    cards = []
    for at, seen in tableau:
        card, rot = showing(seen, exclude=used)
        used.append(card)
        cards.append({"at": list(at), "card": card, "rotation": rot,
                      "quadrants": [[c, ED.colour(c).shape] for c in seen]})
    hand_ids = []
    for faces in list(hands) + [[]] * (len(players) - len(hands)):
        ids = []
        for seen in faces:
            card, _ = showing(seen, exclude=used)
            used.append(card)
            ids.append(card)
        hand_ids.append(ids)
    rest = [c for c in ED.card_ids if c not in used]
    for ids in hand_ids:
        while len(ids) < ED.hand_size:
            ids.append(rest.pop())
    n = len(players)
    data = {
        "game": "bloxo", "players": list(players), "cards": cards,
        "hands": dict(zip(players, hand_ids)), "hand_counts": {p: len(h) for p, h in zip(players, hand_ids)},
        "draw_pile": rest, "pile_count": len(rest), "out_of_game": [], "out_count": 0,
        "scores": {p: 0 for p in players}, "turn": players[0], "turns": len(tableau) - 1,
        "redraw_used": False, "stuck": [], "end": None, "log": [],
    }
    assert n == len(hand_ids)
    return BloxoState.from_json(game, data)


# --------------------------------------------------------------- rulebook examples


def test_rulebook_example_four_points_yellow_and_green_pairs():
    """R-BLOXO-4, first diagram: yellow touches yellow, green touches green: 2 + 2 = 4."""
    start = "pygb-1"  # NW pink, NE yellow, SE green, SW blue: yellow above green on the east edge
    card, rot = showing((Y, B, P, G))  # west edge: NW yellow, SW green
    assert rot != 0  # the diagram's second card is turned
    state = stacked(start, [[card]])
    assert state.apply_action(Place(card, (1, 0), rot)) == 4
    assert state.scores() == {"ann": 4, "bob": 0}


def test_rulebook_example_six_points_green_stars_above_four_green_stars():
    """R-BLOXO-4 / placement diagram 'this is good': two greens on four greens score 6;
    the two pinks wholly inside the new card score nothing."""
    state = stacked("gggg-1", [["ppgg-1"]])
    assert state.apply_action(Place("ppgg-1", (0, -1), 0)) == 6


def test_rulebook_example_eight_points_pinks_and_blues():
    """R-BLOXO-4, last diagram: four pinks and four blues make 8."""
    state = stacked("ppbb-1", [["ppbb-2"]])
    assert state.apply_action(Place("ppbb-2", (1, 0), 0)) == 8


def test_rulebook_scoring_paragraph_six_plus_two_then_one_more():
    """Rulebook 'Scoring': a block of 6 greens + 2 scores 8; another green makes it 9 (plus,
    under R-BLOXO-4, the yellow block that the other touching pair necessarily forms)."""
    right, rr = showing((G, Y, Y, G))  # green left half, yellow right half
    below, br = showing((G, Y, B, P))
    state = stacked("gggg-1", [["ppgg-1", below], [right]])
    assert state.apply_action(Place("ppgg-1", (0, -1), 0)) == 6  # green block of 6 now
    assert state.apply_action(Place(right, (1, 0), rr)) == 8
    points = state.apply_action(Place(below, (1, 1), br))
    assert points == 9 + 3  # green block 9, yellow block 3 (two on the card above + one)


def test_placement_diagram_staggered_is_illegal():
    """R-BLOXO-2 'No staggering': a card half a card off the grid is refused."""
    state = stacked("gggg-1", [["ppgg-1"]])
    assert_illegal(state, Place("ppgg-1", (0.5, -1), 0), "R-BLOXO-2", "grid")  # type: ignore[arg-type]
    assert_illegal(state, Place("ppgg-1", (1, 0.5), 0), "R-BLOXO-2")  # type: ignore[arg-type]


def test_placement_diagram_mismatched_names_the_failing_edge():
    """R-BLOXO-3 'you can't do this': a pink diamond against a green star."""
    state = stacked("gggg-1", [["ppgg-1"]])
    err = assert_illegal(state, Place("ppgg-1", (1, 0), 0), "R-BLOXO-3", "west", "NW", "pink", "green")
    assert "SW" not in err.why  # the lower pair (green on green) matches


def test_placement_diagram_matched_is_legal():
    """R-BLOXO-3 'this is good': green stars on green stars, directly above."""
    state = stacked("gggg-1", [["ppgg-1"]])
    assert Place("ppgg-1", (0, -1), 0) in set(state.legal_placements())


# --------------------------------------------------------------- R-BLOXO-2 rotation / grid


def test_rotation_moves_quadrants_as_seen_from_above():
    """R-BLOXO-2: a quarter turn clockwise puts the card's NW quadrant at NE, and the
    engine places exactly what the rotation shows."""
    card = ED.card("pybg-1")
    assert card.seen(0) == (P, Y, B, G)
    assert card.seen(1) == (G, P, Y, B)
    assert card.seen(2) == (B, G, P, Y)
    assert card.seen(3) == (Y, B, G, P)
    # Laid east of a four-green card, only the rotation with greens on the west edge fits:
    # green in the SW quadrant and pink in the NW never does, so every legal rotation must
    # put greens at NW and SW. pybg has one green, so no rotation fits.
    state = arranged([((0, 0), (G, G, G, G))], [[(P, Y, B, G)]])
    assert not any(a.at == (1, 0) for a in state.legal_placements())
    # A yellow/green halves card: greens on the west edge only at one rotation.
    state = arranged([((0, 0), (G, G, G, G))], [[(G, Y, Y, G)]])
    fits = [a for a in state.legal_placements() if a.at == (1, 0)]
    assert len(fits) == 1
    assert state.edition.card(fits[0].card).seen(fits[0].rotation) == (G, Y, Y, G)


def test_rotation_out_of_range_is_illegal():
    state = arranged([((0, 0), (G, G, G, G))], [[(G, G, P, P)]])
    card = state.hands[0][0]
    for bad in (4, -1, 1.0, True):
        assert_illegal(state, Place(card, (0, 1), bad), "R-BLOXO-2", "rotation")  # type: ignore[arg-type]
    state.apply_action(Place(card, (0, 1), rotation_for(ED.card(card), (G, G, P, P))))


def test_negative_positions_are_on_the_grid():
    state = arranged([((0, 0), (G, G, G, G))], [[(P, P, G, G)]])
    card = state.hands[0][0]
    legal = set(state.legal_placements())
    assert Place(card, (0, -1), rotation_for(ED.card(card), (P, P, G, G))) in legal
    assert Place(card, (-1, 0), rotation_for(ED.card(card), (P, G, G, P))) in legal


# --------------------------------------------------------------- R-BLOXO-3 placement


def test_occupied_position_is_illegal():
    state = arranged([((0, 0), (G, G, G, G)), ((0, 1), (G, G, Y, Y))], [[(G, G, Y, Y)]])
    assert_illegal(state, Place(state.hands[0][0], (0, 1), 0), "R-BLOXO-3", "already holds")


def test_card_not_next_to_any_card_is_illegal_even_diagonally():
    state = arranged([((0, 0), (G, G, G, G))], [[(Y, Y, G, G)]])
    card = state.hands[0][0]
    assert_illegal(state, Place(card, (1, 1), 0), "R-BLOXO-3", "not orthogonally next")
    assert_illegal(state, Place(card, (3, 0), 0), "R-BLOXO-3", "not orthogonally next")
    assert_illegal(state, Place(card, (0, -1), 1), "R-BLOXO-3", "does not match")
    state.apply_action(Place(card, (0, -1), rotation_for(ED.card(card), (Y, Y, G, G))))


def test_every_touching_side_must_match():
    """R-BLOXO-3: a card touching two cards must match on both sides; one bad side is
    enough to refuse it, and the error names that side only."""
    # (1,-1) has a west neighbour (needs NW pink, SW green) and a south one (needs SW
    # green, SE yellow).
    tableau = [((0, 0), (G, G, G, G)), ((0, -1), (P, P, G, G)), ((1, 0), (G, Y, Y, G))]
    state = arranged(tableau, [[(P, B, Y, G), (P, P, G, G)]])
    fit, west_only = state.hands[0][:2]
    err = assert_illegal(state, Place(west_only, (1, -1), 0), "R-BLOXO-3", "south", "SE", "green", "yellow")
    assert "west" not in err.why
    place = Place(fit, (1, -1), rotation_for(ED.card(fit), (P, B, Y, G)))
    assert place in set(state.legal_placements())
    # pink 2+1, green 4+2+2+1, yellow 2+1: every touching pair joins a block
    assert state.apply_action(place) == 3 + 9 + 3


def test_card_not_in_hand_is_illegal():
    state = stacked("gggg-1", [["ppgg-1"]], pile_top=["ppgg-2"])
    assert_illegal(state, Place("ppgg-2", (0, -1), 0), "R-BLOXO-7", "not in their hand")
    assert_illegal(state, Place("zzzz-9", (0, -1), 0), "R-BLOXO-1", "no card")


# --------------------------------------------------------------- R-BLOXO-4 scoring


def test_group_wholly_inside_new_card_scores_nothing():
    """R-BLOXO-4: only blocks that reach another card score."""
    state = arranged([((0, 0), (G, G, Y, Y))], [[(Y, Y, B, B)]])
    # Below: yellow on top touching yellow: 2 + 2 = 4; the blue half lies inside the new card.
    assert state.apply_action(Place(state.hands[0][0], (0, 1), 0)) == 4


def test_block_counted_once_though_the_new_card_has_two_quadrants_in_it():
    state = arranged([((0, 0), (G, G, G, G))], [[(G, G, Y, Y)]])
    card = state.hands[0][0]
    assert state.apply_action(Place(card, (0, 1), rotation_for(ED.card(card), (G, G, Y, Y)))) == 6


def test_one_card_can_join_two_blocks_into_one():
    """Two separate green blocks joined by the new card count as one merged block."""
    # Greens at (0,0) top half and (2,0) top half, not connected; (1,0) joins them.
    state = arranged([((0, 0), (G, G, Y, Y)), ((0, 1), (Y, Y, B, B)), ((1, 1), (Y, Y, B, B)),
                      ((2, 1), (Y, Y, B, B)), ((2, 0), (G, G, Y, Y))], [[(G, G, Y, Y)]])
    card = state.hands[0][0]
    # green 2 + 2 + 2 = 6; yellow: the new card's bottom joins (0,0)/(2,0)'s bottoms and
    # the three yellow tops below: 2 + 2 + 2 + 6 = 12.
    assert state.apply_action(Place(card, (1, 0), rotation_for(ED.card(card), (G, G, Y, Y)))) == 6 + 12


# --------------------------------------------------------------- R-BLOXO-5 pass


def test_pass_puts_the_card_out_draws_and_costs_four():
    state = stacked("gggg-1", [["ppgg-1"]], pile_top=["pybg-1"])
    pile = state.pile_count
    assert state.has_legal_placement()  # a pass by choice is still allowed
    assert state.apply_action(Pass("ppgg-1")) == -4
    assert state.scores()["ann"] == -4
    assert "ppgg-1" in state.out_of_game and "ppgg-1" not in state.hands[0]
    assert "pybg-1" in state.hands[0] and len(state.hands[0]) == 6 and state.pile_count == pile - 1
    assert state.current_player() == "bob"
    assert state.log[-1].forced is False


def test_pass_with_a_card_not_in_hand_is_illegal():
    state = stacked("gggg-1", [["ppgg-1"]], pile_top=["pybg-1"])
    assert_illegal(state, Pass("pybg-1"), "R-BLOXO-7", "not in their hand")
    assert_illegal(state, Pass(None), "R-BLOXO-1")
    assert_illegal(state, Pass("ppgg-1", forced=True), "R-BLOXO-5", "forced")


def test_pass_with_an_empty_pile_does_not_draw():
    state = _play_until_pile_empty(random.Random(4))
    p = state.current
    before = len(state.hands[p])
    state.apply_action(Pass(state.hands[p][0]))
    assert len(state.hands[p]) == before - 1 and state.pile_count == 0


def _play_until_pile_empty(rng: random.Random) -> BloxoState:
    state = BloxoGame(["ann", "bob"], ED).new_initial_state(rng)
    while state.pile_count:
        state.apply_action(next(a for a in state.legal_actions() if not isinstance(a, Redraw)))
    return state


# --------------------------------------------------------------- R-BLOXO-6 end and ranking


def test_game_ends_when_every_player_has_played_their_last_card():
    rng = random.Random(11)
    state = BloxoGame(["ann", "bob", "cy"], ED).new_initial_state(rng)
    turns = 0
    while not state.is_terminal():
        actions = [a for a in state.legal_actions() if isinstance(a, Place)] or list(state.legal_actions())
        state.apply_action(actions[0])
        turns += 1
    assert state.end_reason == END_ALL_PLAYED
    assert sum(state.hand_counts) == 0 and state.pile_count == 0
    assert turns == 39  # 40 cards, none discarded with 3 players, minus the start card
    assert_illegal(state, Pass(None), "R-BLOXO-6", "ended")
    assert list(state.legal_actions()) == []


def _no_green_hands() -> list[list[str]]:
    no_green = [c.id for c in ED.cards if "green" not in c.quadrants]
    assert len(no_green) >= 12
    return [no_green[:6], no_green[6:12]]


def test_full_round_without_a_possible_placement_ends_the_game():
    """R-BLOXO-6: a green-only start card and hands without green: each player must pass;
    after that full round the game ends, though the pile still holds cards."""
    state = stacked("gggg-1", _no_green_hands())
    assert not state.has_legal_placement(0) and not state.has_legal_placement(1)
    state.apply_action(Pass(state.hands[0][0]))
    assert not state.is_terminal() and state.stuck == {0} and state.log[-1].forced
    assert not state.has_legal_placement(1)  # bob's hand is unchanged, still no green
    state.apply_action(Pass(state.hands[1][0]))
    assert state.is_terminal() and state.end_reason == END_BLOCKED
    assert state.pile_count > 0
    assert state.scores() == {"ann": -4, "bob": -4}
    assert_illegal(state, Place(state.hands[0][0], (0, 1), 0), "R-BLOXO-6")


def test_a_placement_or_a_pass_by_choice_breaks_the_blocked_round():
    """R-BLOXO-6: only an unbroken run of forced passes covering every player ends it."""
    ann, bob = _no_green_hands()
    state = stacked("gggg-1", [ann, bob, ["ppgg-2"]], players=("ann", "bob", "cy"), pile_top=["ppgg-1"])
    state.apply_action(Pass(state.hands[0][0]))  # forced; ann draws ppgg-1
    state.apply_action(Pass(state.hands[1][0]))  # forced
    assert state.stuck == {0, 1} and not state.is_terminal()  # cy has not had a turn yet
    state.apply_action(Place("ppgg-2", (0, -1), 0))
    assert state.stuck == set()
    assert state.has_legal_placement(0)
    state.apply_action(Pass("ppgg-1"))  # by choice
    assert state.log[-1].forced is False and state.stuck == set() and not state.is_terminal()


def test_players_with_empty_hands_are_skipped():
    state = _play_until_pile_empty(random.Random(5))
    data = state.to_json()
    # Move all but one of ann's cards out of the game to make the hands uneven.
    ann, bob = data["players"]
    keep = data["hands"][ann][:1]
    data["out_of_game"] += data["hands"][ann][1:]
    data["hands"][ann] = keep
    data["hand_counts"][ann] = 1
    data["out_count"] = len(data["out_of_game"])
    data["turn"] = ann
    data["stuck"] = []
    state = BloxoState.from_json(state.game, data)
    state.apply_action(Pass(keep[0]))
    assert state.current_player() == bob
    state.apply_action(Pass(state.hands[1][0]))
    assert state.current_player() == bob  # ann has played her last card


def test_ranking_shares_ranks_on_equal_scores():
    state = stacked("gggg-1", [[]], players=("ann", "bob", "cy", "dee"))
    state.score_list[:] = [5, 9, 5, 1]
    assert state.ranking() == [(1, "bob", 9), (2, "ann", 5), (2, "cy", 5), (4, "dee", 1)]
    assert state.winners() == ["bob"]
    state.score_list[:] = [9, 9, 5, 1]
    assert state.winners() == ["ann", "bob"]


# --------------------------------------------------------------- R-BLOXO-7 setup and redraw


@pytest.mark.parametrize("players, discards", [(2, 1), (3, 0), (4, 3)])
def test_setup_discards_deal_and_start_card(players, discards):
    names = ["ann", "bob", "cy", "dee"][:players]
    state = BloxoGame(names, ED).new_initial_state(random.Random(players))
    assert state.out_count == len(state.out_of_game) == discards
    assert all(len(h) == 6 for h in state.hands)
    assert list(state.tableau) == [(0, 0)]
    assert state.pile_count == len(state.draw_pile) == 40 - discards - 6 * players - 1
    everything = state.out_of_game + state.draw_pile + [state.tableau[(0, 0)].card]
    everything += [c for h in state.hands for c in h]
    assert sorted(everything) == sorted(ED.card_ids)


def test_game_needs_two_to_four_players():
    for names in (["ann"], ["a", "b", "c", "d", "e"], ["a", "a"]):
        with pytest.raises(ValueError):
            BloxoGame(names, ED)


def test_one_colour_start_card_may_be_redrawn_once():
    state = stacked("gggg-1", [[]], pile_top=["yyyy-1", "pybg-1"])
    assert Redraw() in list(state.legal_actions())
    state.apply_action(Redraw())
    assert state.tableau[(0, 0)].card == "yyyy-1"
    assert state.draw_pile[-1] == "gggg-1" and state.draw_pile[0] == "pybg-1"
    assert state.turns == 0 and state.current_player() == "ann"
    # The new start card is one colour too, but the redraw is used up.
    assert Redraw() not in list(state.legal_actions())
    assert_illegal(state, Redraw(), "R-BLOXO-7", "already")
    state.undo()
    assert state.tableau[(0, 0)].card == "gggg-1" and not state.redraw_used


def test_redraw_refused_for_a_mixed_start_card_or_after_the_first_turn():
    state = stacked("ppgg-1", [[]])
    assert_illegal(state, Redraw(), "R-BLOXO-7", "not a single colour")
    state = stacked("gggg-1", [["ppgg-1"]], pile_top=["yyyy-1"])
    assert_illegal(state, Redraw("pybg-1"), "R-BLOXO-7", "top of the pile")
    state.apply_action(Place("ppgg-1", (0, -1), 0))
    assert_illegal(state, Redraw(), "R-BLOXO-7", "before the first turn")


# --------------------------------------------------------------- state mechanics


def test_json_round_trip_and_undo_mid_game():
    rng = random.Random(8)
    state = BloxoGame(["ann", "bob", "cy", "dee"], ED).new_initial_state(rng)
    snapshots = [json.dumps(state.to_json(), sort_keys=True)]
    for _ in range(12):
        action = rng.choice(list(state.legal_actions()))
        state.apply_action(action)
        snapshots.append(json.dumps(state.to_json(), sort_keys=True))
        text = json.dumps(state.to_json())
        again = BloxoState.from_json(state.game, json.loads(text))
        assert again == state and again.to_json() == state.to_json()
        assert action_from_json(json.loads(json.dumps(action.to_json()))) == action
    for snap in reversed(snapshots[:-1]):
        state.undo()
        assert json.dumps(state.to_json(), sort_keys=True) == snap
    with pytest.raises(IndexError):
        state.undo()


def test_json_cards_are_observation_cards_plus_id_and_rotation():
    state = stacked("pybg-1", [[]])
    entry = state.to_json()["cards"][0]
    assert entry == {"at": [0, 0], "card": "pybg-1", "rotation": 0,
                     "quadrants": [["pink", "diamond"], ["yellow", "circle"], ["blue", "cross"],
                                   ["green", "star"]]}
    assert state.observation_state() == {"cards": [{"at": [0, 0], "quadrants": entry["quadrants"]}]}


def test_from_json_rejects_inconsistent_states():
    state = stacked("pybg-1", [[]])
    data = state.to_json()
    data["draw_pile"].append(data["hands"]["ann"][0])
    with pytest.raises(ValueError, match="exactly one place"):
        BloxoState.from_json(state.game, data)
    data = state.to_json()
    data["cards"][0]["rotation"] = 1
    with pytest.raises(ValueError, match="do not match"):
        BloxoState.from_json(state.game, data)
    data = state.to_json()
    data["hand_counts"]["ann"] = 5
    with pytest.raises(ValueError):
        BloxoState.from_json(state.game, data)


def test_clone_is_independent_and_str_draws_the_tableau():
    state = stacked("gggg-1", [["ppgg-1"]])
    other = state.clone()
    other.apply_action(Place("ppgg-1", (0, -1), 0))
    assert list(state.tableau) == [(0, 0)] and len(other.tableau) == 2
    text = str(other)
    assert text.splitlines()[:4] == ["PP", "GG", "GG", "GG"]
    assert "> bob" in text
