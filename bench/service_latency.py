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

RESULTS = Path(__file__).parent / "results" / "service_latency.json"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--speed", type=float, default=5.0)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        server = Server(FIXTURES / "blox" / "game-3p", Path(tmp) / "table.sqlite", speed=args.speed)
        latencies: list[float] = []
        try:
            stream = urllib.request.urlopen(server.url + "/api/stream", timeout=60)
            name = None
            source = None
            for raw in stream:
                line = raw.decode().rstrip("\n")
                if line.startswith("event: "):
                    name = line[7:]
                elif line.startswith("data: "):
                    data = json.loads(line[6:])
                    received = time.time()
                    if name == "state":
                        source = data["source"]
                        if data.get("finished"):
                            break
                    elif name == "events" and source and source.get("start_wall") is not None:
                        for event in data:
                            due = source["start_wall"] + (event["t"] - source["first_t"]) / args.speed
                            latencies.append((received - due) * 1000)
        finally:
            server.stop()
    latencies.sort()
    results = {
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
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(json.dumps(results, indent=2) + "\n")
    print(f"wrote {RESULTS}")


if __name__ == "__main__":
    main()
