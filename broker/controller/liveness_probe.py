"""Is anything listening at a broker's address? The active controller asks before it fences a
broker that another one reported unreachable: a refused TCP connection means no process holds
that port (a killed broker), which a slow or partitioned broker never shows (its connects time
out instead, and only its session ends it)."""

from __future__ import annotations

import errno
import socket

import trio

PROBE_TIMEOUT_S = 0.3


async def refuses_connections(host: str, port: int, timeout_s: float = PROBE_TIMEOUT_S) -> bool:
    """True only when every address of `host` refused the connection within `timeout_s`; a
    connection made, a timeout or any other error (no route, DNS failure) is False."""
    with trio.move_on_after(timeout_s):
        try:
            addresses = await trio.socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
        except OSError:
            return False
        if not addresses:
            return False
        for family, kind, proto, _, address in addresses:
            sock = trio.socket.socket(family, kind, proto)
            try:
                await sock.connect(address)
            except OSError as exc:
                if exc.errno != errno.ECONNREFUSED:
                    return False
            else:
                return False  # something answered: alive
            finally:
                sock.close()
        return True
    return False
