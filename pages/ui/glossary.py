"""What the figures the pages show mean, in words a newcomer reads (issue 62 item 5): one help text per label.

A figure shown on several pages (LLM calls, cache hits, tokens) is explained the same way everywhere; a page's
own figure keeps its help beside it. :func:`plural` writes counts ("1 group", "2 groups").
"""

from __future__ import annotations

HELP = {
    "LLM calls": "Requests sent to the model (answers taken from the cache are not counted here).",
    "Cache hits": "Requests answered from the cache of earlier identical requests: free and instant.",
    "Prompt tokens": "Tokens of text sent to the model in the requests it answered.",
    "Completion tokens": "Tokens of text the model wrote in its answers.",
    "Cost ($)": "Dollars at the prices per 1,000 tokens set under Settings (0 when no price is set).",
    "Seconds": "Wall-clock seconds the run took (fitting and scoring), resumes included.",
    "Missing verdicts": "Test items the judge gave no score (a reply without a readable score); they are left out "
                        "of the correlations, never filled in.",
    "Missing scores": "Test items the judge gave no score; they are left out of the correlations, never filled in.",
    "Parse failures": "Replies whose score could not be read.",
    "Samples": "Scored outputs in the dataset (one row each).",
    "Groups": "Distinct inputs (e.g. articles or dialogues) the outputs were written for. Items of one group are "
              "kept together in one split and resampled together in intervals.",
    "Systems": "Distinct systems (models) that wrote the outputs; 0 when the data does not name them.",
    "Natural level": "Where the correlations with the humans are reported for this dataset. 'group': within "
                     "each input (outputs for the same article compared with each other), averaged over inputs; "
                     "'system': per system mean; 'sample': over all items at once.",
    "Human score": "The human rating of this item on the aspect (the mean of the annotators where several rated it).",
    "Judge score": "The score the judge gave this item, on the aspect's scale.",
    "Judge 0-100": "Active-Critic's overall score on its own 0-100 scale, before it is mapped to the aspect's "
                   "scale.",
    "Hypotheses seen": "Distinct hypotheses (one-trait rubrics) generated so far, kept or not.",
    "Wrong-example bank": "Training items the current hypotheses score badly, collected for the next refinement: "
                          "how many are held now / how many make the bank full (w_max), which triggers a "
                          "refinement round.",
    "Bank refreshes": "Times the hypothesis bank was refilled with new hypotheses from the wrong examples.",
    "Refinement rounds": "Rounds in which the model rewrote hypotheses using the wrong examples or the literature.",
    "Unparsed replies": "Generation replies with no readable hypothesis; they are counted, not used.",
    "Criteria in the refit": "Criteria the refit below uses: scored in this run, unchanged and still feeding the "
                             "aggregator.",
    "Waiting for scores": "Edited, moved or added criteria: they have no scores yet; the next round scores them.",
    "Strategies evaluated": "Prompt strategies HPSS has scored on the validation items so far, of its budget.",
    "Coverage (best)": "Share of the validation items the best strategy scored (a reply without a score is "
                       "missing).",
    "Coverage (MT-Bench base)": "Share of the validation items the MT-Bench base prompt scored.",
    "LLM requests to score the test items": "Upper bound for scoring the test items with the finished judge, "
                                            "before cache hits.",
}
"""Help text by a figure's label, for the figures shown on more than one page or without a help of their own."""


def plural(n: int, noun: str, nouns: str | None = None) -> str:
    """``1 group``, ``2 groups`` (``nouns``: an irregular plural)."""
    return f"{n:,} {noun if n == 1 else (nouns or noun + 's')}"
