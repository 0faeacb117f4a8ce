"""Benchmark the Blockers! engine: legal-action enumeration on a two-thirds-full board
(54 of 81 spaces) and group scoring (R-BLOCKERS-5).

Run: ``.venv/bin/python bench/blockers_engine.py``; writes bench/results/blockers_engine.json.
"""

from __future__ import annotations

import json
import platform
import random
import sys
import timeit
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from engine.blockers import BlockersGame, capturable_map, count_groups  # noqa: E402

SEED = 2024
TARGET_FILLED = 54  # two thirds of 81


def position(players: list, filled: int) -> object:
    """Play random legal turns (fixed seed, placements preferred 9 times in 10 so that the
    board fills before the game ends) until ``filled`` spaces hold a tile."""
    game = BlockersGame(players)
    rng = random.Random(SEED)
    state = game.new_initial_state(rng)
    while sum(t is not None for t in state.board) < filled:
        if state.is_terminal():
            raise RuntimeError("game ended before the board filled; change SEED")
        actions = list(state.legal_actions())
        places = [a for a in actions if type(a).__name__ == "Place"]
        state.apply_action(rng.choice(places if places and rng.random() < 0.9 else actions))
    return state


def per_call(fn, number: int) -> float:
    """Best of five runs, seconds per call."""
    return min(timeit.repeat(fn, number=number, repeat=5)) / number


def main() -> int:
    results: dict = {"python": platform.python_version(), "machine": platform.machine(), "seed": SEED, "cases": []}
    setups = {
        "5 players": ["red", "green", "blue", "yellow", "violet"],
        "3 players": ["red", "green", "blue"],
        "2 players, two colours each": [("red", "green"), ("blue", "yellow")],
    }
    for label, players in setups.items():
        state = position(players, TARGET_FILLED)
        e = state.edition
        actions = list(state.legal_actions())
        enum_s = per_call(lambda: list(state.legal_actions()), 300)
        scores_s = per_call(state.scores, 1000)
        groups_s = per_call(lambda: count_groups(state.board, e.neighbours, e.colors), 1000)
        cap_s = per_call(lambda: capturable_map(state.board, e.neighbours), 1000)
        case = {
            "setup": label,
            "filled": sum(t is not None for t in state.board),
            "turns_played": state.turns,
            "legal_actions": len(actions),
            "captures": sum(type(a).__name__ == "Capture" for a in actions),
            "legal_actions_us": round(enum_s * 1e6, 1),
            "scores_all_players_us": round(scores_s * 1e6, 1),
            "count_groups_all_colours_us": round(groups_s * 1e6, 1),
            "capturable_map_us": round(cap_s * 1e6, 1),
        }
        results["cases"].append(case)
        print(
            f"{label:28s} filled {case['filled']}/81, {case['legal_actions']} legal actions "
            f"({case['captures']} captures): legal_actions() {case['legal_actions_us']} us, "
            f"scores() {case['scores_all_players_us']} us, count_groups(all) {case['count_groups_all_colours_us']} us, "
            f"capturable_map() {case['capturable_map_us']} us"
        )
    out = Path(__file__).resolve().parent / "results" / "blockers_engine.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(results, indent=2) + "\n")
    print(f"wrote {out.relative_to(Path(__file__).resolve().parents[1])}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
