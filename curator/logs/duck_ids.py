"""Returned and clicked ids (hits, clicks) per query for the DuckDB engine.

Only the queued clusters show ids (as suggestions and provenance), so the DuckDB reader
does not count them for every query: after choosing, one pass over the file counts them
for the chosen exact queries only (`IdsOf.look_up`), as the users pass does for users
(duck_users.py). A list of plain strings (what search logs write) is unnested and
counted in SQL, the IDS_CAP most frequent per query kept; any other value (ids as
objects or numbers, a comma-separated string, an escape) comes as its JSON text, once
per query and text, for `id_list`. The lines the python reader handled for DuckDB
(duck_odd.py) keep their ids in `IdsOf.left`, added after DuckDB's, as before.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

from curator.logs.aggregate import IDS_CAP, USERS_CAP, Aggregate, add_ids
from curator.logs.duck_sql import LOOKUP_MEMORY_LIMIT, NAMED, USER_HASH, Reader, quote
from curator.logs.duck_users import FULL, FilePass, Users, hash_bitmap, union
from curator.logs.fields import Fields, id_list
from curator.logs.jsonl import loads, loads_record

Ids = dict[str, Counter[str]]

# A JSON list of plain strings as DuckDB writes it (minified; a backslash would be an escape)
_PLAIN_IDS = quote(r'\[("[^"\\]*"(,"[^"\\]*")*)?\]')


@dataclass
class IdsOf(FilePass):
    """The ids pass over one file; `left` holds the ids of the lines the python reader
    handled for DuckDB. `known`: the ids a pass that counted users too (`with_users`)
    found, and for which queries."""

    left: Aggregate = field(default_factory=Aggregate)
    known: tuple[set[str], Ids, Ids] | None = None

    def look_up(self, queries: set[str] | None, reader: Reader | None = None) -> tuple[Ids, Ids]:
        """The hits and clicks of `queries` (None: of every query), as the python
        reader would have counted them in this file."""
        if queries is not None and self.known is not None and queries <= self.known[0]:
            _, known_hits, known_clicks = self.known
            hits = {q: known_hits[q] for q in queries & known_hits.keys()}
            clicks = {q: known_clicks[q] for q in queries & known_clicks.keys()}
        else:
            own = reader or Reader(lambda _fraction: None, self._memory_limit(), self.temp)
            try:
                hits, clicks = self._counted(own, queries)
            finally:
                if reader is None:
                    own.close()
        for mine, theirs in ((hits, self.left.hits), (clicks, self.left.clicks)):
            for q in theirs if queries is None else queries & theirs.keys():
                add_ids(mine.setdefault(q, Counter()), theirs[q], 1, counts=theirs[q])
        return hits, clicks

    def with_users(self, queries: set[str], users_of: set[str]) -> dict[str, Users]:
        """In one pass over the file: the users of `users_of` (returned) and the hits and
        clicks of `queries` (kept in `known` for `look_up`), so that a log with ids and
        users is read once after choosing, not twice. OutOfMemory if they do not fit."""
        hits: Ids = {}
        clicks: Ids = {}
        users: dict[str, Users] = {}
        size, bits = hash_bitmap(self._hashes(queries))
        users_size, users_bits = hash_bitmap(self._hashes(users_of))
        rows = self.sql.trusted_rows(self.source_sql, ids=True, users=True) if self.trusted else self.sql.rows(self.source_sql)
        reader = Reader(lambda _fraction: None, self._memory_limit(), self.temp)
        try:
            count_ids(reader, f"({rows})", self.sql.fields, (hits, clicks), self.label,
                      picked=f"get_bit($1::BIT, (hash(q) % {size})::INTEGER) = 1", params=[bits, users_bits],
                      users=(f"get_bit($2::BIT, (hash(q) % {users_size})::INTEGER) = 1", users))
        finally:
            reader.close()
        for found in (hits, clicks):
            for q in [q for q in found if q not in queries]:  # the bitmap lets a few others through
                del found[q]
        self.known = (set(queries), hits, clicks)
        return {q: mine for q, mine in users.items() if q in users_of}

    def _memory_limit(self) -> str | None:
        """LOOKUP_MEMORY_LIMIT where DuckDB may spill; without a folder, all the machine allows."""
        return LOOKUP_MEMORY_LIMIT if self.temp is not None else None

    def _hashes(self, queries: set[str]) -> list[int]:
        """DuckDB's hashes of the JSON texts of those of `queries` this file has."""
        return [row.hash for rows in self.counted.found(queries).values() for row in rows]

    def _counted(self, reader: Reader, queries: set[str] | None) -> tuple[Ids, Ids]:
        hits: Ids = {}
        clicks: Ids = {}
        if queries is not None:
            hashes = self._hashes(queries)
            if not hashes:
                return hits, clicks
        rows = self.sql.trusted_rows(self.source_sql, ids=True) if self.trusted else self.sql.rows(self.source_sql)
        if queries is None:
            count_ids(reader, f"({rows})", self.sql.fields, (hits, clicks), self.label)
            return hits, clicks
        size, bits = hash_bitmap(hashes)
        count_ids(reader, f"({rows})", self.sql.fields, (hits, clicks), self.label,
                  picked=f"get_bit($1::BIT, (hash(q) % {size})::INTEGER) = 1", params=[bits])
        for found in (hits, clicks):
            for q in [q for q in found if q not in queries]:  # the bitmap lets a few others through
                del found[q]
        return hits, clicks


