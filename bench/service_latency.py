"""Latency from a stable frame's arrival to its event on the page's live stream.

Run: .venv/bin/python bench/service_latency.py [--speed 5]
Starts a real `bloxcam serve` replaying the bundled recorded Blox game at ``speed`` times
its real pace, reads the page's server-sent event stream over HTTP like a browser does,
and for every event compares the time it arrived with the time its frame was due.
Prints the figures and writes bench/results/service_latency.json.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))
from service_helpers import FIXTURES, Server  # noqa: E402

RESULTS_DIR = Path(__file__).parent / "results"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--speed", type=float, default=5.0)
    parser.add_argument("--recording", default=str(FIXTURES / "blox" / "game-3p"),
                        help="a recorded game; blox/camera-game puts recognition in the loop")
    parser.add_argument("--stable-seconds", type=float, default=1.0)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        server = Server(Path(args.recording), Path(tmp) / "table.sqlite", speed=args.speed,
                        extra=["--stable-seconds", str(args.stable_seconds)])
        latencies: list[float] = []
        try:
            stream = urllib.request.urlopen(server.url + "/api/stream", timeout=60)
            name = None
            source = None
            for raw in stream:
                line = raw.decode().rstrip("\n")
                if line.startswith(":") or line == "event: frame":
                    # Quiet stream: the recording may have run out without a last event.
                    if server.get("/api/state")["source"]["finished"]:
                        break
                if line.startswith("event: "):
                    name = line[7:]
                elif line.startswith("data: "):
                    data = json.loads(line[6:])
                    received = time.time()
                    if name == "state":
                        source = data["source"]
                        if data.get("finished") or source.get("finished"):
                            break
                    elif name == "events" and source and source.get("start_wall") is not None:
                        for event in data:
                            due = source["start_wall"] + (event["t"] - source["first_t"]) / args.speed
                            latencies.append((received - due) * 1000)
        finally:
            server.stop()
    latencies.sort()
    results = {
        "recording": Path(args.recording).name,
        "speed": args.speed,
        "events": len(latencies),
        "latency_ms_median": round(statistics.median(latencies), 2),
        "latency_ms_p90": round(latencies[int(0.9 * len(latencies))], 2),
        "latency_ms_p99": round(latencies[int(0.99 * len(latencies))], 2),
        "latency_ms_max": round(latencies[-1], 2),
    }
    for key, value in results.items():
        print(f"{key:20} {value}")
    print(f"target: median < 300 ms -> {'met' if results['latency_ms_median'] < 300 else 'MISSED'}")
    results_file = RESULTS_DIR / f"service_latency_{Path(args.recording).name}.json"
    RESULTS_DIR.mkdir(parents=True, exist_ok=True)
    results_file.write_text(json.dumps(results, indent=2) + "\n")
    print(f"wrote bench/results/{results_file.name}")


if __name__ == "__main__":
    main()
