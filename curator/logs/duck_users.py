"""Distinct users per query for the DuckDB engine.

Pass 1 (duck.py) settles most queries' users with fixed-size aggregates (see SPREAD in
duck_sql.py); `Counted` holds them, by row of its table, as plain columns. The users
of the queries it could not settle are counted by another pass over the file, for the
queued queries only (`UsersOf`): DISTINCT over every (query, user) pair of a big log
is the biggest table of the whole read (4M pairs for 5M lines: hundreds of MB without
spilling), while only the queued clusters show users.

Users are DuckDB hashes of their names (as JSON text); a set of USERS_CAP or more is
the shared FULL stand-in.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NamedTuple, Protocol

from curator.logs.aggregate import USERS_CAP, Aggregate
from curator.logs.duck_sql import (
    NAMED,
    USER_HASH,
    USERS_MEMORY_LIMIT,
    JsonSql,
    OutOfMemory,
    Reader,
    quote,
)

_BITMAP = 1 << 16  # bits in the filter of the queries whose users are looked up, at least
# The users of a query asked by USERS_CAP people or more: one shared stand-in (negative,
# so never a DuckDB hash) instead of a set per popular query.
FULL = frozenset(range(-USERS_CAP, 0))
Users = frozenset[int] | set[int]


@dataclass
class Counted:
    """The queries pass 1 counted, by row of its table: DuckDB's hash of each one's JSON
    text and, with a user field, its user aggregates (numpy columns): how many lines
    name a user, the least and greatest user hash, and how many buckets they fill.

    With a details file (`path`, duck_details.py) all of it stays in the file, the
    queries too, and is read for the queries asked about, by their row of the file:
    a list and six columns of 8 bytes per query were a third of a long-tail import's
    memory. Only the queries whose JSON text has an escape are kept (`escaped`: their
    rows by decoded text), as the file holds their JSON text."""

    queries: list[str] | None = None  # None: in `path`
    hashes: Any = None  # numpy column (None: in `path`)
    named: Any = None
    least: Any = None
    greatest: Any = None
    buckets: Any = None
    path: Path | None = None  # the details file holding all of it, by row
    escaped: dict[str, list[int]] = field(default_factory=dict)  # with `path`: decoded text -> rows
    with_users: bool = False  # are there user aggregates (in memory or in `path`)?

    # what was found for the queries and rows asked about so far: the users, ids and
    # details look-ups ask about the same chosen queries, and each answer from `path`
    # is a scan of the file
    _rows: dict[str, list[int]] = field(default_factory=dict, repr=False)
    _values: dict[int, Row] = field(default_factory=dict, repr=False)

    def rows_of(self, wanted: set[str]) -> dict[str, list[int]]:
        """The rows of each of the `wanted` queries this file has (two for a query
        spelled two ways in JSON, "\\u00e9" and "é")."""
        new = wanted - self._rows.keys()
        if new:
            found = self._find_rows(new)
            for query in new:
                self._rows[query] = found.get(query, [])
        return {query: self._rows[query] for query in wanted if self._rows[query]}

    def found(self, wanted: set[str]) -> dict[str, list[Row]]:
        """The hash and user aggregates of each of the `wanted` queries this file has,
        a Row per row (see `rows_of`)."""
        rows_of = self.rows_of(wanted)
        values = self.at([row for rows in rows_of.values() for row in rows])
        return {query: [values[row] for row in rows] for query, rows in rows_of.items()}

    def at(self, rows: list[int]) -> dict[int, Row]:
        """The hash and user aggregates (zeros without a user field) of the queries in `rows`."""
        missing = sorted({row for row in rows if row not in self._values})
        if missing:
            self._values.update(self._read_rows(missing))
        return {row: self._values[row] for row in rows if row in self._values}

    def _find_rows(self, wanted: set[str]) -> dict[str, list[int]]:
        found: dict[str, list[int]] = {}
        if self.queries is not None:
            for row, query in enumerate(self.queries):
                if query in wanted:
                    found.setdefault(query, []).append(row)
            return found
        for query in wanted & self.escaped.keys():
            found[query] = list(self.escaped[query])
        if self.path is None:
            return found
        reader = Reader(lambda _fraction: None)
        try:  # a JSON text without a backslash is the query itself (duck.py keeps it so)
            rows = reader.con.execute(
                f"SELECT row, q FROM read_parquet({quote(str(self.path))}) "
                "WHERE NOT contains(q, '\\') AND q IN (SELECT unnest($1::VARCHAR[])) ORDER BY row",
                [sorted(wanted)]).fetchall()
        finally:
            reader.close()
        for row, query in rows:
            found.setdefault(query, []).append(int(row))
        return found

    def _read_rows(self, rows: list[int]) -> dict[int, Row]:
        if self.path is None:
            columns = [self.hashes, self.named, self.least, self.greatest, self.buckets] if self.with_users \
                else [self.hashes]
            return {at: Row(*[_int(column[at]) for column in columns], *([0] * (5 - len(columns)))) for at in rows}
        wanted = "hq, named, least, greatest, buckets" if self.with_users else "hq, 0, 0, 0, 0"
        reader = Reader(lambda _fraction: None)
        try:
            found = reader.con.execute(
                f"SELECT row, {wanted} FROM read_parquet({quote(str(self.path))}) "
                "WHERE row IN (SELECT unnest($1::BIGINT[]))", [rows]).fetchall()
        finally:
            reader.close()
        return {int(row): Row(*(int(v or 0) for v in values)) for row, *values in found}


def _int(value: Any) -> int:
    """A value of a numpy column as an int, 0 for NULL (masked)."""
    import numpy as np

    return 0 if value is np.ma.masked else int(value)


class Row(NamedTuple):
    """One counted query's hash and user aggregates (see `Counted`)."""

    hash: int
    named: int
    least: int
    greatest: int
    buckets: int

    def users(self) -> Users | None:
        """Its users if pass 1 settled them (none, one, two lines' users, or FULL), else None."""
        if self.named == 0:
            return set()
        if self.least == self.greatest:
            return {self.least}
        if self.named == 2:
            return {self.least, self.greatest}
        return FULL if self.buckets >= USERS_CAP else None


