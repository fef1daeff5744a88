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
from typing import Any

from curator.logs.duck_sql import Reader, quote
from curator.logs.duck_users import Counted

# the details pass 1 keeps, by column of its table `counted`
DETAILS = ("first", "last", "zero", "lat_sum", "lat_n")
BATCH = 250_000  # rows of the details file read back at a time


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
    """The details file of one DuckDB read: `path` holds a row per query of `counted`
    (which finds the rows of queries in it)."""

    path: Path
    counted: Counted

    def look_up(self, queries: set[str]) -> dict[str, list[Details]]:
        """The details of those of `queries` this file has (two for a query spelled two
        ways in JSON, "\\u00e9" and "é")."""
        query_of = {row: q for q, rows in self.counted.rows_of(queries).items() for row in rows}
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


def write_details(reader: Reader, path: Path, columns: list[str]) -> int:
    """Number the counted queries of pass 1's table `counted` and write their details
    and `columns` (SQL over `counted`) to `path`, in the order of their numbers (so a
    range of numbers is a range of the file's row groups); how many there are."""
    reader.con.execute("SET preserve_insertion_order = true")  # the numbers in file order
    try:
        reader.con.execute(
            f"COPY (SELECT row_number() OVER () AS row, * FROM (SELECT {', '.join([*DETAILS, *columns])} "
            f"FROM counted WHERE ok AND inside)) TO {quote(str(path))} (FORMAT parquet, COMPRESSION uncompressed)")
    finally:
        reader.con.execute("SET preserve_insertion_order = false")
    (rows,) = reader.con.execute(f"SELECT count(*) FROM read_parquet({quote(str(path))})").fetchone() or (0,)
    return int(rows)


def read_details(reader: Reader, path: Path, names: list[str], rows: int, batch: int = BATCH) -> dict[str, Any]:
    """The columns `names` (and `row`) of the file `write_details` wrote, as numpy
    arrays (text columns as lists of str), read `batch` rows at a time: DuckDB holds
    one batch's result, not the whole table's beside Python's copy of it."""
    import numpy as np

    wanted = ", ".join(dict.fromkeys(["row", *names]))
    parts: dict[str, list[Any]] = {}
    texts: dict[str, list[str]] = {}  # a batch's array of objects goes into one list: no array of them all
    for start in range(0, max(rows, 1), batch):
        got = reader.con.execute(
            f"SELECT {wanted} FROM read_parquet({quote(str(path))}) WHERE row > {start} AND row <= {start + batch}"
        ).fetchnumpy()
        for name, column in got.items():
            if column.dtype == object:
                texts.setdefault(name, []).extend(column.tolist())
            else:
                parts.setdefault(name, []).append(column)
        del got
    joined: dict[str, Any] = dict(texts)
    for name, chunks in parts.items():
        if len(chunks) == 1:
            joined[name] = chunks[0]
        elif any(isinstance(c, np.ma.MaskedArray) for c in chunks):  # NULLs in some batch
            joined[name] = np.ma.concatenate(chunks)
        else:
            joined[name] = np.concatenate(chunks)
    return joined