def count_ids(reader: Reader, rows: str, fields: Fields, targets: tuple[Ids, Ids], label: str,
              share: tuple[float, float] = (0.0, 1.0), picked: str = "TRUE", params: list[str] | None = None,
              users: tuple[str, dict[str, Users]] | None = None) -> None:
    """Hit and click ids per query of the lines `rows` (those of the queries `picked`
    lets through), counted by DuckDB into `targets` (hits, clicks); with `users` (which
    queries, where to), the distinct users of those queries too, in the same pass."""
    roles = [(k, role) for k, role in enumerate(("hits", "clicks")) if getattr(fields, role)]
    # Lines of one query mostly carry the same lists (a search engine returns much the
    # same ids for a query): they are grouped by (query, lists) first, so each distinct
    # list is parsed and unnested once, weighted by its lines, not once per line. The
    # lines not looked up fall into one group (all NULL), which gives no row. CASEs, not
    # a WHERE: see UsersOf.
    wanted_ids = f"ok AND inside AND coalesce({picked}, FALSE)"
    wanted_users = f"ok AND inside AND coalesce({NAMED}, FALSE) AND coalesce({users[0]}, FALSE)" if users else "FALSE"
    keys = [f"CASE WHEN ({wanted_ids}) OR ({wanted_users}) THEN q END AS q"]
    keys += [f"CASE WHEN {wanted_ids} AND {role} IS NOT NULL AND {role} <> 'null' THEN {role} END AS {role}"
             for _, role in roles]
    if users is not None:  # a user's hash splits a query's lines only where its users are looked up
        keys.append(f"CASE WHEN {wanted_users} THEN {USER_HASH} END AS hu")
    grouped = f"(SELECT {', '.join(k.rsplit(' AS ', 1)[-1] for k in keys)}, sum(n)::BIGINT AS n FROM (SELECT {', '.join(keys)}, n FROM {rows}) GROUP BY ALL)"
    parts = []
    for k, role in roles:
        plain = f"regexp_full_match({role}, {_PLAIN_IDS})"
        parts.append(
            f"CASE WHEN {role} IS NULL THEN NULL "
            f"WHEN {plain} THEN {{'role': {k}, 'plain': true, 'ids': from_json({role}, '[\"VARCHAR\"]')}} "
            f"ELSE {{'role': {k}, 'plain': false, 'ids': [{role}]}} END"
        )
    if users is not None:  # a user as an "id" of role 2: its hash, as the users pass keeps it (duck_users.py)
        parts.append("CASE WHEN hu IS NULL THEN NULL ELSE {'role': 2, 'plain': true, 'ids': [hu::VARCHAR]} END")
    # the most frequent IDS_CAP ids of a plain list; every distinct text of another
    # value; USERS_CAP users of a query (that many: FULL)
    cap = f"CASE WHEN role = 2 THEN {USERS_CAP} WHEN plain THEN {IDS_CAP} ELSE 2147483647 END"
    result = reader.query(
        f"""SELECT role, plain, q, list(id ORDER BY c DESC, id)[1:{cap}], list(c ORDER BY c DESC, id)[1:{cap}]
            FROM (SELECT e.role AS role, e.plain AS plain, q, id, sum(n)::BIGINT AS c FROM (
                    SELECT q, n, e, unnest(e.ids) AS id FROM (
                      SELECT q, n, unnest([{', '.join(parts)}]) AS e FROM {grouped}))
                  GROUP BY ALL)
            GROUP BY role, plain, q""",
        label, share, params=params,
    )
    decoded: dict[str, str] = {}
    while chunk := result.fetchmany(20_000):
        for role, plain, raw, ids, counts in chunk:
            q = decoded.get(raw)
            if q is None:
                q = decoded[raw] = raw[1:-1] if "\\" not in raw else loads(raw)
            if role == 2:
                assert users is not None
                union(users[1], q, FULL if len(ids) >= USERS_CAP else {int(u) for u in ids})
                continue
            target = targets[role].get(q)
            if plain and target is None:  # the usual case: one spelling of the query, a list of strings
                targets[role][q] = Counter(dict(zip(ids, counts, strict=True)))
                continue
            if target is None:
                target = targets[role][q] = Counter()
            if plain:
                add_ids(target, ids, 1, counts=Counter(dict(zip(ids, counts, strict=True))))
                continue
            for text, n in zip(ids, counts, strict=True):
                found = id_list(loads_record(text))
                if found:
                    add_ids(target, found, n)
            if not target:
                del targets[role][q]
