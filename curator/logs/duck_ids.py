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

from curator.logs.aggregate import IDS_CAP, Aggregate, add_ids
from curator.logs.duck_sql import Reader, quote
from curator.logs.duck_users import FilePass, hash_bitmap
from curator.logs.fields import Fields, id_list
from curator.logs.jsonl import loads, loads_record

Ids = dict[str, Counter[str]]

# A JSON list of plain strings as DuckDB writes it (minified; a backslash would be an escape)
_PLAIN_IDS = quote(r'\[("[^"\\]*"(,"[^"\\]*")*)?\]')


@dataclass
class IdsOf(FilePass):
    """The ids pass over one file; `left` holds the ids of the lines the python reader
    handled for DuckDB."""

    left: Aggregate = field(default_factory=Aggregate)

    def look_up(self, queries: set[str] | None, reader: Reader | None = None) -> tuple[Ids, Ids]:
        """The hits and clicks of `queries` (None: of every query), as the python
        reader would have counted them in this file."""
        own = reader or Reader(lambda _fraction: None, temp=self.temp)
        try:
            hits, clicks = self._counted(own, queries)
        finally:
            if reader is None:
                own.close()
        for mine, theirs in ((hits, self.left.hits), (clicks, self.left.clicks)):
            for q in theirs if queries is None else queries & theirs.keys():
                add_ids(mine.setdefault(q, Counter()), theirs[q], 1, counts=theirs[q])
        return hits, clicks

    def _counted(self, reader: Reader, queries: set[str] | None) -> tuple[Ids, Ids]:
        hits: Ids = {}
        clicks: Ids = {}
        if queries is not None:
            hashes = [int(self.counted.hashes[row]) for rows in self.counted.rows_of(queries).values() for row in rows]
            if not hashes:
                return hits, clicks
        rows = self.sql.id_rows(self.source_sql) if self.trusted else self.sql.rows(self.source_sql)
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
              share: tuple[float, float] = (0.0, 1.0), picked: str = "TRUE", params: list[str] | None = None) -> None:
    """Hit and click ids per query of the lines `rows` (those of the queries `picked`
    lets through), counted by DuckDB into `targets` (hits, clicks)."""
    roles = [(k, role) for k, role in enumerate(("hits", "clicks")) if getattr(fields, role)]
    parts = []
    for k, role in roles:
        plain = f"regexp_full_match({role}, {_PLAIN_IDS})"
        parts.append(
            f"CASE WHEN NOT (ok AND inside) OR {role} IS NULL OR {role} = 'null' OR NOT coalesce({picked}, FALSE) THEN NULL "
            f"WHEN {plain} THEN {{'role': {k}, 'plain': true, 'ids': from_json({role}, '[\"VARCHAR\"]')}} "
            f"ELSE {{'role': {k}, 'plain': false, 'ids': [{role}]}} END"
        )
    # no WHERE: see UsersOf
    result = reader.query(
        # the most frequent IDS_CAP ids of a plain list; every distinct text of another value
        f"""SELECT role, plain, q, list(id ORDER BY c DESC, id)[1:CASE WHEN plain THEN {IDS_CAP} ELSE 2147483647 END],
                   list(c ORDER BY c DESC, id)[1:CASE WHEN plain THEN {IDS_CAP} ELSE 2147483647 END]
            FROM (SELECT e.role AS role, e.plain AS plain, q, id, sum(n)::BIGINT AS c FROM (
                    SELECT q, n, e, unnest(e.ids) AS id FROM (
                      SELECT q, n, unnest([{', '.join(parts)}]) AS e FROM {rows}))
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
