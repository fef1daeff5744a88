"""Review candidates from the chosen clusters: their users (asked of the DuckDB reader's
users pass where its first pass did not settle them) and hits and clicks (a look-up
in each file DuckDB read), provenance (counts, variants,
first and last seen) and the clicked and returned passages as suggestions."""

from __future__ import annotations

from collections import Counter
from typing import TYPE_CHECKING, Any

from curator._process import paused_gc
from curator.logs.aggregate import USERS_CAP, add_ids, iso_z
from curator.logs.dedupe import VARIANTS
from curator.logs.duck_users import UsersOf
from curator.logs.grouping import Group
from curator.logs.normalise import looks_like_identifier
from curator.models import CandidateIn, Suggestion

if TYPE_CHECKING:
    from curator.logs.python_reader import FileRead
    from curator.workspace import Workspace


class ClusterItem:
    """A chosen cluster: its groups (leader first) and how often it was asked; `known`:
    the norm of the candidate queued before that it adds its counts to, if any."""

    __slots__ = ("groups", "count", "known")

    def __init__(self, groups: list[Group], known: str | None = None) -> None:
        self.groups = groups
        self.count = groups[0].count if len(groups) == 1 else sum(g.count for g in groups)
        self.known = known


def look_up_users(chosen: list[ClusterItem], group_of: dict[str, Group], lookups: list[UsersOf]) -> None:
    """Users of the queued clusters, from readers that count them on demand (duckdb):
    first what their counting pass settled, then an exact look-up for the rest, except
    in clusters that already have USERS_CAP users (nothing can change what they show)."""
    if not lookups:
        return
    unsettled = []
    for users_of in lookups:
        found, left = users_of.settled(set(group_of))
        for raw, users in found.items():
            group_of[raw].add_users(users)
        unsettled.append(left)
    full = {raw for item in chosen if user_count(item) >= USERS_CAP for g in item.groups for raw in g.raws}
    for users_of, left in zip(lookups, unsettled, strict=True):
        for raw, users in users_of.unsettled(left - full).items():
            group_of[raw].add_users(users)


def look_up_ids(chosen: list[ClusterItem], reads: list[FileRead]) -> None:
    """Hits and clicks of the queued clusters' exact queries: a look-up in each file
    read by DuckDB (one pass over it, for these queries only), what the python reader
    counted of the others; merged file by file as the files' aggregates would be."""
    wanted = {raw for item in chosen for g in item.groups for raw in g.raws}
    if not wanted:
        return
    hits: dict[str, Counter[str]] = {}
    clicks: dict[str, Counter[str]] = {}
    for read in reads:
        found = read.ids_of.look_up(wanted) if read.ids_of else (read.agg.hits, read.agg.clicks)
        for mine, theirs in zip((hits, clicks), found, strict=True):
            for raw in wanted & theirs.keys():
                add_ids(mine.setdefault(raw, Counter()), theirs[raw], 1, counts=theirs[raw])
    for item in chosen:
        for g in item.groups:
            for raw in g.raws:
                g.add_ids(hits.get(raw), clicks.get(raw))


def user_count(item: ClusterItem) -> int:
    """Distinct users of a cluster as known so far."""
    sets = [g.users for g in item.groups if g.users]
    return len(sets[0]) if len(sets) == 1 else len(set().union(*sets))


def candidates(ws: Workspace, chosen: list[ClusterItem], files: list[str], import_id: str) -> list[CandidateIn]:
    wanted: set[str] = set()
    for item in chosen:
        for g in item.groups:
            wanted.update(g.hits or ())
            wanted.update(g.clicks or ())
    # Logs point at headings; a heading's section may live inside a bigger passage.
    resolved = ws.resolve_passage_ids(wanted) if wanted else {}
    budget = ws.config.review.suggestions
    identifier_slice = "exact_identifier" in ws.config.slices
    out = []
    with paused_gc():  # a record per cluster, no cycles: the collector's scans cost a third
        for item in chosen:
            # most clusters have one group: its own counts, not copies (nothing here changes them)
            surfaces = _summed([g.surfaces for g in item.groups])
            hits = _summed([g.hits for g in item.groups])
            clicks = _summed([g.clicks for g in item.groups])
            users = user_count(item)
            firsts, lasts = [], []
            zero = 0
            lat = [0.0, 0]
            for g in item.groups:
                firsts += [g.first] if g.first else []
                lasts += [g.last] if g.last else []
                zero += g.zero_results
                if g.latency:
                    lat[0] += g.latency[0]
                    lat[1] += int(g.latency[1])
            display = item.groups[0].top
            suggestions: list[Suggestion] = []
            taken: set[str] = set()
            for counter, role, reason in ((clicks, "primary", "clicked"), (hits, "secondary", "hit")):
                for pid, _n in _most_common(counter) if counter else ():
                    target = resolved.get(pid)
                    if target and target not in taken and len(suggestions) < budget:
                        taken.add(target)
                        suggestions.append(Suggestion(id=target, role=role, reason=reason))
            provenance: dict[str, Any] = {
                "source": "log",
                "files": files,
                "import": import_id,
                "count": item.count,
                "first_seen": iso_z(min(firsts)) if firsts else None,
                "last_seen": iso_z(max(lasts)) if lasts else None,
                "users": min(users, USERS_CAP) or None,
                "variants": [{"query": q, "count": n} for q, n in _most_common(surfaces, VARIANTS)],
                "distinct_forms": len(surfaces),
            }
            if users >= USERS_CAP:
                provenance["users_at_least"] = True
            if zero:
                provenance["zero_result_searches"] = zero
            if lat[1]:
                provenance["latency_ms_mean"] = round(lat[0] / lat[1], 1)
            if clicks:
                provenance["clicks"] = dict(_most_common(clicks, 10))
            out.append(
                CandidateIn(
                    query=display,
                    source_kind="log",
                    suggested_slice="exact_identifier" if identifier_slice and looks_like_identifier(display) else None,
                    suggestions=suggestions,
                    provenance={k: v for k, v in provenance.items() if v is not None},
                    count=item.count,
                )
            )
    return out


