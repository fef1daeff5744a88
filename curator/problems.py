"""`Problem`: one finding about a file (and line) that verify, freeze checks and run files
report; and the one-line description of a pydantic validation error they give."""

from __future__ import annotations

from dataclasses import dataclass

from pydantic import ValidationError


@dataclass
class Problem:
    path: str
    line: int | None
    message: str
    fatal: bool = True

    def __str__(self) -> str:
        where = f"{self.path}:{self.line}" if self.line else self.path
        return f"{where}: {self.message}"


def describe(exc: ValidationError) -> str:
    """Every error of a failed validation on one line: `field.path: message; ...`."""
    return "; ".join(f"{'.'.join(str(p) for p in err['loc']) or 'record'}: {err['msg']}" for err in exc.errors())
