"""Block Out! table mode: declared plays and the stack sensor's events (R-BLOCKOUT-2..6)."""

from __future__ import annotations

import copy

import pytest

from engine import IllegalAction
from engine.blockout import Block
from engine.blockout.table import BlockOutTable, TablePhase

Y_S, B_M, R_L, Y_M = Block("yellow", "small"), Block("black", "medium"), Block("red", "large"), Block("yellow", "medium")


def refused(table: BlockOutTable, rule: str, call, *args) -> None:
    before = copy.deepcopy(table)
    with pytest.raises(IllegalAction) as err:
        call(*args)
    assert err.value.rule == rule, err.value
    assert table == before, "an illegal play leaves the table as it was"


def counted(table: BlockOutTable, player: str, block: Block, t: float, outcome: str = "stood") -> None:
    table.play_block(player, block)
    assert table.phase is TablePhase.PLACING
    assert table.stability("counting", t) == "counting"
    assert table.stability(outcome, t + (3.0 if outcome == "stood" else 1.0)) == outcome


def test_first_block_needs_no_count_then_turns_go_round():
    table = BlockOutTable(["ann", "bo", "cy"])
    table.play_block("ann", Y_S)
    assert table.phase is TablePhase.TURN and table.current_player == "bo"
    counted(table, "bo", B_M, 10.0)
    assert table.current_player == "cy" and table.stack == [Y_S, B_M]


def test_R_BLOCKOUT_2_block_already_on_the_stack():
    table = BlockOutTable(["ann", "bo"])
    table.play_block("ann", Y_S)
    refused(table, "R-BLOCKOUT-2", table.play_block, "bo", Y_S)
    refused(table, "R-BLOCKOUT-1", table.play_block, "bo", Block("green", "small"))


def test_R_BLOCKOUT_3_no_play_before_the_count_ends_and_stood_needs_three_seconds():
    table = BlockOutTable(["ann", "bo"])
    table.play_block("ann", Y_S)
    table.play_block("bo", B_M)
    refused(table, "R-BLOCKOUT-3", table.play_block, "ann", R_L)
    table.stability("counting", 5.0)
    refused(table, "R-BLOCKOUT-3", table.play_action_card, "ann", "pass")
    refused(table, "R-BLOCKOUT-3", table.stability, "stood", 7.5)
    assert table.stability("stood", 7.995) == "stood"  # within the sensor's 10 ms
    assert table.current_player == "ann"


def test_R_BLOCKOUT_3_and_4_a_fall_during_the_count_and_the_new_stack():
    table = BlockOutTable(["ann", "bo", "cy"])
    table.play_block("ann", Y_S)
    counted(table, "bo", B_M, 3.0, outcome="fell")
    assert table.stack == [] and table.phase is TablePhase.RESTART and table.current_player == "bo"
    assert table.falls == {"bo": 1}
    refused(table, "R-BLOCKOUT-4", table.play_action_card, "bo", "pass")
    table.play_block("bo", B_M)  # a new stack: the fallen blocks are free again, no count
    assert table.current_player == "cy" and table.stack == [B_M]


def test_fall_on_the_ninth_block_and_win_by_the_ninth_block():
    table = BlockOutTable(["ann", "bo"])
    blocks = table.edition.blocks
    table.play_block("ann", blocks[0])
    for i, block in enumerate(blocks[1:8], 1):
        counted(table, table.current_player, block, 10.0 * i)
    player = table.current_player
    counted(table, player, blocks[8], 100.0, outcome="fell")
    assert table.winner is None and table.phase is TablePhase.RESTART
    again = BlockOutTable(["ann", "bo"])
    again.play_block("ann", blocks[0])
    for i, block in enumerate(blocks[1:9], 1):
        counted(again, again.current_player, block, 10.0 * i)
    assert again.winner == "ann" and again.is_terminal() and again.scores() == {"ann": 1, "bo": 0}
    refused(again, "R-BLOCKOUT-5", again.play_action_card, "bo", "pass")


def test_R_BLOCKOUT_5_last_card_wins_and_the_advanced_final_block():
    table = BlockOutTable(["ann", "bo", "cy"])
    table.play_block("ann", Y_S)
    refused(table, "R-BLOCKOUT-5", table.out_of_cards, "cy")
    table.out_of_cards("ann")
    assert table.winner == "ann"
    advanced = BlockOutTable(["ann", "bo", "cy"], advanced=True)
    advanced.play_block("ann", Y_S)
    advanced.out_of_cards("ann")
    assert advanced.winner is None and advanced.current_player == "ann" and advanced.final_block
    refused(advanced, "R-BLOCKOUT-5", advanced.play_action_card, "ann", "pass")
    counted(advanced, "ann", R_L, 20.0)
    assert advanced.winner == "ann"
    falls = BlockOutTable(["ann", "bo"], advanced=True)
    falls.play_block("ann", Y_S)
    falls.out_of_cards("ann")
    counted(falls, "ann", R_L, 20.0, outcome="fell")
    assert falls.winner is None and not falls.final_block


def test_R_BLOCKOUT_6_reverse_and_out_of_turn():
    table = BlockOutTable(["ann", "bo", "cy"])
    refused(table, "R-BLOCKOUT-6", table.play_block, "cy", Y_S)
    table.play_action_card("ann", "reverse")
    assert table.current_player == "cy" and table.direction == -1
    table.play_action_card("cy", "pass")
    assert table.current_player == "bo"
    two = BlockOutTable(["ann", "bo"])
    two.play_action_card("ann", "reverse")  # with two players Reverse acts as a Pass
    assert two.current_player == "bo" and two.direction == 1


def test_sensor_events_out_of_place_are_ignored_not_errors():
    table = BlockOutTable(["ann", "bo"])
    assert table.stability("counting", 1.0) is None  # a knock settling, no block pending
    assert table.stability("stood", 4.0) is None
    assert table.stability("fell", 5.0) is None  # nothing on the stack to fall
    assert table.phase is TablePhase.TURN
    with pytest.raises(ValueError):
        table.stability("wobbled", 6.0)
