"""The English word lists of the rubric checks, and how two words are told to be one word inflected.

The lists only ever raise a flag (:data:`judge_engine.rubric_checks.FLAG_RULES`)
or leave words out of a comparison; no refusal rests on them, because a list
holds one language's words and a rubric may be written in any
(``tests/test_rubric_checks_real.py``). :func:`related` joins inflections of
one word ("coherent" / "coherence", "Kohärenz" / "kohärent") by their shared
beginning, in any alphabetic script.
"""

from __future__ import annotations

from typing import Iterable

QUALITY_WORDS = frozenset("""
accurate accuracy adequate appropriate appropriately bad badly better best clarity clear clearly coherent complete
completeness concise conciseness consistent correct correctly coverage creative creativity detail detailed
effective effectively engaging engaged error errors factual factuality faithful faithfulness fluent fluently good
grammatical grammaticality helpful high higher informative interesting irrelevant logical logically low lower
natural poor poorly precise quality readable readability redundancy redundant repetitive score scores scored should
specific specificity strong understandable vague weak well worse worst must avoid avoids lacks lack missing
contradict contradicts contradicted contradicting contradictory contradiction mistakes flow organized organised
structure structured original surprising empathetic empathic polite politeness brevity brief padding verbose
verbosity wordy grounded hallucination hallucinated plausible plausibility diversity humor humour humorous style
tone spelling punctuation cohesion novelty novel usefulness useful harmless safe safety persuasive complex
enjoyable enjoyment thorough comprehensive insightful robust efficient efficiently sufficient insufficient valid
accurately successfully properly adequately carefully thoroughly rating rated
""".split())
"""English words that name a quality, a judgement or a score (the ``no_quality`` flag only)."""

TASK_WORDS = frozenset("""
evaluate evaluation evaluating evaluator rate rating rated judge judging assess assessing assessment score scoring
task quality criteria criterion reply output outputs generated generation text texts
""".split())
"""English words a task description uses when it describes the evaluation (the ``no_quality`` flag only)."""

STOP_WORDS = frozenset("""
a an the of to in on at by for from with without and or but nor not no is are was were be been being am it its
this that these those there here which who whom whose what when where why how whether if then than so as such
has have had do does did can could may might will would shall should must very really just also only more most
each every any all some other another into onto over under about above below between through during while one
""".split())
"""English function words: they name nothing, and their share tells English text from other languages."""

OUTPUT_NOUNS = frozenset("""
answer answers reply replies text texts output outputs generation sentence sentences passage
""".split())
"""What a judged text is called: a criterion named only by it names no property."""

TEMPLATE_WORDS = frozenset("""
criterion criteria subcriterion subcriteria sub name names aspect aspects item items example examples point points
factor factors metric metrics definition definitions number first second third fourth new short
""".split())
"""Words a template's slot name is made of ("Criterion 1", "A short name", "Sub-criterion")."""

FIELD_WORDS = frozenset("""
human humans annotator annotators rating ratings score scores document documents source sources content data json
field fields key keys value values label labels expert experts rater raters annotation annotations child children
qualities quality description descriptions hypothesis hypotheses
""".split())
"""Names of a prompt's fields and schema keys: a criterion named with these only (``field_name``) is suspect."""

PRAISE_WORDS = frozenset("""
good bad great excellent high higher highest low lower lowest well better worse best worst quality qualities score
scores scored scoring rating rated poor poorly strong weak level degree general generally measure measures judged
evaluate evaluated evaluation
""".split())
"""Words that grade without saying what is graded."""

FIRST_PERSON = frozenset("i me my mine myself i'm i've i'd i'll".split())
"""Words of a speaker: a criterion or hypothesis describes a text, it does not speak."""

RATERS = frozenset("expert experts annotator annotators rater raters judge judges evaluator evaluators".split())
"""Who scores: a hypothesis or criterion about them, not about the judged text, is ``about_raters``."""
CHECK_VERBS = frozenset("check checks checked look looks ask asks reward rewards penalise penalises penalize "
                        "penalizes prefer prefers expect expects want wants notice notices count counts favour "
                        "favours favor favors".split())
"""What raters do to a text: a sentence that says what they check in it is about the text."""

SCORING_WORDS = frozenset("""
criteria criterion scoring scale metric metrics aggregated evaluator hypothesis hypotheses
""".split())
"""Words of the scoring procedure. "Score", "rated" and band wording are left out: a rubric says which texts
score higher."""

VAGUE_WORDS = frozenset("""
perfect perfectly ideal ideally fine nice wonderful amazing example examples way ways thing things kind type sort mix
piece part manner
""".split())
"""Words that name no facet: with praise they leave a statement saying nothing."""

COMMON_WORDS = frozenset("""
about also been does each every from have into more most only other should some than that their them then there
these they this those what when which with would your whether while where because being over under very
""".split())
"""Words of four or more letters that say nothing about a topic (left out by :func:`shares_topic`)."""

FRAME_WORDS = frozenset("should must".split())
"""Quality words that, in a statement, only continue its frame ("A good response should ..."): they name no
quality there."""

HTML_TAGS = frozenset("a b i u p br hr em strong code pre ul ol li div span table tr td th sup sub small".split())
"""Tags of HTML: "<b>" in a rubric is markup, not a slot."""

RATING_WORDS = frozenset("rated rating score scores scored".split())
"""Quality words that only say a text was scored."""

ENGLISH_MARKERS = frozenset("the of and is are that this with which than what does should will would".split())
"""Function words of English that another language written in Latin letters seldom has."""

MIN_SHARED = 5
"""Letters two inflections of one word share at least ("fluent" / "fluency")."""
MAX_ENDING = 3
"""Letters after the shared beginning the shorter word may have ("coherent" / "coherence": "t" after "coheren")."""


def related(a: str, b: str) -> bool:
    """Whether ``a`` and ``b`` (lower case) are one word inflected: equal, or sharing a beginning of at least
    :data:`MIN_SHARED` letters that leaves at most :data:`MAX_ENDING` letters of the shorter one.

    "consistent" / "consistency" and "informative" / "informativeness" are
    one word; "consideration" / "consistency" share "consi" and are two (a
    fixed five-letter prefix joined them, refusing "Consideration" under
    consistency as restating its parent).
    """
    if a == b:
        return True
    shared = 0
    for x, y in zip(a, b):
        if x != y:
            break
        shared += 1
    return shared >= MIN_SHARED and min(len(a), len(b)) - shared <= MAX_ENDING


def known(word: str, words: Iterable[str]) -> bool:
    """Whether ``word`` is one of ``words`` or an inflection of one (:func:`related`)."""
    return any(related(word, w) for w in words)


def covered(words: Iterable[str], by: Iterable[str]) -> bool:
    """Whether every word of ``words`` is one of ``by`` or an inflection of one."""
    by = tuple(by)
    return all(known(w, by) for w in words)


def beyond(words: Iterable[str], *known_words: Iterable[str]) -> set[str]:
    """The words of ``words`` that are no word of ``known_words`` nor an inflection of one."""
    pool = tuple(w for group in known_words for w in group)
    return {w for w in words if not known(w, pool)}
