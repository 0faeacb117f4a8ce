"""A real Mosquitto broker, tables publishing to it, a hub and an independent subscriber, for tests.

Mosquitto comes from Debian (``scripts/setup-system.sh`` installs it); each broker listens on
127.0.0.1 only, on a free port, with a temporary configuration and persistence folder, so it
can be stopped and started again on the same port with its sessions and retained messages.
"""

from __future__ import annotations

import json
import os
import pwd
import shutil
import signal
import socket
import subprocess
import threading
import time
from pathlib import Path
from typing import Any

from service_helpers import PIN, Process, free_port, http

MOSQUITTO_CANDIDATES = (os.environ.get("BLOXCAM_MOSQUITTO"), "/usr/sbin/mosquitto", shutil.which("mosquitto"))


def mosquitto_path() -> str | None:
    for candidate in MOSQUITTO_CANDIDATES:
        if candidate and Path(candidate).exists():
            return candidate
    return None


class Broker:
    """Mosquitto on 127.0.0.1:<free port>, persistent across :meth:`stop` / :meth:`start`."""

    def __init__(self, folder: Path, passwords: dict[str, str] | None = None, tls: tuple[Path, Path] | None = None) -> None:
        executable = mosquitto_path()
        if executable is None:
            raise RuntimeError("Mosquitto is not installed: scripts/setup-system.sh installs Debian's mosquitto")
        self.executable = executable
        self.folder = folder
        folder.mkdir(parents=True, exist_ok=True)
        self.port = free_port()
        (folder / "data").mkdir(exist_ok=True)
        lines = [
            f"listener {self.port} 127.0.0.1",
            *([f"certfile {tls[0]}", f"keyfile {tls[1]}"] if tls else []),
            # As root, Mosquitto would switch to the 'mosquitto' user, which cannot write our
            # temporary folder: its persistence (sessions surviving a restart) would silently fail.
            f"user {pwd.getpwuid(os.getuid()).pw_name}",
            "persistence true",
            f"persistence_location {folder / 'data'}/",
            "autosave_interval 1",
            "max_queued_messages 100000",
            f"log_dest file {folder / 'mosquitto.log'}",
            *(f"log_type {t}" for t in os.environ.get("BLOXCAM_MOSQUITTO_LOG", "error warning notice").split()),
        ]
        if passwords:
            password_file = folder / "passwords"
            password_file.write_text("".join(f"{user}:{secret}\n" for user, secret in passwords.items()))
            password_file.chmod(0o600)
            subprocess.run(["mosquitto_passwd", "-U", str(password_file)], check=True, capture_output=True)
            lines += ["allow_anonymous false", f"password_file {password_file}"]
        else:
            lines.append("allow_anonymous true")
        self.conf = folder / "mosquitto.conf"
        self.conf.write_text("\n".join(lines) + "\n")
        self.process: subprocess.Popen | None = None
        self.start()

    def start(self, timeout: float = 10) -> None:
        self.process = subprocess.Popen([self.executable, "-c", str(self.conf)], stdout=subprocess.DEVNULL,
                                        stderr=subprocess.DEVNULL)
        deadline = time.time() + timeout
        while time.time() < deadline:
            if self.process.poll() is not None:
                log = (self.folder / "mosquitto.log").read_text() if (self.folder / "mosquitto.log").exists() else ""
                raise RuntimeError(f"mosquitto exited with {self.process.returncode}: {log}")
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=0.5):
                    return
            except OSError:
                time.sleep(0.05)
        raise TimeoutError("mosquitto did not start listening")

    def stop(self) -> None:
        """A clean stop: Mosquitto saves its sessions and retained messages."""
        if self.process is not None and self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(10)
        self.process = None


