"""JSON access logs: a web server's or a proxy's request records as JSON (nginx with an
`escape=json` log_format, as ingress controllers write, Caddy, Traefik, Google Cloud's
load balancer, Vespa's access log), where the search is a parameter of the request's
URL, not a field of its own.

When the records have no query field, the first URL field (`URL_FIELDS`) whose values
carry a search parameter (`--param`, else the first of URL_PARAMS seen) is read as in
access logs: the parameter's value, URL-decoded (UTF-8, else Windows-1252). A request
without it (a page, a script, a health check) and one from an obvious bot are ignored
and counted. A field given with `--query-field` is read so when `--param` is given and
its values are URLs with that parameter. The user is the first user field or client
address with a value (counted, never stored); the time, a usual time field or nginx's
`time_local` / `time_iso8601`. The python engine reads such logs (DuckDB says so)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qs

from curator.logs.access import (
    BotCheck,
    decoded,
    first_value,
    request_url,
    url_path,
    url_query,
)
from curator.logs.fields import TIME_FIELDS, URL_PARAMS, USER_FIELDS, Fields, get_path

# where the URL is: a request line ("GET /search?q=x HTTP/1.1"), a URL or path with its
# query string, or the query string alone (nginx's $args)
URL_FIELDS = ("request", "request_uri", "uri", "url", "request_url", "requestUrl", "RequestPath", "path",
              "request.uri", "request.url", "httpRequest.requestUrl", "http.url", "args", "query_string")
CLIENT_FIELDS = ("remote_addr", "client_ip", "remote_ip", "request.remote_ip", "httpRequest.remoteIp", "ClientHost",
                 "fwd", "ip")  # Heroku's router, Vespa
AGENT_FIELDS = ("http_user_agent", "user_agent", "userAgent", "httpRequest.userAgent", "request.headers.User-Agent",
                "request_User-Agent", "agent")
RESULT_FIELDS = ("search.totalhits",)  # Vespa's access log: the search's total hits
ACCESS_TIME_FIELDS = ("time_local", "time_iso8601", "StartUTC")


@dataclass(frozen=True)
class UrlQuery:
    """The query is parameter `param` of the URL in the query field; `agent`: the user
    agent's field, if the records have one."""

    param: str
    agent: str | None = None

    checked: BotCheck = field(default_factory=BotCheck, compare=False)

    def value(self, url: Any) -> str | None:
        """The parameter's decoded value in `url`, or None when it has none."""
        found = first_value(query_string(url) or "", self.param)
        return decoded(found) if found is not None else None

    def bot(self, record: dict[str, Any]) -> bool:
        agent = get_path(record, self.agent) if self.agent else None
        if isinstance(agent, list):  # Caddy keeps each header as a list
            agent = " ".join(a for a in agent if isinstance(a, str))
        return isinstance(agent, str) and self.checked(agent)


def _url(value: Any) -> str | None:
    """The URL of a request line (`GET /search?q=x HTTP/1.1`), or the URL, path or
    query string itself; None for what is no text."""
    if not isinstance(value, str):
        return None
    text = value.strip()
    return (request_url(text) or text) if " " in text else text


def request_path(value: Any) -> str | None:
    """The path of a request line, URL or path (None for a query string alone)."""
    url = _url(value)
    return url_path(url) if url and "/" in url else None


def query_string(value: Any) -> str | None:
    """The query string of a request line, a URL, a path or a query string, or None."""
    url = _url(value)
    if url is None:
        return None
    if "?" in url:
        return url_query(url)
    if "=" in url and "/" not in url and " " not in url:  # a query string alone
        return url
    return None


def sniff(records: list[dict[str, Any]], given: Fields, resolved: Fields,
          param: str | None) -> tuple[Fields, UrlQuery] | None:
    """The fields of a JSON access log and its URL query, or None if `records` are not
    one: records with no query field (`resolved.query` None), or, with `param`, a query
    field whose values are URLs with it."""
    if resolved.query is not None and param is None:
        return None
    names = [resolved.query] if resolved.query is not None else list(URL_FIELDS)
    for name in names:
        seen: set[str] = set()
        for record in records:
            seen.update(parse_qs(query_string(get_path(record, name)) or "", keep_blank_values=True))
        chosen = param or next((p for p in URL_PARAMS if p in seen), None)
        if chosen is None or chosen not in seen:
            continue
        guessed = {"query": name}
        if given.user is None:  # a user field with a value, else the client's address
            user = _first_with_value(records, (*USER_FIELDS, *CLIENT_FIELDS))
            if user:
                guessed["user"] = user
        fields = Fields(**{**resolved.given(), **guessed})
        if fields.time is None and (time := _first_with_value(records, (*TIME_FIELDS, *ACCESS_TIME_FIELDS))):
            fields = fields.merged({"time": time})
        if fields.results is None and (results := _first_with_value(records, RESULT_FIELDS)):
            fields = fields.merged({"results": results})
        return fields, UrlQuery(chosen, _first_with_value(records, AGENT_FIELDS))
    return None


def _first_with_value(records: list[dict[str, Any]], names: tuple[str, ...]) -> str | None:
    for name in names:
        if any(get_path(r, name) not in (None, "", "-", []) for r in records):
            return name
    return None
