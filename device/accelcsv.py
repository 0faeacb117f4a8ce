"""The accelerometer recording format of observation.md: CSV ``t,ax,ay,az`` (s, m/s^2)."""

from __future__ import annotations

import csv
from pathlib import Path
from typing import Iterable, Iterator, Sequence

HEADER = ("t", "ax", "ay", "az")


class AccelCsvError(ValueError):
    pass


def read_csv(path: str | Path) -> Iterator[tuple[float, float, float, float]]:
    """Rows as floats. Raises AccelCsvError naming the line for a malformed file."""
    with open(path, newline="") as f:
        reader = csv.reader(f)
        try:
            header = next(reader)
        except StopIteration:
            raise AccelCsvError(f"{path}: empty file") from None
        if tuple(h.strip() for h in header) != HEADER:
            raise AccelCsvError(f"{path}: header must be t,ax,ay,az, got {','.join(header)}")
        for n, row in enumerate(reader, start=2):
            if not row:
                continue
            if len(row) != 4:
                raise AccelCsvError(f"{path}:{n}: expected 4 columns, got {len(row)}")
            try:
                yield float(row[0]), float(row[1]), float(row[2]), float(row[3])
            except ValueError as exc:
                raise AccelCsvError(f"{path}:{n}: {exc}") from None


def write_csv(path: str | Path, rows: Iterable[Sequence[float]]) -> int:
    n = 0
    with open(path, "w", newline="") as f:
        w = CsvWriter(f)
        for r in rows:
            w.write(r)
            n += 1
    return n


class CsvWriter:
    """Incremental writer (the recorder appends as samples arrive)."""

    def __init__(self, f) -> None:  # noqa: ANN001 - any text file
        self.f = f
        f.write(",".join(HEADER) + "\n")

    def write(self, r: Sequence[float]) -> None:
        self.f.write(f"{float(r[0]):.6f},{float(r[1]):.4f},{float(r[2]):.4f},{float(r[3]):.4f}\n")