class IdsPass(Protocol):
    """A file's ids look-up (duck_ids.IdsOf) that can count users in the same pass."""

    def with_users(self, queries: set[str], users_of: set[str]) -> dict[str, Users]: ...


@dataclass
class FilePass:
    """What a later pass over one file (its users, its ids) needs: its lines' SQL, and
    pass 1's `Counted` (the hashes of the queries' JSON texts). `trusted`: pass 1 counted
    every line, so no line needs checking again."""

    source_sql: str
    sql: JsonSql
    label: str
    counted: Counted
    trusted: bool
    temp: Path | None = None  # the folder DuckDB may spill to


@dataclass
class UsersOf(FilePass):
    """The users pass over one file. `ids`: the file's ids pass (a log with hits or
    clicks), which the users pass does too, for the queries `settled` was asked about
    (the queued ones, whose ids are looked up next): one pass over the file after
    choosing, not two."""

    ids: IdsPass | None = None
    asked: set[str] = field(default_factory=set)

    def settled(self, queries: set[str]) -> tuple[dict[str, Users], set[str]]:
        """The users of those of `queries` that pass 1 settled, and the other queries."""
        self.asked = set(queries)
        found: dict[str, Users] = {}
        left: set[str] = set()
        rows = self.counted.found(queries)
        for q in queries:
            known = [row.users() for row in rows.get(q, ())]
            if None in known:
                left.add(q)
                continue
            for users in known:
                assert users is not None
                union(found, q, users)
        return found, left

    def unsettled(self, queries: set[str]) -> dict[str, Users]:
        """The users of `queries`, which pass 1 did not settle, from a users pass."""
        query_of = {row.hash: q for q, rows in self.counted.found(queries).items() for row in rows}
        if query_of and self.ids is not None and queries <= self.asked:
            try:
                return self.ids.with_users(self.asked, queries)
            except OutOfMemory:  # the users alone, in as many passes as they need
                pass
        found: dict[str, Users] = {}
        for hq, users in self._users(list(query_of)) if query_of else ():
            if hq in query_of:  # the bitmap lets a few others through
                union(found, query_of[hq], FULL if users is None else set(users))
        return found

    def _users(self, wanted: list[int]) -> list[tuple[int, list[int] | None]]:
        """(hash, its users or None for USERS_CAP or more) of the `wanted` query hashes,
        in one pass over the file, or in one per half of them if that runs out of memory."""
        try:
            return self._users_pass(wanted)
        except OutOfMemory:
            if len(wanted) < 2:
                raise
            half = len(wanted) // 2
            return self._users(wanted[:half]) + self._users(wanted[half:])

    def _users_pass(self, wanted: list[int]) -> list[tuple[int, list[int] | None]]:
        # A bitmap of the wanted hashes picks their lines in O(1) each (IN (subquery) may
        # hold the whole log in memory), 16 bits a query so that few other lines pass.
        size, bits = hash_bitmap(wanted)
        reader = Reader(lambda _fraction: None, USERS_MEMORY_LIMIT, self.temp)
        rows = self.sql.trusted_rows(self.source_sql, users=True) if self.trusted else self.sql.rows(self.source_sql, ids=False)
        try:
            result: list[tuple[int, list[int] | None]] = reader.query(
                # Distinct (query, user) pairs of the wanted queries, then a list per query.
                # CASEs, not a WHERE: a WHERE is pushed below the projections and would
                # parse every line twice.
                f"""SELECT hq, CASE WHEN count(*) < {USERS_CAP} THEN list(hu) END FROM (
                      SELECT DISTINCT hq, hu FROM (
                        SELECT CASE WHEN ok AND inside AND {NAMED}
                                     AND get_bit($1::BIT, (hash(q) % {size})::INTEGER) = 1
                                    THEN hash(q) END AS hq,
                               CASE WHEN hq IS NOT NULL THEN {USER_HASH} END AS hu
                        FROM ({rows}))
                      WHERE hq IS NOT NULL)
                    GROUP BY hq""",
                self.label, params=[bits],
            ).fetchall()
        finally:
            reader.close()
        return result


