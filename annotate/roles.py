"""Who is asking: the admin (admin token) or one annotator (their own token), else nobody."""

from __future__ import annotations

import hmac
import os
import secrets
from dataclasses import dataclass
from pathlib import Path

import sqlite_utils

from annotate import store
from data.paths import files_dir

ADMIN_TOKEN_ENV = "FOIL_ADMIN_TOKEN"


@dataclass(frozen=True)
class Role:
    """`kind` is "admin", "annotator" or "anonymous"; annotators carry their id and name."""

    kind: str
    annotator_id: int | None = None
    name: str | None = None


ANONYMOUS = Role("anonymous")


def admin_token(db_file: str | Path) -> str:
    """`$FOIL_ADMIN_TOKEN`, else a token generated once and kept beside the store (mode 600)."""
    from_env = os.environ.get(ADMIN_TOKEN_ENV)
    if from_env:
        return from_env
    token_file = files_dir(db_file) / "admin_token"
    if not token_file.exists():
        token_file.parent.mkdir(parents=True, exist_ok=True)
        token_file.write_text(secrets.token_urlsafe(24))
        token_file.chmod(0o600)
    return token_file.read_text().strip()


def resolve_role(db: sqlite_utils.Database, token: str | None, admin: str) -> Role:
    """The role a token grants; compared in constant time."""
    if not token:
        return ANONYMOUS
    if hmac.compare_digest(token.encode(), admin.encode()):
        return Role("admin")
    annotator = store.annotator_by_token(db, token)
    if annotator is None:
        return ANONYMOUS
    return Role("annotator", annotator["id"], annotator["name"])
