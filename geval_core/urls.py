"""Server URLs as the workbench takes and shows them: http(s) only, never carrying anything that may be a
secret (user:password@, a query, a fragment, a key-like path segment), printed without any of those."""

from __future__ import annotations

import re
from urllib.parse import parse_qsl, urlparse, urlsplit

from .errors import ConfigError

__all__ = ["OPENAI_HOSTS", "check_base_url", "credentials_in", "is_custom_server", "key_like", "shown_url"]

OPENAI_HOSTS = {"api.openai.com"}
# Query parameters that carry credentials (api_key, key, token, access_token, secret, password, sig, ...).
_SECRET_PARAM = re.compile(r"key|token|secret|passw|auth|sig|credential", re.IGNORECASE)


# A path segment that looks like a key: a known key prefix, or a long run of letters and digits mixed
# (real paths are words: v1, openai, deployments, a model name with dashes).
_KEY_PREFIX = re.compile(r"^(sk-|sk_|AIza|ya29\.|ghp_|xox[bp]-|Bearer)", re.IGNORECASE)
_TOKEN = re.compile(r"^[A-Za-z0-9_+=]{24,}$")  # no dots or dashes: not a model name


def key_like(segment: str) -> bool:
    """Whether a URL path segment looks like a secret rather than a name."""
    if _KEY_PREFIX.match(segment):
        return True
    if not _TOKEN.match(segment):
        return False
    letters, digits = sum(c.isalpha() for c in segment), sum(c.isdigit() for c in segment)
    return letters >= 4 and digits >= 4  # mixed like a key, not a long hyphenated model name


def _shown_path(path: str) -> str:
    return "/".join("[hidden]" if key_like(segment) else segment for segment in path.split("/"))


def shown_url(url: str) -> str:
    """scheme://host:port/path of a URL: never its user:password@, query, fragment or a key-like path segment."""
    try:
        parts = urlsplit(url.strip())
        host = parts.hostname or ""
        port = f":{parts.port}" if parts.port else ""
    except ValueError:
        return "(an unreadable URL)"
    return f"{parts.scheme}://{host}{port}{_shown_path(parts.path)}" if parts.scheme else "(not a URL)"


def credentials_in(url: str) -> str | None:
    """Where a URL may carry a secret ("user:password@ before the host", "a ?query", "a #fragment", "a path
    segment that looks like a key"), or None. A server's base URL needs none of them."""
    try:
        parts = urlsplit(url.strip())
    except ValueError:
        return None
    if "@" in parts.netloc:
        return "user:password@ before the host"
    named = [
        k
        for k, _ in parse_qsl(parts.query, keep_blank_values=True) + parse_qsl(parts.fragment)
        if _SECRET_PARAM.search(k)
    ]
    if (
        named
    ):  # the parameter's name is shown only when it reads as a name, never when it may be the key itself
        return (
            f"?{named[0]}= in the URL"
            if re.fullmatch(r"[A-Za-z_]{1,24}", named[0])
            else "a ?query in the URL"
        )
    if parts.query:
        return "a ?query in the URL (a base URL takes none; a value there may be a key)"
    if parts.fragment:
        return "a #fragment in the URL (a base URL takes none; a value there may be a key)"
    if any(key_like(segment) for segment in parts.path.split("/")):
        return "a path segment that looks like a key"
    return None


def check_base_url(url: str | None, variable: str = "the judge's key variable") -> str | None:
    """The server URL as given (None when empty); ConfigError when it is not http(s) or carries credentials.

    A key inside a URL (user:KEY@host, ?api_key=KEY) would be stored with the run and printed wherever the
    URL is: keys come from the environment only. The message never repeats the credentials.
    """
    if url is None or not url.strip():
        return None
    url = url.strip()
    where = credentials_in(url)
    if where is not None:
        raise ConfigError(
            f"the base URL {shown_url(url)} carries credentials ({where}); a key never goes in a "
            f"URL: set {variable} in the environment and give the URL without it"
        )
    try:
        parts = urlsplit(url)
        parts.port  # noqa: B018 -- raises ValueError for a port that is not a number
    except ValueError:
        raise ConfigError(
            f"the base URL {shown_url(url)} is not a valid URL; give the server's address, "
            "e.g. http://127.0.0.1:8080/v1"
        ) from None
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ConfigError(
            f"the base URL {shown_url(url)} is not an http(s) server address; give the server's "
            "address, e.g. http://127.0.0.1:8080/v1"
        )
    return url


def is_custom_server(base_url: str | None) -> bool:
    """True for a base_url that is not the official OpenAI API (loopback, vLLM, Ollama, ...)."""
    if not base_url:
        return False
    return (urlparse(base_url).hostname or "") not in OPENAI_HOSTS
