"""Bloxo engine benchmark: legal-placement enumeration and random games per second.

    .venv/bin/python bench/bloxo_engine.py [--quick]

Prints the figures and writes them to bench/results/bloxo_engine.json.

* enumeration: ``list(state.legal_placements())`` for the player to move with a 6-card
  hand on a 30-card tableau (tableaux grown by random legal play, 20 seeds), median and
  99th percentile over many timed calls;
* random games: complete full-information games where each player places a uniformly
  random legal card when one exists and otherwise passes, for 2, 3 and 4 players.
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

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from engine.bloxo import BloxoGame, BloxoState, Place, load_edition  # noqa: E402

RESULTS = Path(__file__).resolve().parent / "results" / "bloxo_engine.json"


def thirty_card_state(seed: int) -> BloxoState:
    """A 2-player state with 30 cards on the table and 6 cards in the mover's hand."""
    rng = random.Random(seed)
    game = BloxoGame(["ann", "bob"], load_edition())
    state = game.new_initial_state(rng)
    while len(state.tableau) < 30:
        placements = list(state.legal_placements())
        if not placements:
            return thirty_card_state(seed + 1000)
        state.apply_action(rng.choice(placements))
    data = state.to_json()
    mover = data["turn"]
    other = next(p for p in data["players"] if p != mover)
    loose = data["hands"][mover] + data["hands"][other] + data["draw_pile"]
    rng.shuffle(loose)
    data["hands"] = {mover: loose[:6], other: loose[6:]}
    data["draw_pile"] = []
    data["hand_counts"] = {mover: 6, other: len(loose) - 6}
    data["pile_count"] = 0
    return BloxoState.from_json(game, data)


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def bench_enumeration(rounds: int) -> dict:
    states = [thirty_card_state(seed) for seed in range(20)]
    counts = [sum(1 for _ in s.legal_placements()) for s in states]
    timings = []
    for _ in range(rounds):
        for s in states:
            t0 = time.perf_counter()
            list(s.legal_placements())
            timings.append(time.perf_counter() - t0)
    return {
        "tableau_cards": 30,
        "hand_cards": 6,
        "tableaux": len(states),
        "calls": len(timings),
        "median_ms": round(statistics.median(timings) * 1e3, 4),
        "p99_ms": round(percentile(timings, 0.99) * 1e3, 4),
        "legal_placements_median": statistics.median(counts),
        "legal_placements_range": [min(counts), max(counts)],
    }


def random_game(game: BloxoGame, rng: random.Random) -> int:
    state = game.new_initial_state(rng)
    turns = 0
    while not state.is_terminal():
        placements = list(state.legal_placements())
        if placements:
            state.apply_action(rng.choice(placements))
        else:
            state.apply_action(next(a for a in state.legal_actions() if not isinstance(a, Place)))
        turns += 1
    return turns


def bench_games(seconds: float) -> dict:
    edition = load_edition()
    out = {}
    for n in (2, 3, 4):
        game = BloxoGame(["ann", "bob", "cy", "dee"][:n], edition)
        rng = random.Random(n)
        games = turns = 0
        t0 = time.perf_counter()
        while time.perf_counter() - t0 < seconds:
            turns += random_game(game, rng)
            games += 1
        elapsed = time.perf_counter() - t0
        out[f"{n}_players"] = {"games": games, "seconds": round(elapsed, 3),
                               "games_per_second": round(games / elapsed, 1),
                               "turns_per_game": round(turns / games, 1)}
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="shorter run (smoke test)")
    args = parser.parse_args()
    enumeration = bench_enumeration(rounds=10 if args.quick else 100)
    games = bench_games(seconds=0.5 if args.quick else 3.0)
    results = {
        "benchmark": "bloxo_engine",
        "python": platform.python_version(),
        "machine": platform.machine(),
        "processor": platform.processor() or platform.machine(),
        "enumeration": enumeration,
        "random_games": games,
    }
    e = enumeration
    print(f"legal-placement enumeration, {e['tableau_cards']}-card tableau, {e['hand_cards']}-card hand "
          f"({e['calls']} calls over {e['tableaux']} tableaux): median {e['median_ms']:.3f} ms, "
          f"p99 {e['p99_ms']:.3f} ms; legal placements median {e['legal_placements_median']} "
          f"(range {e['legal_placements_range'][0]}..{e['legal_placements_range'][1]})")
    for key, g in games.items():
        print(f"random complete games, {key.replace('_', ' ')}: {g['games_per_second']:.1f} games/s "
              f"({g['games']} games in {g['seconds']} s, {g['turns_per_game']} turns/game)")
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(json.dumps(results, indent=2) + "\n")
    print(f"wrote {RESULTS.relative_to(Path.cwd()) if RESULTS.is_relative_to(Path.cwd()) else RESULTS}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
