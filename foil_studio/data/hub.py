"""The Hugging Face Hub as the libraries that download from it see it: its address (or the
proxy that reaches it), whether the user asked for the cache only, and whether it answers at all.

Both `datasets` and `huggingface_hub` retry an unreachable Hub for tens of seconds before they
give up; a three-second connection attempt tells the same thing at once.
"""

from __future__ import annotations

import os
import socket
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any
from urllib.parse import urlsplit
from urllib.request import getproxies, proxy_bypass

OFFLINE = ("HF_HUB_OFFLINE", "HF_DATASETS_OFFLINE")  # either set: the libraries read their cache only


def offline_requested() -> bool:
    """Whether the user asked the Hugging Face libraries to read their cache only (no network)."""
    return any(os.environ.get(name, "").strip().upper() in ("1", "ON", "YES", "TRUE") for name in OFFLINE)


def hub_endpoint() -> str:
    """The Hub's address: $HF_ENDPOINT, as the Hugging Face libraries read it, else huggingface.co."""
    return os.environ.get("HF_ENDPOINT") or "https://huggingface.co"


def hub_reachable(timeout: float = 3.0) -> bool:
    """Whether the Hub (or the proxy that reaches it) takes a connection within `timeout` seconds."""
    try:
        with socket.create_connection(_hub_address(), timeout=timeout):
            return True
    except OSError:
        return False


def _hub_address() -> tuple[str, int]:
    """The host and port a request to the Hub connects to first: its proxy where one is set."""
    url = urlsplit(hub_endpoint())
    proxy = getproxies().get(url.scheme)
    if proxy and not proxy_bypass(url.hostname or ""):
        url = urlsplit(proxy if "://" in proxy else f"http://{proxy}")
    return url.hostname or "", url.port or (443 if url.scheme == "https" else 80)


@contextmanager
def cache_only(unreachable: bool) -> Iterator[None]:
    """With the Hub out of reach, or the cache asked for, the Hugging Face libraries read their
    cache only: cached files load and missing ones fail at once (they retried for about 48 s). The
    libraries read the environment once, when imported: a notebook that sets HF_HUB_OFFLINE after
    importing them is obeyed here too."""
    from huggingface_hub import constants  # only where something is downloaded

    settings: list[Any] = [constants] + [sys.modules[name] for name in ("datasets.config",) if name in sys.modules]
    before = [holder.HF_HUB_OFFLINE for holder in settings]
    for holder, was in zip(settings, before, strict=True):
        holder.HF_HUB_OFFLINE = was or unreachable
    try:
        yield
    finally:
        for holder, was in zip(settings, before, strict=True):
            holder.HF_HUB_OFFLINE = was


def error_line(error: Exception, limit: int = 300) -> str:
    """An error's first line, for a one-line message: a library's can run on, so it is cut between
    words, never mid-word.

    >>> error_line(ValueError("no such weights\\nTraceback..."))
    'no such weights'
    >>> error_line(OSError("word " * 100), limit=12)
    'word word ...'
    """
    line = (str(error).splitlines() or [type(error).__name__])[0]
    return line if len(line) <= limit else line[:limit].rsplit(" ", 1)[0] + " ..."