def hash_bitmap(hashes: list[int]) -> tuple[int, str]:
    """A filter of query hashes for a pass over the file: its size in bits and its bits
    as the text DuckDB reads as a BIT (`get_bit(bits, hash % size) = 1` for a wanted
    hash), 16 bits a query so that few other queries pass."""
    size = min(max(_BITMAP, 1 << (16 * len(hashes) - 1).bit_length()), 1 << 24)
    bits = bytearray(b"0" * size)
    for h in hashes:
        bits[h % size] = ord("1")
    return size, bits.decode()


def union(found: dict[str, Users], query: str, users: Users) -> None:
    """Add `users` to what `found` holds for `query` (FULL absorbs the rest)."""
    mine = found.get(query)
    if mine is None:
        found[query] = users
    elif mine is not FULL:
        both = users if users is FULL else mine | users
        found[query] = FULL if len(both) >= USERS_CAP else both


def hash_users(agg: Aggregate, reader: Reader | None = None) -> None:
    """The python reader's user names as the hashes the users pass keeps (of the
    name as text), so a user seen on both kinds of line counts once; on `reader`, or
    on a connection of its own (a python-read file beside DuckDB's)."""
    names = sorted({u for users in agg.users.values() for u in users})
    if not names:
        return
    own = reader or Reader(lambda _fraction: None)
    try:
        hashed = dict(own.con.execute(
            f"SELECT name, {USER_HASH} FROM (SELECT name, to_json(name)::VARCHAR AS u FROM unnest($1::VARCHAR[]) t(name))",
            [names],
        ).fetchall())
    finally:
        if reader is None:
            own.close()
    agg.users = {q: {hashed[u] for u in users} for q, users in agg.users.items()}
