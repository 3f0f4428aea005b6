"""Plugins: the records an installed package adds to foil's registries through entry points.

Each registry (formats, item kinds, task types, metric families, scorer families) is a
``Registry(group, record_type, built_ins)``: the built-in records first, then the record each
installed entry point of ``group`` names, every one admitted by the same check (a record of the
registry's type, under the entry point's name, a name nobody holds yet). A plugin that fails the
check, or raises on import, is refused: one line naming its package and entry point (``REFUSED``,
logged as a warning), and foil goes on without it. A registry loads on first use, and what is read
off one (``IMPORT_FORMATS``, ``TASK_TYPES``...) with it (``lazy_names``). What was added and
refused is what ``foil plugins`` lists (``installed``). docs/plugins.md walks through a plugin package.

Entry points rather than pluggy's hooks: every axis of variation here is a record in a registry,
so a plugin contributes records, never code that runs at a hook.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from importlib import metadata
from typing import Any, Protocol, TypeVar

FORMATS = "foil_studio.formats"
ITEM_KINDS = "foil_studio.item_kinds"
TASK_TYPES = "foil_studio.task_types"
METRIC_FAMILIES = "foil_studio.metric_families"
SCORERS = "foil_studio.scorers"
# Each entry-point group and the registry it adds to (the order `foil plugins` lists them in).
GROUPS = {
    FORMATS: "foil_studio.data.formats.REGISTRY",
    ITEM_KINDS: "foil_studio.data.item_kinds.REGISTRY",
    TASK_TYPES: "foil_studio.annotate.task_types.REGISTRY",
    METRIC_FAMILIES: "foil_studio.analysis.metric_families.METRIC_FAMILIES",
    SCORERS: "foil_studio.analysis.scorers.REGISTRY",
}

log = logging.getLogger(__name__)


class Named(Protocol):
    """A registry's record: each has a name, its key in the registry."""

    @property
    def name(self) -> str: ...


Record = TypeVar("Record", bound=Named)


class PluginRefused(Exception):
    """Why an entry point's record does not join its registry (one line)."""


@dataclass(frozen=True)
class Origin:
    """Where a record comes from: built in, or an installed package (`distribution`, its
    `version`) through its entry point (`entry_point`, as `name = module:attribute`)."""

    distribution: str = ""
    version: str = ""
    entry_point: str = ""

    @property
    def built_in(self) -> bool:
        """True for foil's own records."""
        return not self.distribution

    def said(self) -> str:
        """ "built in", or "plugin NAME VERSION".

        >>> Origin().said(), Origin("foil-plugin-example", "0.1.0", "eqben = example:EQBEN").said()
        ('built in', 'plugin foil-plugin-example 0.1.0')
        """
        return "built in" if self.built_in else f"plugin {self.distribution} {self.version}".rstrip()


BUILT_IN = Origin()


@dataclass(frozen=True)
class Added:
    """A plugin's record admitted to a registry."""

    group: str
    name: str
    origin: Origin


@dataclass(frozen=True)
class Refused:
    """An entry point whose record was refused, and why."""

    group: str
    origin: Origin
    reason: str

    def line(self) -> str:
        """The one-line error: package, entry point, group, reason."""
        return f"{self.origin.said()}: entry point `{self.origin.entry_point}` ({self.group}) refused: {self.reason}"


# What this process's registries took from plugins and refused, in load order.
ADDED: list[Added] = []
REFUSED: list[Refused] = []
_ORIGINS: dict[tuple[str, str], Origin] = {}


class Registry(Mapping[str, Record]):
    """The records of one registry by name: `built_ins`, then each installed plugin's record of
    `group`, all admitted alike; `reserved` names are held by records kept elsewhere (made-here
    formats). Built on first use, not when its package is imported: a plugin's module imports
    foil's record types (and so this registry's package) and must not be loaded half-imported."""

    def __init__(
        self, group: str, record_type: type[Record], built_ins: Iterable[Record], *, reserved: Iterable[str] = ()
    ) -> None:
        self.group, self.record_type = group, record_type
        self._built_ins, self._reserved = tuple(built_ins), tuple(reserved)
        self._records: dict[str, Record] | None = None
        _REGISTRIES.append(self)

    @property
    def records(self) -> dict[str, Record]:
        """The records, loaded now if not yet (while loading, those admitted so far)."""
        if self._records is None:
            self._records = {}
            _fill(self._records, self.group, self.record_type, self._built_ins, self._reserved)
        return self._records

    def __getitem__(self, name: str) -> Record:
        return self.records[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self.records)

    def __len__(self) -> int:
        return len(self.records)

    def __repr__(self) -> str:
        return f"Registry({self.group!r}, {list(self.records)!r})"


_REGISTRIES: list[Registry[Any]] = []


