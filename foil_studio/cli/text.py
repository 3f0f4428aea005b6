"""Text output: a command's JSON result as the lines a terminal shows."""

from __future__ import annotations

import math
from typing import Any

from foil_studio.data import plain_text


def as_text(value: Any, indent: str = "") -> str:
    """A readable rendering of a command's result: scalars as `key: value`, lists of records and
    mappings of records (`by_category`) as aligned tables, floats with two decimals."""
    if isinstance(value, list):
        if value and all(_is_record(v) for v in value):
            return _indented(plain_text.table(value), indent)
        return "\n\n".join(as_text(v, indent) for v in value) or f"{indent}(none)"
    if not isinstance(value, dict):
        return f"{indent}{plain_text.cell(value)}"
    lines = []
    for key, item in value.items():
        if isinstance(item, list) and item and all(_is_record(v) for v in item):
            lines += [f"{indent}{key}:", _indented(plain_text.table(item), indent + "  ")]
        elif isinstance(item, dict) and item and all(isinstance(v, dict) and _is_record(v) for v in item.values()):
            label = key.removeprefix("by_") if key.startswith("by_") else "key"
            rows = [{label: k, **_flat(v)} for k, v in item.items()]
            lines += [f"{indent}{key}:", _indented(plain_text.table(rows), indent + "  ")]
        elif isinstance(item, dict) and item and not _is_record(item):
            lines += [f"{indent}{key}:", as_text(item, indent + "  ")]
        else:
            lines.append(f"{indent}{key}: {plain_text.cell(item) if item not in ({}, []) else '(none)'}")
    return "\n".join(lines)


def _is_record(value: Any) -> bool:
    """A dict whose values fit in table cells: scalars, flat mappings, short lists of scalars."""
    return isinstance(value, dict) and all(
        _fits_a_cell(v) or (isinstance(v, dict) and all(_fits_a_cell(x) for x in v.values())) for v in value.values()
    )


def _fits_a_cell(value: Any) -> bool:
    return not isinstance(value, (dict, list, tuple)) or (
        isinstance(value, (list, tuple)) and all(not isinstance(v, (dict, list, tuple)) for v in value)
    )


def _flat(record: dict[str, Any]) -> dict[str, Any]:
    """A record with its nested mappings spread into columns (`blind` -> `blind stats`...)."""
    flat: dict[str, Any] = {}
    for key, value in record.items():
        if isinstance(value, dict):
            flat.update({f"{key} {k}": v for k, v in value.items()})
        else:
            flat[key] = value
    return flat


def _indented(block: str, indent: str) -> str:
    return "\n".join(indent + line for line in block.splitlines())


def metrics_text(result: dict[str, Any]) -> str:
    """`metrics`: the run's header, then one row per category and metric with its 95% interval
    beside the value (the order of the app's table)."""
    from foil_studio.analysis.results import TABLED_KEYS, metric_rows, over_seeds_sentence

    head = {k: v for k, v in result.items() if k not in TABLED_KEYS and not isinstance(v, (dict, list))}
    if "tie_rule" in result:
        head["ties"] = f"a tie counts as {result['tie_rule']['rule']} ({result['tie_rule']['why']})"
    rest = {
        k: v
        for k, v in result.items()
        if k not in TABLED_KEYS and k not in head and k not in ("tie_rule", "over_seeds")
    }
    rows = [
        {
            **{k: v for k, v in row.items() if k in ("category", "per", "metric", "value")},
            "95% interval": plain_text.interval_text(row["interval"]),
            **{k: row[k] for k in ("n", "ties") if k in row},
        }
        for row in metric_rows(result)
    ]
    seeds = [over_seeds_sentence(result["over_seeds"])] if "over_seeds" in result else []
    return "\n".join([as_text(head), plain_text.table(rows), *seeds, *([as_text(rest)] if rest else [])])


def parity_text(result: dict[str, Any]) -> str:
    """`parity`: the runs and why each ran in its precision, the headline change with its
    interval, then the items whose decision flips."""
    change = (
        f"{result['metric']}: {plain_text.cell(result['value_a'])} under A, {plain_text.cell(result['value_b'])} under "
        f"B, change {plain_text.cell(result['change'])} (95% interval "
        f"{plain_text.interval_text(result['change_interval'])})"
    )
    why = [
        f"{run} ({result[key]})"
        for run, key in ((result["run_a"], "precision_a"), (result["run_b"], "precision_b"))
        if key in result
    ]
    lines = [
        f"A: {result['run_a']}, B: {result['run_b']} on {result['dataset']}, {result['n_items']} items both scored",
        *(["precisions: " + "; ".join(why)] if why else []),
        change,
    ]
    lines.append(f"{result['n_flips']} items decide differently" + (":" if result["flips"] else " (none)"))
    margins = [
        {k: f"{v:+.5f}" if isinstance(v, float) else v for k, v in row.items()} for row in result["flips"]
    ]  # bf16 flips sit within 0.01 of a tie
    return "\n".join([*lines, *([plain_text.table(margins)] if margins else [])])


def agreement_text(report: dict[str, Any]) -> str:
    """`agreement`: the coefficients as the page's table, then Cohen's kappa per pair."""
    from foil_studio.annotate.agreement import coefficient_rows, question_rows

    head = {k: report[k] for k in ("batch", "n_items", "n_labels", "level") if k in report}
    parts = [as_text(head), plain_text.table(coefficient_rows(report))]
    if report["cohen_pairs"]:
        parts += ["Cohen's kappa per pair:", plain_text.table(report["cohen_pairs"])]
    if "by_question" in report:
        parts += ["per question:", plain_text.table(question_rows(report))]
    return "\n".join([*parts, report["note"]])


def jsonable(value: Any) -> Any:
    """JSON-safe data: NaN becomes null (an undefined figure), tuples become lists."""
    if isinstance(value, float) and math.isnan(value):
        return None
    if isinstance(value, dict):
        return {k: jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [jsonable(v) for v in value]
    return value
