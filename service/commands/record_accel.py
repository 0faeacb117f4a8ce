"""``bloxcam record-accel OUT.csv``: record the Block Out! base's accelerometer.

Writes observation.md's ``t,ax,ay,az`` CSV from an MPU-6050 or ADXL345 on I2C, or an
IIO accelerometer; ``fault`` events (bus errors, FIFO overflow, recovery) go to stderr
as JSON Lines and never stop the recording. ``--emulate TRACE.csv`` runs the same
driver against a register-level emulator of the chip fed by a recorded or simulated
trace, on a virtual clock (as fast as the machine goes), so the command is testable
anywhere; ``--inject`` adds faults to the emulated bus.
"""

from __future__ import annotations

import argparse
import json
import sys
import time


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser("record-accel", help="record the base accelerometer to t,ax,ay,az CSV",
                              description=__doc__.split("\n\n", 1)[1] if __doc__ else None)
    p.add_argument("out", help="output CSV")
    p.add_argument("--sensor", choices=["mpu6050", "adxl345", "iio"], default="mpu6050")
    p.add_argument("--bus", type=int, default=1, help="I2C bus number (default 1)")
    p.add_argument("--address", type=lambda s: int(s, 0), default=None,
                   help="I2C address (default 0x68 for mpu6050, 0x53 for adxl345)")
    p.add_argument("--rate", type=float, default=None, help="output data rate in Hz (default 500 / 400)")
    p.add_argument("--range-g", type=int, default=None, help="full scale in g (default 8 / 16)")
    p.add_argument("--iio-device", default="/sys/bus/iio/devices/iio:device0", help="IIO device directory")
    p.add_argument("--iio-dev", default=None, help="IIO character device (default /dev/<device name>)")
    p.add_argument("--seconds", type=float, default=10.0, help="how long to record (default 10)")
    p.add_argument("--poll", type=float, default=0.02, help="seconds between FIFO reads (default 0.02)")
    p.add_argument("--emulate", metavar="TRACE.csv", default=None,
                   help="use an emulated chip fed by this t,ax,ay,az trace instead of hardware")
    p.add_argument("--inject", action="append", default=[], metavar="FAULT@T",
                   help="with --emulate: eio@T[:N], silent@T:SECONDS, overflow@T")
    p.set_defaults(handler=run)


def _parse_inject(specs: list[str]) -> list[tuple[float, str, float]]:
    from service.cli import CliError  # noqa: PLC0415

    out = []
    for spec in specs:
        try:
            kind, _, rest = spec.partition("@")
            when, _, arg = rest.partition(":")
            if kind not in ("eio", "silent", "overflow"):
                raise ValueError(kind)
            out.append((float(when), kind, float(arg) if arg else 1.0))
        except ValueError:
            raise CliError(f"--inject {spec!r}: want eio@T[:N], silent@T:SECONDS or overflow@T") from None
    return sorted(out)


def run(args: argparse.Namespace) -> int:
    from device.accel.sensor import SensorConfig, open_sensor  # noqa: PLC0415
    from device.accelcsv import AccelCsvError, CsvWriter  # noqa: PLC0415
    from service.cli import CliError  # noqa: PLC0415

    injects = _parse_inject(args.inject)
    if injects and not args.emulate:
        raise CliError("--inject needs --emulate")
    try:
        config = SensorConfig(kind=args.sensor, bus=args.bus, address=args.address, rate_hz=args.rate,
                              range_g=args.range_g, iio_device=args.iio_device, iio_dev=args.iio_dev,
                              poll_s=args.poll, emulate=args.emulate or "")
        if args.emulate:
            from device.emulators import VirtualClock  # noqa: PLC0415

            # An emulated chip runs on a virtual clock: as fast as the machine goes.
            vclock = VirtualClock()
            clock, sleep = vclock.time, vclock.sleep
        else:
            clock, sleep = time.monotonic, time.sleep
        sensor = open_sensor(config, clock=clock, sleep=sleep)
    except (OSError, AccelCsvError, ValueError) as exc:
        raise CliError(str(exc)) from None
    epoch = clock()
    reader, bus, chip, address = sensor.reader, sensor.bus, sensor.chip, config.i2c_address if args.sensor != "iio" else 0
    n = 0
    try:
        with open(args.out, "w", newline="") as f:
            writer = CsvWriter(f)
            while clock() - epoch < args.seconds:
                while injects and clock() - epoch >= injects[0][0]:
                    _, kind, arg = injects.pop(0)
                    if kind == "eio":
                        bus.fail_next(int(arg))
                    elif kind == "silent":
                        bus.stop_answering(address, arg)
                    else:
                        chip.force_overflow()
                samples, events = reader.poll()
                for s in samples:
                    if s.t <= args.seconds:
                        writer.write(s)
                        n += 1
                for e in events:
                    print(json.dumps(e), file=sys.stderr)
                sleep(args.poll)
    except OSError as exc:
        raise CliError(f"cannot write {args.out}: {exc}") from None
    finally:
        reader.close()
    print(f"recorded {n} samples to {args.out}", file=sys.stderr)
    return 0
