"""Benchmark of the Block Out! rules engine: random full games (with random falls).

Run: ``.venv/bin/python bench/blockout_engine.py [--games N] [--seed S]``.
Prints the figures and writes them to ``bench/results/blockout_engine.json``.
"""

from __future__ import annotations

import argparse
import json
import platform
import random
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from engine.blockout import BlockOutGame, BlockOutState, Fell, Phase, Stood  # noqa: E402

FALL_PROBABILITY = 0.15


def play(game: BlockOutGame, rng: random.Random) -> tuple[int, int]:
    """One random game; returns (actions applied, legal_actions calls)."""
    state = game.new_initial_state(random.Random(rng.getrandbits(64)))
    actions = calls = 0
    while not state.is_terminal():
        if state.phase is Phase.COUNT:
            action = Fell() if rng.random() < FALL_PROBABILITY else Stood()
        else:
            legal = list(state.legal_actions())
            calls += 1
            action = rng.choice(legal)
        state.apply_action(action)
        actions += 1
    return actions, calls


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--games", type=int, default=2000, help="random games per player count")
    parser.add_argument("--seed", type=int, default=12345)
    args = parser.parse_args()

    rng = random.Random(args.seed)
    results: dict[str, object] = {
        "python": platform.python_version(),
        "machine": platform.machine(),
        "games_per_player_count": args.games,
        "fall_probability": FALL_PROBABILITY,
        "by_players": {},
    }
    total_games = total_actions = 0
    total_time = 0.0
    for players in range(2, 7):
        game = BlockOutGame.create(players)
        lengths = []
        start = time.perf_counter()
        for _ in range(args.games):
            n, _ = play(game, rng)
            lengths.append(n)
        elapsed = time.perf_counter() - start
        actions = sum(lengths)
        row = {
            "games_per_s": round(args.games / elapsed, 1),
            "actions_per_s": round(actions / elapsed),
            "mean_actions_per_game": round(statistics.fmean(lengths), 1),
            "max_actions_per_game": max(lengths),
        }
        results["by_players"][str(players)] = row  # type: ignore[index]
        print(f"{players} players: {row['games_per_s']:8.1f} games/s  {row['actions_per_s']:8d} actions/s  "
              f"mean {row['mean_actions_per_game']} actions/game (max {row['max_actions_per_game']})")
        total_games += args.games
        total_actions += actions
        total_time += elapsed

    # JSON round trip and clone, measured on mid-game states.
    game = BlockOutGame.create(4, advanced=True)
    states = []
    for i in range(200):
        s = game.new_initial_state(random.Random(i))
        for _ in range(30):
            if s.is_terminal():
                break
            s.apply_action(Stood() if s.phase is Phase.COUNT else rng.choice(list(s.legal_actions())))
        states.append(s)
    start = time.perf_counter()
    reps = 10
    for _ in range(reps):
        for s in states:
            BlockOutState.from_json(s.to_json())
    json_per_s = reps * len(states) / (time.perf_counter() - start)
    start = time.perf_counter()
    for _ in range(reps):
        for s in states:
            s.clone()
    clone_per_s = reps * len(states) / (time.perf_counter() - start)

    results["overall"] = {
        "games": total_games,
        "games_per_s": round(total_games / total_time, 1),
        "actions_per_s": round(total_actions / total_time),
        "json_round_trips_per_s": round(json_per_s),
        "clones_per_s": round(clone_per_s),
    }
    o = results["overall"]
    print(f"overall: {o['games_per_s']} games/s, {o['actions_per_s']} actions/s over {total_games} games; "
          f"JSON round trips {o['json_round_trips_per_s']}/s; clones {o['clones_per_s']}/s")
    out = Path(__file__).resolve().parent / "results" / "blockout_engine.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(results, indent=2) + "\n")
    print(f"wrote {out.relative_to(out.parents[2])}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
