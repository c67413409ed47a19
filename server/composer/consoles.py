"""The kernel's serial console said without a device ("a serial console", "only serial console"): the first
serial port of the template's architecture, known only once the template is (ttyS0 on x86, the Arm PL011's
ttyAMA0), so the reading writes SERIAL_CONSOLE and the edit and the adherence check resolve it."""

from __future__ import annotations

SERIAL_CONSOLE = "console=@serial"


def serial_port(arch: str | None) -> str:
    return "ttyAMA0" if arch == "aarch64" else "ttyS0"


def resolved(param: str, arch: str | None) -> str:
    """``param``, with SERIAL_CONSOLE as ``arch``'s first serial port at the usual speed."""
    return f"console={serial_port(arch)},115200" if param == SERIAL_CONSOLE else param


__all__ = ["SERIAL_CONSOLE", "resolved", "serial_port"]
