"""Gold (attention-check) screening: who fails, by a rule that needs enough gold answers.

One missed check among few proves little: an annotator is screened out (left out of the vote,
given a crowd study's screen-out code) only when their gold accuracy is below the batch's pass
mark with 95% confidence, i.e. when the upper end of the Wilson 95% interval of their gold
accuracy (statsmodels' ``proportion_confint``) lies below the mark. With the default 60% mark
that takes at least three gold items, all missed; one miss in one or two never excludes anyone.
"""

from __future__ import annotations

GOLD_PASS = 60.0  # the default pass mark, percent


def rule_text(gold_pass: float = GOLD_PASS) -> str:
    """The screening rule in words, for the batch page and the protocol paragraph.

    >>> rule_text(60.0)
    'an annotator is left out of the vote only when the upper end of the Wilson 95% interval of their gold accuracy is below the 60% pass mark'
    """  # noqa: E501
    return (
        "an annotator is left out of the vote only when the upper end of the Wilson 95% interval of their gold "
        f"accuracy is below the {gold_pass:.0f}% pass mark"
    )


def gold_upper_bound(n_right: int, n_gold: int) -> float:
    """The upper end, in percent, of the Wilson 95% interval of a gold accuracy.

    >>> round(gold_upper_bound(0, 1), 1), round(gold_upper_bound(0, 3), 1)
    (79.3, 56.1)
    """
    from statsmodels.stats.proportion import proportion_confint  # imported here: the CLI's start stays quick

    return 100.0 * float(proportion_confint(n_right, n_gold, alpha=0.05, method="wilson")[1])


def fails_gold(n_right: int, n_gold: int, gold_pass: float = GOLD_PASS) -> bool:
    """Whether an annotator's gold answers show, with 95% confidence, an accuracy below `gold_pass`.

    >>> fails_gold(0, 1), fails_gold(0, 2), fails_gold(0, 3), fails_gold(3, 10), fails_gold(8, 10)
    (False, False, True, False, False)
    """
    return n_gold > 0 and gold_upper_bound(n_right, n_gold) < gold_pass
