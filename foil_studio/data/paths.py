"""Where the store and the files it owns live."""

from __future__ import annotations

import io
import os
import re
import zipfile
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1]  # foil_studio/, in a checkout or installed


def checkout_root() -> Path | None:
    """The git checkout this package runs from (its pyproject beside the package), or None when installed."""
    root = PACKAGE.parent
    return root if (root / "pyproject.toml").is_file() and (root / "Makefile").is_file() else None


_CHECKOUT = checkout_root()


def command_name() -> str:
    """How a person types the command line here: `./foil` in a checkout (its launcher runs the
    checkout's venv), `foil` where the package is installed.

    >>> command_name() in ("./foil", "foil")
    True
    """
    return "./foil" if _CHECKOUT is not None and (_CHECKOUT / "foil").is_file() else "foil"


# what `make run` builds; an installed package has no such store (`foil demo` builds ./foil.db)
DEMO_STORE: Path | None = _CHECKOUT / "demo_store" / "foil.db" if _CHECKOUT else None


FILES_ENV = "FOIL_FILES"


class FilesFolderUnset(OSError):
    """A PostgreSQL store was given without ``$FOIL_FILES``: nowhere to keep its files."""


def db_path() -> Path | str:
    """The store: `$FOIL_DB` (a file, or a ``postgresql://`` URL kept as text), else `foil.db`
    in the working directory (read at call time)."""
    location = os.environ.get("FOIL_DB", "foil.db")
    return location if is_store_url(location) else Path(location)


def cli_db_path() -> Path | str:
    """The command line's store: `$FOIL_DB`, else `foil.db` in the working directory when it
    exists, else (in a checkout) the demo store `make run` built when it exists (so the lines of
    docs/commands.md work as written after `make run`), else `foil.db`."""
    if "FOIL_DB" in os.environ or Path("foil.db").exists() or DEMO_STORE is None or not DEMO_STORE.exists():
        return db_path()
    return DEMO_STORE


def files_dir(db_file: str | Path) -> Path:
    """Where a store keeps files it owns (demo images, images embedded in imports, thumbnails,
    exports, tokens): `$FOIL_FILES` when set (the folder every server of a deployment shares),
    else a folder beside the store file. A PostgreSQL store needs `$FOIL_FILES`."""
    if os.environ.get(FILES_ENV, "").strip():
        return Path(os.environ[FILES_ENV].strip())
    if is_store_url(db_file):
        raise FilesFolderUnset(
            f"a PostgreSQL store keeps its files (images, thumbnails, exports) in ${FILES_ENV}: "
            "set it to a folder every server of the deployment shares (docs/deployment.md)"
        )
    path = Path(db_file)
    return path.parent / f"{path.stem}_files"


def demo_image_root(db_file: str | Path) -> Path:
    """The image root of the demo datasets of a store."""
    return files_dir(db_file) / "demo"


def thumbnail_dir(db_file: str | Path) -> Path:
    """Where the pages keep the small copies of large images they show."""
    return files_dir(db_file) / "thumbnails"


def embedded_image_dir(db_file: str | Path, dataset: str) -> Path:
    """Where images embedded in an imported file (parquet bytes) are written, per dataset."""
    return output_dir(db_file, "embedded", dataset)


def output_dir(db_file: str | Path, purpose: str, *names: str) -> Path:
    """A folder the store owns for files it writes (exports, refined subsets...), one level per
    name; dataset and batch names become safe folder names, so none can climb out of the store's folder.

    >>> output_dir("/data/foil.db", "exports", "../../etc", "jsonl").as_posix()
    '/data/foil_files/exports/_.._.._etc/jsonl'
    """
    return files_dir(db_file).joinpath(purpose, *(safe_name(name) for name in names))


def given_path(text: str | Path) -> Path:
    """The path a user wrote, as a `Path` that keeps it local where it was written so: `Path` drops a
    leading `./`, which would make `./org/name` read as the Hub id `org/name` (`import hf`); such a
    path is made absolute instead.

    >>> given_path("./org/name").is_absolute(), given_path("org/name")
    (True, PosixPath('org/name'))
    """
    if isinstance(text, str) and text.startswith(("./", "../", ".\\", "..\\")):
        return Path(text).absolute()
    return Path(text)


def safe_name(name: str) -> str:
    """`name` as a file or folder name: letters, digits, '.', '_' and '-' only, never hidden or empty.

    >>> safe_name("sugarcrepe/unrefined v2")
    'sugarcrepe_unrefined_v2'
    """
    safe = re.sub(r"[^A-Za-z0-9._-]", "_", name)
    return "_" + safe if safe.startswith(".") or not safe else safe


def zip_folder(folder: Path) -> bytes:
    """Every file under `folder` in one zip archive (paths relative to it), for a download button."""
    archive = io.BytesIO()
    with zipfile.ZipFile(archive, "w", zipfile.ZIP_DEFLATED) as bundle:
        for path in sorted(p for p in folder.rglob("*") if p.is_file()):
            bundle.write(path, path.relative_to(folder).as_posix())
    return archive.getvalue()


STORE_URL_PREFIXES = ("postgresql://", "postgres://")


def is_store_url(location: object) -> bool:
    """Whether a --db / FOIL_DB value names a PostgreSQL database rather than a store file.

    >>> is_store_url("postgresql://foil@db/foil"), is_store_url("foil.db")
    (True, False)
    """
    return isinstance(location, str) and location.startswith(STORE_URL_PREFIXES)
