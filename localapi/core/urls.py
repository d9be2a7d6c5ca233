"""URLs shown to people: never with the password they may carry."""

from __future__ import annotations

from urllib.parse import urlsplit


def redacted(url: str) -> str:
    """``url`` with any password in it replaced by ``***``."""
    try:
        parts = urlsplit(url)
        password = parts.password
    except ValueError:
        return url.split("@")[-1]
    if not password:
        return url
    userinfo, _, hostport = parts.netloc.rpartition("@")
    user = userinfo.split(":", 1)[0]
    return parts._replace(netloc=f"{user}:***@{hostport}").geturl()
