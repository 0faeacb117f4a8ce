"""Blox engine benchmark: games, actions, legal-action enumeration and table-mode inference.

Run: .venv/bin/python bench/blox_engine.py [--games N]
Prints the figures and writes bench/results/blox_engine.json. Single process, one core.
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import time
from pathlib import Path

from engine.blox import BloxGame, infer
from engine.blox.playout import choose_action

PLAYERS = ["green", "brown", "blue", "yellow"]
RESULTS = Path(__file__).parent / "results" / "blox_engine.json"


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def record_games(n: int, seed: int) -> tuple[list[tuple], float, int]:
    """Play ``n`` complete 4-player games; return (initial state, actions) per game, time, actions."""
    games = []
    start = time.perf_counter()
    total = 0
    for i in range(n):
        rng = random.Random(seed + i)
        state = BloxGame(PLAYERS).new_initial_state(rng)
        initial = state.clone()
        actions = []
        while not state.is_terminal():
            action = choose_action(state, rng)
            state.apply_action(action)
            actions.append(action)
        total += len(actions)
        games.append((initial, actions))
    return games, time.perf_counter() - start, total


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--games", type=int, default=20)
    parser.add_argument("--seed", type=int, default=900_000)
    args = parser.parse_args()

    games, elapsed, actions_played = record_games(args.games, args.seed)
    games_per_s = args.games / elapsed

    # Applying actions alone (no enumeration): replay the recorded action lists.
    start = time.perf_counter()
    applied = 0
    for initial, actions in games:
        state = initial.clone()
        for action in actions:
            state.apply_action(action)
        applied += len(actions)
    apply_per_s = applied / (time.perf_counter() - start)

    # Legal-action enumeration and table-mode inference on states along the games.
    enum_ms, infer_ms, counts = [], [], []
    for initial, actions in games[:5]:
        state = initial.clone()
        table = BloxGame(PLAYERS).table_state(state.observation_state()["cells"])
        for action in actions:
            t0 = time.perf_counter()
            legal = list(state.legal_actions())
            enum_ms.append((time.perf_counter() - t0) * 1000)
            counts.append(len(legal))
            table.phase, table.turn, table.players = state.phase, state.turn, tuple(
                p.__class__(p.color, p.points, p.blocks, None, p.joker_up) for p in state.players
            )
            table.board = state.board
            state.apply_action(action)
            cells = state.observation_state()["cells"]
            t0 = time.perf_counter()
            infer(table, cells)
            infer_ms.append((time.perf_counter() - t0) * 1000)

    results = {
        "games": args.games,
        "players": len(PLAYERS),
        "random_games_per_s": round(games_per_s, 2),
        "mean_actions_per_game": round(actions_played / args.games, 1),
        "actions_played_per_s_with_enumeration": round(actions_played / elapsed, 1),
        "actions_applied_per_s": round(apply_per_s, 1),
        "legal_enumeration_ms_median": round(statistics.median(enum_ms), 4),
        "legal_enumeration_ms_p99": round(percentile(enum_ms, 0.99), 4),
        "legal_actions_per_state_mean": round(statistics.mean(counts), 1),
        "inference_ms_median": round(statistics.median(infer_ms), 4),
        "inference_ms_p99": round(percentile(infer_ms, 0.99), 4),
        "inference_observations": len(infer_ms),
    }
    for key, value in results.items():
        print(f"{key:42} {value}")
    print(f"targets: inference p99 < 2 ms -> {'met' if results['inference_ms_p99'] < 2 else 'MISSED'}; "
          f">= 20000 actions applied/s -> {'met' if apply_per_s >= 20000 else 'MISSED'}")
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(json.dumps(results, indent=2) + "\n")
    print(f"wrote {RESULTS.relative_to(Path.cwd()) if RESULTS.is_relative_to(Path.cwd()) else RESULTS}")


if __name__ == "__main__":
    main()
