"""``bloxcam hub --config hub.toml``: one page for every table of the room (see service/hub.py)."""

from __future__ import annotations

import argparse
import sys
from dataclasses import replace

from service.errors import CliError


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "hub",
        help="show every table of the room on one page (tables publish over MQTT)",
        description="Subscribe to every bloxcam table on an MQTT broker and serve one page with all their games, "
        "scores, last actions, health and the tournament standings.",
    )
    parser.add_argument("--config", required=True, help="hub configuration (TOML); see service/hub.py")
    parser.add_argument("--host", help="address to serve the page on (overrides [hub] host)")
    parser.add_argument("--port", type=int, help="port to serve the page on (overrides [hub] port)")
    parser.add_argument("--pin", help="hub PIN for changes (overrides [hub] pin)")
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    import uvicorn

    from service.hub import Hub, HubConfigError, HubSubscriber, create_hub_app, load_hub_config
    from service.web import SHUTDOWN_GRACE_S, run_until_stopped

    try:
        config = load_hub_config(args.config)
    except HubConfigError as exc:
        raise CliError(str(exc)) from exc
    hub_settings = config.hub
    if args.host:
        hub_settings = replace(hub_settings, host=args.host)
    if args.port is not None:
        if not 0 <= args.port <= 65535:
            raise CliError(f"--port {args.port} is not a TCP port")
        hub_settings = replace(hub_settings, port=args.port)
    if args.pin is not None:
        if args.pin and not (4 <= len(args.pin) <= 12 and args.pin.isalnum()):
            raise CliError("--pin must be 4 to 12 letters or digits")
        hub_settings = replace(hub_settings, pin=args.pin)
    config = replace(config, hub=hub_settings)
    try:
        hub = Hub(config)
    except HubConfigError as exc:
        raise CliError(str(exc)) from exc
    subscriber = HubSubscriber(hub)
    app = create_hub_app(hub)
    broker = config.broker
    print(f"bloxcam hub: tables under mqtt://{broker.host}:{broker.port}/{broker.prefix}/+; "
          f"page at http://{hub_settings.host}:{hub_settings.port}/", flush=True)
    if not hub_settings.pin:
        print("bloxcam hub: no hub PIN set: the page is read-only (set [hub] pin or --pin)", file=sys.stderr)
    server = uvicorn.Server(uvicorn.Config(app, host=hub_settings.host, port=hub_settings.port, log_level="warning",
                                           timeout_graceful_shutdown=SHUTDOWN_GRACE_S))
    subscriber.start()
    try:
        run_until_stopped(server)
    finally:
        subscriber.stop()
    return 0
