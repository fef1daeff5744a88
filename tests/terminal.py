"""The real console script in a pseudo-terminal, started the way `subprocess` starts any
child: `pexpect.spawn` forks this process, which pytest-xdist, the test HTTP servers and
DuckDB make multi-threaded (Python 3.12+ warns that such a fork may deadlock the child).

`spawn(command, args, ...)` takes `pexpect.spawn`'s arguments the tests use and gives a
pexpect child (expect, send, read, before) over the pty's leader end, with `pid`, `wait()`
and `close()` setting `exitstatus` / `signalstatus` as pexpect's own do, and its 50 ms
delay before each send. The pty is the
child's controlling terminal (util-linux `setsid --ctty`, which execs in place), as with
`pexpect.spawn`: the app sees a real terminal of the given size.
"""

from __future__ import annotations

import fcntl
import os
import pty
import signal
import struct
import subprocess
import termios
import time
from collections.abc import Sequence
from typing import Any

from pexpect.fdpexpect import fdspawn


class Terminal(fdspawn):
    def __init__(self, command: str, args: Sequence[str] = (), *, cwd: str | None = None,
                 env: dict[str, str] | None = None, dimensions: tuple[int, int] = (24, 80), **options: Any) -> None:
        leader, follower = pty.openpty()
        rows, columns = dimensions
        fcntl.ioctl(follower, termios.TIOCSWINSZ, struct.pack("HHHH", rows, columns, 0, 0))
        self.proc = subprocess.Popen(["setsid", "--ctty", command, *args], cwd=cwd, env=env,
                                     stdin=follower, stdout=follower, stderr=follower, close_fds=True)
        os.close(follower)  # the child's is the only one left: its exit is the leader's EOF
        super().__init__(leader, **options)
        self.pid = self.proc.pid
        self.exitstatus: int | None = None
        self.signalstatus: int | None = None

    def send(self, s: Any) -> int:
        if self.delaybeforesend is not None:  # as pexpect.spawn: 50 ms, so a key does not overtake the last frame
            time.sleep(self.delaybeforesend)
        return super().send(s)

    def isalive(self) -> bool:
        return self.proc.poll() is None

    def wait(self) -> int:
        """Wait for the child to end; its exit status (pexpect: None when a signal ended it)."""
        self._settle(self.proc.wait())
        return self.proc.returncode

    def close(self, force: bool = True) -> None:  # noqa: ARG002 - pexpect's signature; a child still running is killed
        if not self.closed:
            super().close()
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGHUP)
            try:
                self.proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                self.proc.kill()
        self._settle(self.proc.wait())

    def _settle(self, code: int) -> None:
        self.exitstatus, self.signalstatus = (None, -code) if code < 0 else (code, None)


spawn = Terminal  # as `pexpect.spawn(command, args, ...)` is called
