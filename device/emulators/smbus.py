"""An emulated I2C bus with the smbus2.SMBus method names and fault injection.

Faults, as Linux reports them through smbus2:
- ``fail_next(n)``: the next n transfers raise ``OSError(EIO)`` (errno 5), a glitch;
- ``stop_answering(address, seconds=None)``: the chip NAKs, ``OSError(EREMOTEIO)``
  (errno 121), for a while or until ``resume``;
- chips themselves emulate FIFO overflow (``force_overflow``).
"""

from __future__ import annotations

import errno
import os
from typing import Callable, Protocol


class EmulatedChip(Protocol):
    address: int

    def read_register(self, reg: int) -> int: ...

    def write_register(self, reg: int, value: int) -> None: ...

    def read_block(self, reg: int, length: int) -> list[int]: ...


class EmulatedBus:
    def __init__(self, clock: Callable[[], float]) -> None:
        self.clock = clock
        self.chips: dict[int, EmulatedChip] = {}
        self._eio = 0
        self._silent: dict[int, float | None] = {}
        self.transfers = 0
        self.closed = False

    def attach(self, chip: EmulatedChip) -> EmulatedChip:
        self.chips[chip.address] = chip
        return chip

    # -- fault injection --------------------------------------------------------
    def fail_next(self, n: int = 1) -> None:
        self._eio += n

    def stop_answering(self, address: int, seconds: float | None = None) -> None:
        self._silent[address] = None if seconds is None else self.clock() + seconds

    def resume(self, address: int) -> None:
        self._silent.pop(address, None)

    def _chip(self, address: int) -> EmulatedChip:
        self.transfers += 1
        if self.closed:
            raise OSError(errno.EBADF, os.strerror(errno.EBADF))
        if self._eio > 0:
            self._eio -= 1
            raise OSError(errno.EIO, os.strerror(errno.EIO))
        if address in self._silent:
            until = self._silent[address]
            if until is None or self.clock() < until:
                raise OSError(errno.EREMOTEIO, os.strerror(errno.EREMOTEIO))
            del self._silent[address]
        chip = self.chips.get(address)
        if chip is None:
            raise OSError(errno.EREMOTEIO, os.strerror(errno.EREMOTEIO))
        return chip

    # -- smbus2.SMBus interface ---------------------------------------------------
    def read_byte_data(self, i2c_addr: int, register: int, force: bool | None = None) -> int:
        return self._chip(i2c_addr).read_register(register) & 0xFF

    def write_byte_data(self, i2c_addr: int, register: int, value: int, force: bool | None = None) -> None:
        self._chip(i2c_addr).write_register(register, value & 0xFF)

    def read_i2c_block_data(self, i2c_addr: int, register: int, length: int, force: bool | None = None) -> list[int]:
        if not 0 < length <= 32:
            raise ValueError("I2C block transfers carry 1 to 32 bytes")
        return [b & 0xFF for b in self._chip(i2c_addr).read_block(register, length)]

    def write_i2c_block_data(self, i2c_addr: int, register: int, data: list[int], force: bool | None = None) -> None:
        if not 0 < len(data) <= 32:
            raise ValueError("I2C block transfers carry 1 to 32 bytes")
        chip = self._chip(i2c_addr)
        for i, b in enumerate(data):
            chip.write_register(register + i, b & 0xFF)

    def close(self) -> None:
        self.closed = True

    def __enter__(self) -> "EmulatedBus":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
