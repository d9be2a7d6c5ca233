"""Where webhooks may go: loopback, or the hosts the setting ``webhook_allowed_hosts`` lists, checked again
at every delivery against what the name resolves to."""

from __future__ import annotations

import ipaddress
import socket
from collections.abc import Iterable
from urllib.parse import urlsplit


class TargetRefused(Exception):
    """The URL's host is not one webhooks may reach (see :class:`TargetPolicy`)."""


class TargetPolicy:
    """Where deliveries may go: loopback, and the hosts listed in ``webhook_allowed_hosts``.

    A key must not be able to make FileKiln probe the network it sits in. A URL is checked as
    written when a hook or job is made, and again at each attempt after resolving its host: every
    address must be loopback or inside a listed IP or network, unless the name itself is listed.
    The connection then goes to the address that was checked, so a DNS answer that changes in
    between (rebinding) cannot redirect it.
    """

    def __init__(self, allowed_hosts: Iterable[str]) -> None:
        self.names: set[str] = set()
        self.networks: list[ipaddress.IPv4Network | ipaddress.IPv6Network] = []
        for entry in allowed_hosts:
            entry = entry.strip().strip("[]").lower()
            if not entry:
                continue
            try:
                self.networks.append(ipaddress.ip_network(entry, strict=False))
            except ValueError:
                self.names.add(entry.rstrip("."))

    def address_allowed(self, address: str) -> bool:
        ip = ipaddress.ip_address(address.split("%", 1)[0])
        return ip.is_loopback or any(ip in net for net in self.networks)

    def check_url(self, url: str) -> str:
        """``url`` if a hook may target it as written; otherwise :class:`TargetRefused`."""
        try:
            parts = urlsplit(url)
            host = (parts.hostname or "").rstrip(".")
            port = parts.port
            _parses_for_delivery(url)
        except ValueError as exc:
            raise TargetRefused(f"not a URL a delivery can go to: {exc}") from None
        if parts.scheme not in ("http", "https") or not host:
            raise TargetRefused("must be an http:// or https:// URL with a host")
        if port is not None and not 0 < port < 65536:
            raise TargetRefused("its port must be 1 to 65535")
        if parts.username is not None or parts.password is not None:
            # it would be logged and sent on as written; deliveries carry a signature instead
            raise TargetRefused("a user name or password in the URL is not taken (deliveries are signed)")
        if host == "localhost" or host in self.names:
            return url
        try:
            if self.address_allowed(host):
                return url
        except ValueError:  # a name nobody listed
            pass
        raise TargetRefused(f"{host} is not loopback and not in webhook_allowed_hosts")

    def resolve(self, url: str) -> str:
        """The address to connect to for ``url``, checked as the class docstring says."""
        self.check_url(url)
        parts = urlsplit(url)
        host = (parts.hostname or "").rstrip(".")
        port = parts.port or (443 if parts.scheme == "https" else 80)
        try:
            infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
        except OSError as exc:
            raise TargetRefused(f"{host} does not resolve: {exc}") from None
        addresses = [str(info[4][0]) for info in infos]
        if not addresses:
            raise TargetRefused(f"{host} does not resolve")
        if host not in self.names:
            outside = [a for a in addresses if not self.address_allowed(a)]
            if outside:
                raise TargetRefused(f"{host} resolves to {outside[0]}, outside loopback and webhook_allowed_hosts")
        return addresses[0]



def _parses_for_delivery(url: str) -> None:
    """ValueError unless the HTTP client that delivers parses ``url`` too: each parser lets through
    some URLs the other refuses (``http://[::1]x/``, ``http://127.0.0.1:-1/``)."""
    import httpx  # here: a server that has no webhook to check starts without it

    try:
        httpx.URL(url)
    except httpx.InvalidURL as exc:
        raise ValueError(str(exc)) from None


def shown(url: str) -> str:
    """``url`` as logs may show it: without a user name or password (rows made before those were refused)."""
    try:
        parts = urlsplit(url)
    except ValueError:
        return "(not a valid URL)"
    if "@" not in parts.netloc:
        return url
    return parts._replace(netloc="…@" + parts.netloc.rsplit("@", 1)[1]).geturl()