def lazy_names(namespace: dict[str, Any], **compute: Callable[[], Any]) -> Callable[[str], Any]:
    """A module's ``__getattr__`` (PEP 562): each name of `compute` computed on first use (read off a
    registry, which loads then) and kept in the module (`namespace`, its ``globals()``)."""

    def __getattr__(name: str) -> Any:
        if name not in compute:
            raise AttributeError(f"module {namespace['__name__']!r} has no attribute {name!r}")
        namespace[name] = value = compute[name]()
        return value

    return __getattr__


def load_all() -> None:
    """Load every registry created so far (what `installed` reports on)."""
    for registry in _REGISTRIES:
        len(registry)


def _fill(
    records: dict[str, Any], group: str, record_type: type, built_ins: Iterable[Any], reserved: Iterable[str]
) -> None:
    """Admit `built_ins`, then each installed entry point of `group`, into `records`."""
    held = {name: BUILT_IN for name in reserved}
    for record in built_ins:
        _admit(records, held, record_type, record, record.name, BUILT_IN)
    for entry_point in installed_entry_points(group):
        origin = origin_of(entry_point)
        try:
            _admit(records, held, record_type, _loaded(entry_point), entry_point.name, origin)
        except PluginRefused as error:
            _refuse(Refused(group, origin, str(error)))
        else:
            ADDED.append(Added(group, entry_point.name, origin))
            _ORIGINS[(group, entry_point.name)] = origin


def installed_entry_points(group: str) -> list[metadata.EntryPoint]:
    """The entry points installed packages declare in `group`, by package and name (one order everywhere)."""
    found = metadata.entry_points(group=group)
    return sorted(found, key=lambda ep: (_distribution(ep)[0], ep.name))


def origin_of(entry_point: metadata.EntryPoint) -> Origin:
    """The package and entry point a plugin's record comes through."""
    name, version = _distribution(entry_point)
    return Origin(name or "(unknown package)", version, f"{entry_point.name} = {entry_point.value}")


def origin(group: str, name: str) -> Origin:
    """Where the record `name` of `group` comes from (built in unless a plugin added it)."""
    return _ORIGINS.get((group, name), BUILT_IN)


def marked(group: str, name: str) -> str:
    """A generated table's name cell: the name in backticks, with its plugin where one added it.

    >>> marked(FORMATS, "sugarcrepe")
    '`sugarcrepe`'
    """
    where = origin(group, name)
    return f"`{name}`" if where.built_in else f"`{name}` ({where.said()})"


@dataclass(frozen=True)
class Plugin:
    """One installed plugin package: what it adds (group -> names) and its entry points refused
    (each `{group, entry_point, reason}`)."""

    distribution: str
    version: str
    adds: dict[str, list[str]]
    refused: list[dict[str, str]]


def installed() -> list[Plugin]:
    """Every plugin package the registries saw (each loaded now), by name: what each added and what was refused."""
    load_all()
    plugins: dict[str, Plugin] = {}

    def of(where: Origin) -> Plugin:
        return plugins.setdefault(where.distribution, Plugin(where.distribution, where.version, {}, []))

    for added in sorted(ADDED, key=lambda added: list(GROUPS).index(added.group)):  # groups in GROUPS' order
        of(added.origin).adds.setdefault(added.group, []).append(added.name)
    for refused in REFUSED:
        said = {"group": refused.group, "entry_point": refused.origin.entry_point, "reason": refused.reason}
        of(refused.origin).refused.append(said)
    return [plugins[name] for name in sorted(plugins)]


def refusal_lines() -> list[str]:
    """One line per entry point refused by the registries created so far (each loaded now)."""
    load_all()
    return [refused.line() for refused in REFUSED]


def _admit(
    records: dict[str, Any],
    held: dict[str, Origin],
    record_type: type,
    record: Any,
    name: str,
    where: Origin,
) -> None:
    """Add `record` under `name`, or raise PluginRefused saying why it cannot join (a built-in's
    refusal is foil's own bug: the caller lets it propagate)."""
    if not isinstance(record, record_type):
        raise PluginRefused(f"gives a {type(record).__name__}, not a {record_type.__name__}")
    named = getattr(record, "name", None)
    if named != name:
        raise PluginRefused(f"its record is named {named!r}; name the entry point {named!r}")
    if name in held:
        holder = held[name]
        raise PluginRefused(f"the name {name!r} is {'built in' if holder.built_in else 'taken by ' + holder.said()}")
    records[name], held[name] = record, where


def _loaded(entry_point: metadata.EntryPoint) -> Any:
    """The object an entry point names; PluginRefused, in one line, where importing it raised."""
    try:
        return entry_point.load()
    except Exception as error:  # a plugin may raise anything on import: each is a refusal
        said = " ".join(str(error).split())
        raise PluginRefused(f"importing it raised {type(error).__name__}" + (f": {said}" if said else "")) from error


def _refuse(refused: Refused) -> None:
    REFUSED.append(refused)
    log.warning("%s", refused.line())


def _distribution(entry_point: metadata.EntryPoint) -> tuple[str, str]:
    """(package name, version) of the package declaring an entry point ("" when unknown)."""
    dist = entry_point.dist
    return ("", "") if dist is None else (str(dist.name or ""), str(dist.version or ""))
