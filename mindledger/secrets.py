"""Credentials in text: masked wherever something is shown or logged, stripped before storage.

The way to give mindledger a key is an environment variable named in the settings
(``api_key_env``). Someone will still write ``http://user:pass@host/v1?api_key=…`` or send an
API token in a query string; these functions keep such credentials out of ``config show``,
``doctor``, error messages, logs and the database:

- :func:`scrub` masks, in any text: the user information of URLs (``http://***@host``), the
  values of query parameters whose names say they are secret (``key``, ``token``, ``secret``,
  ``password``, ``auth``, ``signature``, … anywhere in the name), and mindledger API tokens
  (``mlt_…``);
- :func:`strip_credentials` removes them from one URL, for storage, and says whether it did.
"""

from __future__ import annotations

import re
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

__all__ = ["MASK", "scrub", "strip_credentials"]

MASK = "***"

_SECRET_NAME = r"[A-Za-z0-9_.-]*(?:key|token|secret|passw|pwd|auth|signature|sig|credential)[A-Za-z0-9_.-]*"
_USERINFO = re.compile(r"(?P<scheme>\b[A-Za-z][A-Za-z0-9+.-]*://)(?P<userinfo>[^/?#@\s'\"]+)@")
_QUERY_SECRET = re.compile(rf"(?P<key>[?&;]{_SECRET_NAME}=)(?P<value>[^&#\s'\"]+)", re.IGNORECASE)
_API_TOKEN = re.compile(r"\bmlt_[A-Za-z0-9_-]{8,}")


def scrub(text: str) -> str:
    """``text`` with every credential it holds masked (see the module docstring)."""
    if not text:
        return text
    text = _USERINFO.sub(lambda m: m.group("scheme") + MASK + "@", text)
    text = _QUERY_SECRET.sub(lambda m: m.group("key") + MASK, text)
    return _API_TOKEN.sub("mlt_" + MASK, text)


def _is_secret(name: str) -> bool:
    return re.fullmatch(_SECRET_NAME, name, re.IGNORECASE) is not None


def strip_credentials(url: str) -> tuple[str, bool]:
    """``url`` without its user information and secret query parameters, and whether it had
    any. A string that is not a URL is returned as it is."""
    try:
        parts = urlsplit(url)
    except ValueError:
        return url, False
    netloc = parts.netloc
    had = "@" in netloc
    if had:
        netloc = netloc.rsplit("@", 1)[1]
    query = parse_qsl(parts.query, keep_blank_values=True)
    kept = [(k, v) for k, v in query if not _is_secret(k)]
    had = had or len(kept) != len(query)
    if not had:
        return url, False
    return urlunsplit((parts.scheme, netloc, parts.path, urlencode(kept), parts.fragment)), True
