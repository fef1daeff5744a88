"""First and last seen, zero-result searches and latency per query for the DuckDB engine,
looked up for the queued queries only.

Only the queued clusters show these details, so with a spill folder the DuckDB reader
does not turn them into Python objects for every distinct query (two timestamps per
query were a fifth of an import's memory on a long-tail log): pass 1 writes them, one
row per query of its table, to a Parquet file in the spill folder (removed with it),
and `DetailsOf.look_up` reads the rows of the chosen exact queries back. The lines the
python reader handled for DuckDB (duck_odd.py) keep their details in the Aggregate, as
before; the pipeline merges both.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from curator.logs.duck_sql import Reader, quote
from curator.logs.duck_users import Counted

# the details pass 1 keeps, by column of its table `counted`
DETAILS = ("first", "last", "zero", "lat_sum", "lat_n")


@dataclass
class Details:
    """One exact query's details in one file ('' / 0 where the log has none)."""

    first: str
    last: str
    zero: int
    lat_sum: float
    lat_n: int


@dataclass
class DetailsOf:
    """The details file of one DuckDB read: `path` holds a row per query of `counted`,
    keyed by `counted.rows`."""

    path: Path
    counted: Counted

    def look_up(self, queries: set[str]) -> dict[str, list[Details]]:
        """The details of those of `queries` this file has (two for a query spelled two
        ways in JSON, "\\u00e9" and "é")."""
        at = self.counted.rows_of(queries)
        query_of = {int(self.counted.rows[p]): q for q, positions in at.items() for p in positions}
        found: dict[str, list[Details]] = {}
        if not query_of:
            return found
        reader = Reader(lambda _fraction: None)
        try:
            result = reader.con.execute(
                "SELECT row, coalesce(strftime(first, '%Y-%m-%dT%H:%M:%S'), ''), "
                "coalesce(strftime(last, '%Y-%m-%dT%H:%M:%S'), ''), coalesce(zero, 0), "
                "coalesce(lat_sum, 0), coalesce(lat_n, 0) "
                f"FROM read_parquet({quote(str(self.path))}) WHERE row IN (SELECT unnest($1::BIGINT[]))",
                [list(query_of)],
            ).fetchall()
        finally:
            reader.close()
        for row, first, last, zero, lat_sum, lat_n in result:
            found.setdefault(query_of[row], []).append(Details(first, last, zero, lat_sum, lat_n))
        return found


def write_details(reader: Reader, path: Path) -> None:
    """Number the counted queries of pass 1's table `counted` (table `found`) and write
    their details to `path`."""
    reader.con.execute("CREATE TEMP TABLE found AS SELECT row_number() OVER () AS row, * "
                       "FROM counted WHERE ok AND inside")
    reader.con.execute(f"COPY (SELECT row, {', '.join(DETAILS)} FROM found) "
                       f"TO {quote(str(path))} (FORMAT parquet, COMPRESSION uncompressed)")
