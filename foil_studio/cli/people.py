"""Commands on people and stores: `annotator add`/`link`, `migrate-store`, `admin-token`."""

from __future__ import annotations

import argparse
import sys
from typing import Any

import sqlite_utils

from foil_studio.annotate import links
from foil_studio.cli.base import arg, command
from foil_studio.data import store

BASE_URL = arg(
    "--base-url",
    metavar="URL",
    help=f"the app's address links start with (default: ${links.BASE_URL_VARIABLE}; without either, links are paths)",
)


def _base_url(args: argparse.Namespace) -> str | None:
    """--base-url, else $FOIL_BASE_URL; None (links as paths, said on stderr) when neither is given."""
    base = (args.base_url or "").strip().rstrip("/") or links.app_address()
    if base is None:
        print(f"note: {links.UNKNOWN_ADDRESS}", file=sys.stderr)
    return base


@command(
    "annotator add",
    arg("name"),
    BASE_URL,
)
def cmd_annotator_add(db: sqlite_utils.Database, args: argparse.Namespace) -> dict[str, Any]:
    """Add an annotator (an existing one gets a new link; earlier links stay valid); print their private link."""
    annotator = store.ensure_annotator(db, args.name)
    token = annotator["token"] or store.issue_token(db, annotator["id"])
    return {"name": annotator["name"], "token": token, "url": links.annotator_link(_base_url(args), token)}


@command(
    "annotator link",
    arg("name"),
    arg(
        "--revoke-old",
        action="store_true",
        help="their earlier links stop working (a link that leaked); default: they stay valid",
    ),
    BASE_URL,
)
def cmd_annotator_link(db: sqlite_utils.Database, args: argparse.Namespace) -> dict[str, Any]:
    """Issue a new private link for an annotator whose link was lost (shown once; only its hash is
    stored); earlier links keep working unless --revoke-old."""
    from foil_studio.annotate.batches import reissue_link

    token = reissue_link(db, args.name, revoke_old=args.revoke_old)
    return {
        "name": args.name,
        "token": token,
        "url": links.annotator_link(_base_url(args), token),
        "earlier_links_revoked": args.revoke_old,
    }


def migrate_store_text(result: dict[str, Any]) -> str:
    """The copy's table of rows and its labels' checksum, for people."""
    lines = [f"copied {result['source']} -> {result['destination']}"]
    lines += [f"  {table:<16} {n:>10,}" for table, n in result["rows"].items()]
    lines.append(f"row counts match; labels checksum {result['labels_checksum'][:16]}... matches")
    return "\n".join(lines)


@command(
    "migrate-store",
    arg("source", metavar="SRC", help="the store to copy: a file or a postgresql:// URL"),
    arg("destination", metavar="DST", help="an empty store: a new file, or an empty PostgreSQL database's URL"),
    text=migrate_store_text,
    opens_store=False,
)
def cmd_migrate_store(db: sqlite_utils.Database | None, args: argparse.Namespace) -> dict[str, Any]:
    """Copy a whole store to another engine (SQLite to PostgreSQL or back) into an empty store,
    checked by row counts and a checksum of the labels. Files (images, exports) stay where they are."""
    source = store.open_existing_db(
        args.source
    )  # before the destination is created: a wrong source path leaves no file behind
    destination = store.open_db(args.destination)
    result = store.copy_store(source, destination)
    return {"source": store.redacted(args.source), "destination": store.redacted(args.destination), **result}


@command("admin-token")
def cmd_admin_token(db: sqlite_utils.Database, args: argparse.Namespace) -> str:
    """Print the admin token of this store (from $FOIL_ADMIN_TOKEN or generated once)."""
    from foil_studio.annotate.roles import admin_token

    return admin_token(args.db)
