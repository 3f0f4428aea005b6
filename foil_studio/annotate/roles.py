"""Who is asking: the admin (admin token) or one annotator (their own token), else nobody."""

from __future__ import annotations

import hmac
import os
import secrets
from dataclasses import dataclass
from pathlib import Path

import sqlite_utils

from foil_studio.data import store
from foil_studio.data.paths import files_dir, is_store_url

ADMIN_TOKEN_ENV = "FOIL_ADMIN_TOKEN"


@dataclass(frozen=True)
class Role:
    """`role_name` is "admin", "annotator" or "anonymous" (`views.registry.ROLES`, a page's `role`);
    annotators carry their id and `name`."""

    role_name: str
    annotator_id: int | None = None
    name: str | None = None


ANONYMOUS = Role("anonymous")


MIN_ADMIN_TOKEN_CHARS = 16


class AdminTokenError(store.StoreError):
    """``$FOIL_ADMIN_TOKEN`` is too short to keep the admin pages private, or unset where it must be set."""


def admin_token(db_file: str | Path) -> str:
    """`$FOIL_ADMIN_TOKEN` (at least 16 characters), else a token generated once and kept
    beside the store in a file that is private (mode 600) from the moment it exists. A
    PostgreSQL store (several servers) takes it from the environment only."""
    from_env = os.environ.get(ADMIN_TOKEN_ENV)
    if from_env is not None and from_env.strip():
        if len(from_env.strip()) < MIN_ADMIN_TOKEN_CHARS:
            raise AdminTokenError(
                f"{ADMIN_TOKEN_ENV} has {len(from_env.strip())} characters; it needs at least {MIN_ADMIN_TOKEN_CHARS} "
                "(unset it and one is generated for you)"
            )
        return from_env.strip()
    if is_store_url(db_file):
        raise AdminTokenError(
            f"a PostgreSQL store takes its admin token from ${ADMIN_TOKEN_ENV} (at least "
            f"{MIN_ADMIN_TOKEN_CHARS} characters, the same on every server): set it (docs/deployment.md)"
        )
    token_file = files_dir(db_file) / "admin_token"
    if not token_file.exists():
        token_file.parent.mkdir(parents=True, exist_ok=True)
        try:
            descriptor = os.open(token_file, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        except FileExistsError:  # another process made it first: read theirs
            return token_file.read_text().strip()
        with os.fdopen(descriptor, "w") as handle:
            handle.write(secrets.token_urlsafe(24))
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
