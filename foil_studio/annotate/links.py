"""The links Foil Studio hands out: an annotator's private link and a crowd study's link.

A link starts with the app's address: `$FOIL_BASE_URL` when set (behind a reverse proxy, the
address people reach), else the address the admin is using (the request's URL, which the page
knows), else nothing (the command line, which cannot know the app's port, prints the path and
says how to complete it). Never a guessed `localhost:8501`.
"""

from __future__ import annotations

import os
from urllib.parse import urlsplit

BASE_URL_VARIABLE = "FOIL_BASE_URL"


def app_address(request_url: str | None = None) -> str | None:
    """The address links start with: `$FOIL_BASE_URL`, else the scheme and host of the URL the
    admin's browser opened (`request_url`), else None. No trailing slash.

    >>> app_address("http://lab.example.org:8600/batches?token=x")
    'http://lab.example.org:8600'
    >>> app_address(None) is None
    True
    """
    configured = os.environ.get(BASE_URL_VARIABLE, "").strip()
    if configured:
        return configured.rstrip("/")
    if not request_url:
        return None
    parts = urlsplit(request_url)
    return f"{parts.scheme}://{parts.netloc}" if parts.scheme and parts.netloc else None


def annotator_link(base: str | None, token: str) -> str:
    """An annotator's private link (a path only when the address is unknown).

    >>> annotator_link("http://h:8600", "abc"), annotator_link(None, "abc")
    ('http://h:8600/?token=abc', '/?token=abc')
    """
    return f"{base or ''}/?token={token}"


def crowd_link(base: str | None, crowd_token: str) -> str:
    """The study link to paste into Prolific, which fills in the participant's ids."""
    return (
        f"{base or ''}/?study={crowd_token}&PROLIFIC_PID={{{{%PROLIFIC_PID%}}}}"
        "&STUDY_ID={{%STUDY_ID%}}&SESSION_ID={{%SESSION_ID%}}"
    )


UNKNOWN_ADDRESS = (
    f"the links are paths: put the app's address in front of them (give --base-url, or set ${BASE_URL_VARIABLE} "
    "to the address annotators reach the app at)"
)
