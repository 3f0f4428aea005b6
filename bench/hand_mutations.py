"""Break each rule of issue 32 by hand, one at a time, and run the tests that should catch it.

    .venv/bin/python bench/hand_mutations.py

Each edit below is a plausible bug in the code that issue 32 found under-tested (a tie rule
ignored on one comparison, cosines stored in the wrong order, a lease not reset...). The script
applies one edit to the checkout, runs the named tests, restores the file and prints CAUGHT or
MISSED; it exits non-zero if any edit is missed. It edits files in place: run it on a clean
checkout and not beside another test run. TESTING.md lists the edits and what caught each.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
# (the bug in words, file, text replaced, replacement, pytest arguments that must fail)
EDITS = [
    (
        "hard positives ignore --ties on the second comparison",
        "foil_studio/analysis/metrics.py",
        '"aug_acc": original * credit(cp, cn, ties)',
        '"aug_acc": original * credit(cp, cn)',
        ["tests/test_tie_rules.py"],
    ),
    (
        "SugarCrepe++ ignores --ties on p2 vs n",
        "foil_studio/analysis/metrics.py",
        "credit(s[:, 2], s[:, 1], ties)",
        "credit(s[:, 2], s[:, 1])",
        ["tests/test_tie_rules.py"],
    ),
    (
        "recall@k under half gives untied items a wrong credit",
        "foil_studio/analysis/metrics.py",
        "return np.clip(k - above, 0, level + 1) / (level + 1)",
        "return np.clip(k - above, 0, level + 1) / (level + 1) * np.where(level > 0, 1, 0.5)",
        ["tests/test_tie_rules.py"],
    ),
    (
        "BiVLC ignores --ties on one comparison",
        "foil_studio/analysis/metrics.py",
        "credit(a, b, ties) for k, (a, b) in _bivlc_comparisons(scores).items()",
        'credit(a, b, ties if k != "tneg2i" else "wrong") for k, (a, b) in _bivlc_comparisons(scores).items()',
        ["tests/test_tie_rules.py"],
    ),
    (
        "What'sUp pairs as the minimum of credits",
        "foil_studio/analysis/results.py",
        "members[groups[group]] = members.get(groups[group], 1.0) * float(value)",
        "members[groups[group]] = min(members.get(groups[group], 1.0), float(value))",
        ["tests/test_tie_rules.py"],
    ),
    (
        "parity flips ignore the benchmark's tie rule",
        "foil_studio/analysis/parity.py",
        "flips = decision_flips(run_table(columns_a, ties), run_table(columns_b, ties))",
        'flips = decision_flips(run_table(columns_a, "wrong"), run_table(columns_b, "wrong"))',
        ["tests/test_tie_rules.py"],
    ),
    (
        "parity flips miss a move to an exact tie",
        "foil_studio/analysis/parity.py",
        'differs |= np.sign(joined[f"{gap} A"]) != np.sign(joined[f"{gap} B"])',
        'differs |= (joined[f"{gap} A"] > 0) != (joined[f"{gap} B"] > 0)',
        ["tests/test_tie_rules.py"],
    ),
    (
        "SugarCrepe++ text cosines stored in the wrong order",
        "foil_studio/data/item_kinds/paraphrase.py",
        "return [float(similarity[0, 2]), float(similarity[0, 1]), float(similarity[2, 1])]",
        "return [float(similarity[0, 1]), float(similarity[0, 2]), float(similarity[2, 1])]",
        ["tests/test_scoring.py"],
    ),
    (
        "Fleiss from counts accepts unequal vote totals",
        "foil_studio/annotate/agreement.py",
        "if len(set(totals.tolist())) != 1:",
        "if False:",
        ["tests/test_tokens_and_copies.py"],
    ),
    (
        "placeholder values in annotators.token open a queue",
        "foil_studio/data/store/annotators.py",
        "    if row is None or not hmac.compare_digest(row[0], wanted):\n        return None",
        (
            "    if row is None:\n"
            '        rows = list(db.query("SELECT id, name, external_id FROM annotators WHERE token = ?", [token]))\n'
            "        return cast(AnnotatorRow, rows[0]) if rows else None\n"
            "    if not hmac.compare_digest(row[0], wanted):\n"
            "        return None"
        ),
        ["tests/test_tokens_and_copies.py"],
    ),
    (
        "admin token length counted before trimming",
        "foil_studio/annotate/roles.py",
        "if len(from_env.strip()) < MIN_ADMIN_TOKEN_CHARS:",
        "if len(from_env) < MIN_ADMIN_TOKEN_CHARS:",
        ["tests/test_tokens_and_copies.py"],
    ),
    (
        "migrate-store renumbers rows",
        "foil_studio/data/store/copying.py",
        "        target.conn.executemany(insert, rows)",
        (
            '        if columns[0] == "id":\n'
            "            rows = [(n, *row[1:]) for n, row in enumerate(rows, start=1)]\n"
            "        target.conn.executemany(insert, rows)"
        ),
        ["tests/test_tokens_and_copies.py"],
    ),
    (
        "a reassigned assignment keeps its lease",
        "foil_studio/data/store/batches.py",
        "SET annotator_id = ?, position = ?, opened_at = NULL, shown_at = NULL, ",
        "SET annotator_id = ?, position = ?, shown_at = NULL, ",
        ["tests/test_integrity.py::test_a_reassigned_item_starts_its_lease_and_clocks_anew"],
    ),
    (
        "a reassigned assignment keeps its reading clock",
        "foil_studio/data/store/batches.py",
        "SET annotator_id = ?, position = ?, opened_at = NULL, shown_at = NULL, ",
        "SET annotator_id = ?, position = ?, opened_at = NULL, ",
        ["tests/test_integrity.py::test_a_reassigned_item_starts_its_lease_and_clocks_anew"],
    ),
    (
        "the reading clock starts at the draw",
        "foil_studio/data/store/labels.py",
        "started = shown_at or opened_at",
        "started = opened_at or shown_at",
        ["tests/test_annotation.py", "-k", "reading_time"],
    ),
    (
        "the batch's minimum halved",
        "foil_studio/data/store/labels.py",
        "if seconds is not None and seconds < min_seconds:",
        "if seconds is not None and seconds < min_seconds / 2:",
        ["tests/test_annotation.py", "-k", "reading_time"],
    ),
]


def main() -> int:
    missed = 0
    for why, relative, old, new, tests in EDITS:
        path = REPO / relative
        text = path.read_text()
        if text.count(old) != 1:
            print(f"STALE   {why}: the text to replace is not in {relative} exactly once")
            missed += 1
            continue
        path.write_text(text.replace(old, new))
        try:
            command = [sys.executable, "-m", "pytest", "-q", "-x", "-p", "no:randomly", *tests]
            result = subprocess.run(command, cwd=REPO, capture_output=True, text=True)
        finally:
            path.write_text(text)
        last = result.stdout.strip().splitlines()[-1] if result.stdout.strip() else result.stderr[-200:]
        print(f"{'CAUGHT' if result.returncode else 'MISSED'}  {why}: {last}", flush=True)
        missed += result.returncode == 0
    return 1 if missed else 0


if __name__ == "__main__":
    sys.exit(main())
