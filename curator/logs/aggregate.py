"""Per exact query string: how often, when, by how many people, which results.

Readers feed an `Aggregate`; the aggregates of several files (or of DuckDB's lines and
the python reader's) are merged. Timestamps are kept as `YYYY-MM-DDTHH:MM:SS` strings (UTC), which
compare correctly as strings.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta

USERS_CAP = 100  # distinct users remembered per query; more is reported as "100+"
IDS_CAP = 50  # distinct hit/click ids remembered per query
REJECT_SAMPLES = 5  # line numbers kept per reject reason


@dataclass
class Rejects:
    count: int = 0
    lines: list[int] = field(default_factory=list)

    def add(self, line: int, n: int = 1) -> None:
        self.count += n
        if len(self.lines) < REJECT_SAMPLES:
            self.lines.append(line)


@dataclass
class Aggregate:
    counts: Counter[str] = field(default_factory=Counter)
    first: dict[str, str] = field(default_factory=dict)
    last: dict[str, str] = field(default_factory=dict)
    users: dict[str, set[str]] = field(default_factory=dict)
    hits: dict[str, Counter[str]] = field(default_factory=dict)
    clicks: dict[str, Counter[str]] = field(default_factory=dict)
    zero_results: Counter[str] = field(default_factory=Counter)
    latency: dict[str, list[float]] = field(default_factory=dict)  # query -> [sum, n]
    users_full: set[str] = field(default_factory=set)  # queries with USERS_CAP users
    user_names: dict[str, str] = field(default_factory=dict)  # interned user ids
    latest: str | None = None  # newest timestamp seen so far (fast path: is the log in order?)
    lines: int = 0  # lines (or records) read
    parsed: int = 0  # lines that gave a query
    ignored: Counter[str] = field(default_factory=Counter)  # fine lines that are not searches
    rejected: dict[str, Rejects] = field(default_factory=dict)

    def reject(self, reason: str, line: int, n: int = 1) -> None:
        self.rejected.setdefault(reason, Rejects()).add(line, n)

    def add(
        self,
        query: str,
        n: int = 1,
        ts: str | None = None,
        user: str | None = None,
        hits: list[str] | None = None,
        clicks: list[str] | None = None,
        results: int | None = None,
        latency: float | None = None,
    ) -> None:
        self.parsed += 1
        self.counts[query] += n
        if ts is not None:
            if self.latest is None or ts > self.latest:
                self.latest = ts
            seen = self.first.get(query)
            if seen is None or ts < seen:
                self.first[query] = ts
            seen = self.last.get(query)
            if seen is None or ts > seen:
                self.last[query] = ts
        if user:
            known = self.users.setdefault(query, set())
            if len(known) < USERS_CAP:
                known.add(user)
        if hits:
            add_ids(self.hits.setdefault(query, Counter()), hits, n)
        if clicks:
            add_ids(self.clicks.setdefault(query, Counter()), clicks, n)
        if results == 0:
            self.zero_results[query] += n
        if latency is not None:
            acc = self.latency.setdefault(query, [0.0, 0])
            acc[0] += latency * n
            acc[1] += n

    def merge(self, other: Aggregate) -> None:
        """Add `other` (another file's, or the lines another reader handled) to this one."""
        self.counts.update(other.counts)
        for q, ts in other.first.items():
            seen = self.first.get(q)
            if seen is None or ts < seen:
                self.first[q] = ts
        for q, ts in other.last.items():
            seen = self.last.get(q)
            if seen is None or ts > seen:
                self.last[q] = ts
        for q, users in other.users.items():
            known = self.users.setdefault(q, set())
            for u in users:
                if len(known) >= USERS_CAP:
                    break
                known.add(u)
        for mine, theirs in ((self.hits, other.hits), (self.clicks, other.clicks)):
            for q, ids in theirs.items():
                add_ids(mine.setdefault(q, Counter()), ids, 1, counts=ids)
        self.zero_results.update(other.zero_results)
        for q, (total, n) in other.latency.items():
            acc = self.latency.setdefault(q, [0.0, 0])
            acc[0] += total
            acc[1] += n
        if other.latest is not None and (self.latest is None or other.latest > self.latest):
            self.latest = other.latest
        self.lines += other.lines
        self.parsed += other.parsed
        self.ignored.update(other.ignored)
        for reason, rej in other.rejected.items():
            mine_rej = self.rejected.setdefault(reason, Rejects())
            mine_rej.count += rej.count
            for line in rej.lines:
                if len(mine_rej.lines) < REJECT_SAMPLES:
                    mine_rej.lines.append(line)


def add_ids(target: Counter[str], ids: Iterable[str], n: int, counts: Counter[str] | None = None) -> None:
    for i in ids:
        if i in target or len(target) < IDS_CAP:
            target[i] += counts[i] if counts is not None else n


def parse_time(value: object) -> str | None:
    """A timestamp from a log (ISO-8601 string, epoch seconds or milliseconds) as
    `YYYY-MM-DDTHH:MM:SS` in UTC, or None when it is not one."""
    if value is None or isinstance(value, bool):
        return None
    if isinstance(value, int | float):
        seconds = value / 1000 if value > 1e11 else value
        try:
            return datetime.fromtimestamp(seconds, UTC).replace(tzinfo=None).isoformat(timespec="seconds")
        except (OverflowError, OSError, ValueError):
            return None
    if not isinstance(value, str):
        return None
    text = value.strip()
    if not text:
        return None
    if text.replace(".", "", 1).isdigit():
        return parse_time(float(text))
    if len(text) == 26 and text[2] == "/" and (fast := clf_by_position(text)) is not None:
        return fast  # nginx's $time_local, without strptime (a JSON access log's every line)
    parsed: datetime | None
    try:
        parsed = datetime.fromisoformat(text.replace("Z", "+00:00").replace("z", "+00:00"))
    except ValueError:
        parsed = _other_time(text)
        if parsed is None:
            return None
    if parsed.tzinfo is not None:
        try:
            parsed = parsed.astimezone(UTC)
        except OverflowError:  # 0001-01-01T00:30+01:00 is before the year 1 in UTC
            return None
    return parsed.replace(tzinfo=None, microsecond=0).isoformat()


_MONTHS = {m: k for k, m in enumerate(("Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov",
                                       "Dec"), 1)}


def clf_by_position(stamp: str) -> str | None:
    """`01/Oct/2026:10:00:03 +0200` (the common log format's time, nginx's $time_local)
    in UTC as `2026-10-01T08:00:03`, read by position, or None when it is not exactly
    that form (then strptime decides): the same time strptime gives, at a tenth of its cost."""
    if not (len(stamp) == 26 and stamp[2] == "/" and stamp[6] == "/" and stamp[11] == ":" and stamp[14] == ":"
            and stamp[17] == ":" and stamp[20] == " " and stamp[21] in "+-"):
        return None
    month = _MONTHS.get(stamp[3:6])
    digits = stamp[0:2] + stamp[7:11] + stamp[12:14] + stamp[15:17] + stamp[18:20] + stamp[22:26]
    if month is None or not (digits.isascii() and digits.isdigit()) or stamp[22:24] >= "24" or stamp[24:26] >= "60":
        return None
    try:
        local = datetime(int(stamp[7:11]), month, int(stamp[0:2]), int(stamp[12:14]), int(stamp[15:17]),
                         int(stamp[18:20]))
        offset = timedelta(hours=int(stamp[22:24]), minutes=int(stamp[24:26]))
        return (local - offset if stamp[21] == "+" else local + offset).isoformat()
    except (ValueError, OverflowError):  # 31 February, hour 24: strptime's word
        return None


# four-digit years from 1000 on: email.utils reads `0001` as 2001 (RFC 2822's old two-digit years)
_HTTP_DATE = re.compile(r"[A-Z][a-z]{2}, \d{1,2} [A-Z][a-z]{2} [1-9]\d{3} \d\d:\d\d:\d\d (GMT|UTC|[+-]\d{4})")
_NGINX_LOCAL = re.compile(r"\d\d/[A-Z][a-z]{2}/\d{4}:\d\d:\d\d:\d\d [+-]\d{4}")


def _other_time(text: str) -> datetime | None:
    """The forms logs write that are not ISO-8601: BigQuery's `2026-10-01 08:00:00 UTC`,
    nginx's `$time_local` (`01/Oct/2026:08:00:00 +0200`) and the HTTP / e-mail date
    (`Thu, 01 Oct 2026 08:00:00 GMT`)."""
    try:
        if _HTTP_DATE.fullmatch(text):
            from email.utils import parsedate_to_datetime

            return parsedate_to_datetime(text)
        if _NGINX_LOCAL.fullmatch(text):
            return datetime.strptime(text, "%d/%b/%Y:%H:%M:%S %z")
        if text.endswith((" UTC", " GMT")):
            parsed = datetime.fromisoformat(text[:-4])
            return parsed.replace(tzinfo=UTC) if parsed.tzinfo is None else None  # `+02:00 UTC`: which?
    except (ValueError, TypeError, IndexError):
        return None
    return None


def iso_z(ts: str | None) -> str | None:
    return f"{ts}Z" if ts else None
