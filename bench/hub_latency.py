"""End-to-end latency from a table's commit to the hub page's live stream, with 20 tables in the room.

Run: .venv/bin/python bench/hub_latency.py [--tables 20] [--duration 60] [--speed 1]

A real Mosquitto (Debian's, on a free port of 127.0.0.1) and a real `bloxcam hub` process;
the tables are simulated in this process, each a full TableService (its own SQLite game log)
with a ReplayRunner replaying a recorded Blox game at real speed (alternately the 3- and the
2-player game, started a quarter of a second apart) and a TablePublisher with its own MQTT
connection. The hub's server-sent event stream (/api/stream, what the page reads) is read
over HTTP like a browser does. For every event, latency = the moment the hub's stream
delivered it minus the moment the table committed it to its log (a listener on the table
service, same clock). Prints the figures and writes bench/results/hub_latency.json.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import threading
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))
from mqtt_helpers import Broker, hub_process  # noqa: E402
from service_helpers import FIXTURES  # noqa: E402

from service.config import GameSettings, MqttSettings, SourceSettings, TableConfig, TableSettings  # noqa: E402
from service.mqtt import TablePublisher  # noqa: E402
from service.recording import load_recording  # noqa: E402
from service.runner import ReplayRunner  # noqa: E402
from service.table import TableService  # noqa: E402

RESULTS = Path(__file__).parent / "results" / "hub_latency.json"
GAMES = [FIXTURES / "blox" / "game-3p", FIXTURES / "blox" / "game-2p"]


class StreamReader(threading.Thread):
    """Reads the hub's SSE stream and notes when each event arrived."""

    def __init__(self, url: str) -> None:
        super().__init__(daemon=True)
        self.url = url
        self.received: dict[tuple[str, int, int], float] = {}
        self.messages = 0
        self.longest_silence = 0.0
        self.connected = threading.Event()

    def run(self) -> None:
        stream = urllib.request.urlopen(self.url + "/api/stream", timeout=120)
        name = None
        last = time.time()
        for raw in stream:
            line = raw.decode().rstrip("\n")
            if line.startswith("event: "):
                name = line[7:]
            elif line.startswith("data: "):
                now = time.time()
                self.messages += 1
                if name == "hub":
                    self.connected.set()
                elif self.connected.is_set():
                    self.longest_silence = max(self.longest_silence, now - last)
                last = now
                if name == "event":
                    event = json.loads(line[6:])
                    self.received.setdefault((event["table"], event["game_id"], event["seq"]), now)


def percentile(values: list[float], p: int) -> float:
    return statistics.quantiles(values, n=100, method="inclusive")[p - 1]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--tables", type=int, default=20)
    parser.add_argument("--duration", type=float, default=60.0, help="seconds of play measured")
    parser.add_argument("--speed", type=float, default=1.0, help="replay speed (1 = real speed)")
    args = parser.parse_args()

    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        broker = Broker(folder / "broker")
        hub = hub_process(folder, broker.port, prefix="bench")
        reader = StreamReader(hub.url)
        reader.start()
        if not reader.connected.wait(10):
            raise SystemExit("the hub's stream did not answer")
        committed: dict[tuple[str, int, int], float] = {}
        lock = threading.Lock()
        tables = []
        for index in range(args.tables):
            name = f"table-{index + 1:02d}"
            recording = load_recording(GAMES[index % len(GAMES)])
            config = TableConfig(
                table=TableSettings(name=name, log=folder / f"{name}.sqlite"),
                game=GameSettings("blox", tuple(recording.players)),
                source=SourceSettings("replay", str(recording.path), args.speed),
                mqtt=MqttSettings(host="127.0.0.1", port=broker.port, prefix="bench", stats_interval=5.0),
            )
            service = TableService(config)

            def on_commit(events, reset, name=name, service=service):
                now = time.time()  # called right after the commit, under the table's lock
                with lock:
                    for event in events:
                        committed[(name, service.record.id, event["seq"])] = now

            service.subscribe(on_commit)
            publisher = TablePublisher(service, config.mqtt)
            publisher.start()
            tables.append((service, ReplayRunner(service, recording, args.speed), publisher))
        time.sleep(1.0)  # every publisher connected
        cpu_start = os.times()
        started = time.time()
        for _, runner, _ in tables:
            runner.start()
            time.sleep(0.25)
        time.sleep(max(0.0, args.duration - (time.time() - started)))
        for _, runner, _ in tables:
            runner.stop()
        elapsed = time.time() - started
        cpu = os.times()
        with lock:
            measured = dict(committed)
        time.sleep(2.0)  # the last events in flight
        hub_overview = hub.get("/api/hub")
        for service, runner, publisher in tables:
            publisher.stop()
            service.log.close()
        hub.stop()
        broker.stop()

    latencies = sorted((reader.received[k] - t) * 1000 for k, t in measured.items() if k in reader.received)
    missing = sum(1 for k in measured if k not in reader.received)
    if not latencies:
        raise SystemExit("no event reached the hub's stream")
    gaps = sum(len(t["gaps"]) for t in hub_overview["tables"])
    results = {
        "tables": args.tables,
        "speed": args.speed,
        "duration_s": round(elapsed, 1),
        "events": len(latencies),
        "events_per_s": round(len(latencies) / elapsed, 2),
        "missing_at_hub_stream": missing,
        "hub_gaps": gaps,
        "hub_tables_online": sum(1 for t in hub_overview["tables"] if t["health"] == "online"),
        "latency_ms_median": round(statistics.median(latencies), 2),
        "latency_ms_p90": round(percentile(latencies, 90), 2),
        "latency_ms_p99": round(percentile(latencies, 99), 2),
        "latency_ms_max": round(latencies[-1], 2),
        "stream_messages": reader.messages,
        "stream_longest_silence_s": round(reader.longest_silence, 2),
        "tables_process_cpu_percent": round(
            100 * ((cpu.user - cpu_start.user) + (cpu.system - cpu_start.system)) / elapsed, 1),
        "cores": os.cpu_count(),
        "target_median_ms": 200,
    }
    for key, value in results.items():
        print(f"{key:28} {value}")
    RESULTS.parent.mkdir(exist_ok=True)
    RESULTS.write_text(json.dumps(results, indent=2) + "\n")
    print(f"written to {RESULTS.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