def _summed(counts: list[dict[str, int] | None]) -> dict[str, int]:
    """The sum of the `counts` (None: none); the only one itself, not a copy."""
    present = [c for c in counts if c]
    if len(present) < 2:
        return present[0] if present else {}  # an empty Counter() alone costs 4 us
    total: Counter[str] = Counter()
    for c in present:
        total.update(c)
    return total


def _most_common(counter: dict[str, int], n: int | None = None) -> list[tuple[str, int]]:
    """Counter.most_common with ties in key order, not in the order the reader met them
    (which differs between engines and, for DuckDB, between runs)."""
    return sorted(counter.items(), key=lambda kv: (-kv[1], kv[0]))[:n]


def merged_provenance(count: int, old: dict[str, Any], new: CandidateIn, key: str) -> tuple[int, dict[str, Any]] | None:
    """A queued candidate's count and provenance (`count`, `old`) with another import's
    cluster (`new`, import `key`) added: counts, users, zero-result searches and clicks
    summed, first and last seen widened, files and variants joined. None when import
    `key` was already counted in (a rerun with --force, or a window read again).

    Users are distinct within one import; the sum over imports counts a user of two
    logs twice (a log keeps no names to compare), so it is marked `users_summed`."""
    counted = old.get("imports") or ([old["import"]] if old.get("import") else [])
    if key in counted:
        return None
    add = new.provenance
    prov = dict(old)
    prov["imports"] = [*counted, key]
    prov["count"] = int(old.get("count") or count) + int(add.get("count") or new.count)
    prov["files"] = list(dict.fromkeys([*old.get("files", []), *add.get("files", [])]))
    for name, pick in (("first_seen", min), ("last_seen", max)):
        seen = [t for t in (old.get(name), add.get(name)) if t]
        if seen:
            prov[name] = pick(seen)
    users = int(old.get("users") or 0) + int(add.get("users") or 0)
    if users:
        prov["users"] = min(users, USERS_CAP)
        prov["users_summed"] = True
        if users >= USERS_CAP or old.get("users_at_least") or add.get("users_at_least"):
            prov["users_at_least"] = True
    zero = int(old.get("zero_result_searches") or 0) + int(add.get("zero_result_searches") or 0)
    if zero:
        prov["zero_result_searches"] = zero
    clicks = Counter(old.get("clicks") or {})
    clicks.update(add.get("clicks") or {})
    if clicks:
        prov["clicks"] = dict(_most_common(dict(clicks), 10))
    variants: Counter[str] = Counter()
    for v in [*old.get("variants", []), *add.get("variants", [])]:
        variants[v["query"]] += int(v["count"])
    if variants:
        prov["variants"] = [{"query": q, "count": n} for q, n in _most_common(dict(variants), VARIANTS)]
        prov["distinct_forms"] = max(int(old.get("distinct_forms") or 0), int(add.get("distinct_forms") or 0),
                                     len(variants))
    if add.get("latency_ms_mean") is not None:
        if old.get("latency_ms_mean") is None:
            prov["latency_ms_mean"] = add["latency_ms_mean"]
        else:  # weighted by how often each import asked it
            a, b = int(old.get("count") or count), int(add.get("count") or new.count)
            prov["latency_ms_mean"] = round((old["latency_ms_mean"] * a + add["latency_ms_mean"] * b) / (a + b), 1)
    return count + new.count, prov