class Subscriber:
    """An independent MQTT subscriber with a persistent session (QoS 1) that records everything."""

    def __init__(self, port: int, topic: str, client_id: str, username: str = "", password: str = "") -> None:
        import paho.mqtt.client as mqtt

        self.messages: list[tuple[str, bytes, bool]] = []
        self.lock = threading.Lock()
        self.connected = threading.Event()
        self.client = mqtt.Client(mqtt.CallbackAPIVersion.VERSION2, client_id=client_id, clean_session=False)
        if username:
            self.client.username_pw_set(username, password)
        self.client.reconnect_delay_set(0.2, 1)  # type: ignore[arg-type]
        self.topic = topic

        def on_connect(client, userdata, flags, reason, properties):
            if not reason.is_failure:
                client.subscribe(topic, qos=1)
                self.connected.set()

        def on_disconnect(client, userdata, flags, reason, properties):
            self.connected.clear()

        def on_message(client, userdata, message):
            with self.lock:
                self.messages.append((message.topic, message.payload, bool(message.retain)))

        self.client.on_connect = on_connect
        self.client.on_disconnect = on_disconnect
        self.client.on_message = on_message
        self.client.connect_async("127.0.0.1", port, 5)
        self.client.loop_start()
        if not self.connected.wait(10):
            raise TimeoutError("test subscriber could not connect")

    def events(self) -> list[dict[str, Any]]:
        with self.lock:
            return [json.loads(p) for t, p, _ in self.messages if t.endswith("/events")]

    def payloads(self, suffix: str) -> list[bytes]:
        with self.lock:
            return [p for t, p, _ in self.messages if t.endswith(suffix)]

    def close(self) -> None:
        self.client.disconnect()
        self.client.loop_stop()


def mqtt_table(name: str, recording: Path, folder: Path, broker_port: int, speed: float, prefix: str = "bloxcam",
               stats_interval: float = 1.0, username: str = "", password: str = "", tls: bool = False,
               env: dict[str, str] | None = None) -> Process:
    """`bloxcam serve` replaying ``recording`` as table ``name``, publishing to the broker."""
    log = folder / f"{name}.sqlite"
    config = folder / f"{name}.toml"
    config.write_text(
        f'[table]\nname = "{name}"\npin = "{PIN}"\nlog = "{log}"\n'
        f'[source]\nkind = "replay"\npath = "{recording}"\nspeed = {float(speed)}\n'
        f'[mqtt]\nhost = "127.0.0.1"\nport = {broker_port}\nprefix = "{prefix}"\nstats_interval = {float(stats_interval)}\n'
        f'username = "{username}"\npassword = "{password}"\ntls = {str(tls).lower()}\n'
    )
    port = free_port()
    process = Process(["serve", "--config", str(config), "--recording", str(recording), "--port", str(port), "--quiet"],
                      folder / f"{name}.out", f"http://127.0.0.1:{port}", "/api/health", env)
    process.log = log  # type: ignore[attr-defined]
    return process


def hub_process(folder: Path, broker_port: int, body: str = "", prefix: str = "bloxcam", pin: str = PIN,
                username: str = "", password: str = "", ca_file: Path | None = None,
                host: str = "127.0.0.1") -> Process:
    """`bloxcam hub` on a free port, subscribed to the broker."""
    port = free_port()
    config = folder / "hub.toml"
    config.write_text(
        f'[broker]\nhost = "{host}"\nport = {broker_port}\nprefix = "{prefix}"\nclient_id = "test-hub-{port}"\n'
        f'username = "{username}"\npassword = "{password}"\n'
        + (f'tls = true\nca_file = "{ca_file}"\n' if ca_file else "")
        + f'[hub]\nhost = "127.0.0.1"\nport = {port}\npin = "{pin}"\nresults = "{folder / "hub-results.json"}"\n' + body
    )
    return Process(["hub", "--config", str(config)], folder / "hub.out", f"http://127.0.0.1:{port}", "/api/health")


def self_signed_certificate(folder: Path, name: str = "localhost") -> tuple[Path, Path]:
    """A certificate for the broker, valid for localhost and 127.0.0.1, that is its own CA."""
    cert, key = folder / "broker.crt", folder / "broker.key"
    subprocess.run(
        ["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2", "-subj", f"/CN={name}",
         "-addext", "subjectAltName=DNS:localhost,IP:127.0.0.1", "-keyout", str(key), "-out", str(cert)],
        check=True, capture_output=True,
    )
    return cert, key


def wait_for(predicate, timeout: float, what: str, interval: float = 0.1):
    deadline = time.time() + timeout
    while time.time() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(interval)
    raise TimeoutError(f"timed out waiting for {what}")


def eventually_equal(value, expected, timeout: float, what: str, interval: float = 0.1) -> None:
    """Poll ``value()`` until it equals ``expected``; after ``timeout`` s fail showing the last value.

    For what a process does after a signal the test can see (a cursor written after the
    broker's acknowledgement): the condition is checked as strictly, just not too early.
    """
    deadline = time.time() + timeout
    while (got := value()) != expected and time.time() < deadline:
        time.sleep(interval)
    assert got == expected, f"{what}: {got!r}, expected {expected!r}"
