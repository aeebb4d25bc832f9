"""Phrases of eight languages (English, German, Spanish, French, Chinese, Japanese, Arabic, Russian) that tell a
generated rubric entry speaks to the evaluator, refuses, hedges or talks about the scale or the raters.

:mod:`judge_engine.rubric_words` holds English words that name qualities; these are phrases of what a rubric
never says to the text it judges: "ignore the rubric above", "system message", "give every summary a 5", "as an
AI language model", "it is hard to say". They are closed lists, so the rules that read them say which language
they cover (:data:`LANGUAGES`); a phrase in a ninth language passes them, and the model's own check and the
evidence of the training scores (:mod:`judge_engine.rubric_evidence`) are the rules that hold there.

Written from the tuning half of ``tests/data/rubric_written_apart.jsonl`` and from how each language says these
things, never from the held-out half (``docs/rubric-checks.md``).
"""

from __future__ import annotations

import re

LANGUAGES = ("en", "de", "es", "fr", "zh", "ja", "ar", "ru")
"""The languages the phrases cover."""


def _any(*parts: str) -> re.Pattern[str]:
    return re.compile("|".join(f"(?:{p})" for p in parts), re.IGNORECASE)


START = r"(?:^|[.;:!?\n\u3002\uff01\uff1f\uff1a\"'`\u00ab\u201c\u201e\u2018\u300c]\s*)(?:please\s+|bitte\s+|por favor,?\s+|s'il (?:te|vous) pla[îi]t,?\s+|请|пожалуйста,?\s+)?"
"""The start of a sentence or clause, where an order stands (French and Spanish "ignore" is also "it ignores")."""

OVERRIDE = _any(
    # "ignore / disregard / forget" + what the prompt gave: the rubric, the instructions, what came above
    START + r"(?:ignore|disregard|forget|override|bypass)\b[^.!?\n]{0,40}\b(?:instructions?|rubric|criteria|above"
    r"|previous|prior|preceding|rules|guidelines|prompt)\b",
    START + r"(?:ignoriere|ignorieren sie|vergiss|vergessen sie|missachte)\b[^.!?\n]{0,40}(?:anweisung|obig|rubrik"
    r"|kriteri|aufgabe|vorherig|regeln|bewertungs)",
    START + r"(?:ignora|ignore|olvida|olvide|omite|haz caso omiso)\b[^.!?\n]{0,40}(?:instrucci|r[úu]brica|anterior"
    r"|criterio|tarea|reglas|pauta)",
    START + r"(?:ignore|ignorez|oublie|oubliez|ne tiens pas compte|ne tenez pas compte)\b[^.!?\n]{0,40}(?:consigne"
    r"|instruction|grille|pr[ée]c[ée]dent|crit[èe]re|t[âa]che|r[èe]gle)",
    START + r"(?:忽略|无视|忽视|不要理会|忘记|忘掉)(?:掉)?(?:上面|上述|以上|之前|前面|所有|全部|一切)",
    r"(?:上記|以上|前の|これまでの)[^。\n]{0,20}(?:無視|忘れ)",
    START + r"(?:تجاهل|انس|أهمل|اهمل)[^.!؟\n]{0,40}(?:السابق|أعلاه|التعليمات|المعايير|القواعد|التقييم)",
    r"\b(?:игнорируй\w*|забудь\w*|не обращай\w* внимани\w*)\b[^.!?\n]{0,40}(?:выше|предыдущ|инструкц|рубрик"
    r"|задани|правил|критери)",
)
"""An order to set aside what the prompt gave."""

FAKE_SYSTEM = _any(
    r"\bsystem\s*(?:message|prompt|override|note|instruction)s?\b", r"(?:^|[\[#(]\s*)system\s*[:\]]",
    r"\b(?:evaluator|grader|judge|rater)\s*(?:note|instruction|override)\b",
    r"\bsystem(?:nachricht|meldung|anweisung|hinweis)\b", r"\bmensaje del sistema\b", r"\bmessage (?:du )?syst[èe]me\b",
    r"系统(?:提示|消息|指令|通知)", r"システム(?:メッセージ|プロンプト|指示)", r"رسالة النظام|تعليمات النظام",
    r"\bсистемн\w+ (?:сообщени\w*|промпт\w*|инструкц\w*)",
)
"""A system message or note to the grader written into a rubric entry."""

NEW_ROLE = _any(
    r"\byou are (?:now|no longer)\b", r"\byour (?:new|only|real) (?:task|job|role)\b", r"\bfrom now on\b",
    r"\bdu bist (?:jetzt|nun|kein\w*)\b", r"\bdeine (?:neue|einzige) aufgabe\b", r"\bab (?:jetzt|sofort)\b",
    r"\ba partir de ahora\b", r"\btu (?:nueva|única|unica) tarea\b", r"\bya no eres\b",
    r"\bà partir de maintenant\b", r"\b(?:ta|votre) nouvelle t[âa]che\b", r"\btu n'es plus\b",
    r"从现在(?:起|开始)", r"你不再是", r"你的(?:新|唯一)任务", r"(?:今から|これから)[^。\n]{0,20}あなた", r"あなたの役割",
    r"مهمتك (?:الجديدة|الوحيدة)", r"من الآن فصاعد", r"لم تعد",
    r"\bтеперь ты\b", r"\bс этого момента\b", r"\bтво\w+ (?:нов\w+|единственн\w+) задач\w*\b", r"\bты больше не\b",
)
"""Telling the evaluator it has a new role or task."""

FIXED_ANSWER = _any(
    r"\b(?:always )?answer(?:s|ing)? (?:\"|')?yes\b", r"\bmit (?:\"|„)?ja(?:\"|“)? (?:zu )?antworten\b",
    r"\bresponder (?:\"|«)?s[íi]\b", r"\br[ée]pondre (?:\"|«)?oui\b", r"回答[“\"「]是[”\"」]", r"[「\"]はい[」\"]と答え",
    r"يجيب بنعم|الإجابة بنعم", r"\bотвечать (?:«|\")?да\b",
    r"\bwithout reading\b", r"\bohne (?:sie |ihn |es )?zu lesen\b", r"\bsin leer\b", r"\bsans (?:le )?lire\b",
    r"不看|无需阅读|不用读", r"読まずに", r"دون قراءت|بدون قراءة", r"\bне читая\b",
)
"""An answer fixed in advance: "answer Yes", "without reading the text"."""

EVERY = _any(
    r"\b(?:every|each|all)\b", r"\b(?:jede[mnrs]?|alle[nm]?)\b", r"\b(?:cada|todas?|todos)\b",
    r"\b(?:chaque|tous|toutes)\b", r"每个|每一|所有|全部", r"すべて|全て|全部|各", r"\bكل\b|لكل|جميع",
    r"\b(?:кажд\w+|всем|все|всех)\b",
)
"""Every item: a fixed score is given to all of them."""

SCORE_GIVEN = _any(
    r"(?:^|[.;:!?\n,]\s*|\b(?:and|then|just|simply|always|please)\s+)(?:give|assign|award|output)\b[^.!?\n]{0,60}"
    r"\b(?:\d+(?:/\d+)?|maximum|highest|top|full|perfect)\b",
    r"\b(?:vergib|gib|vergeben sie|geben sie)\b[^.!?\n]{0,60}(?:\bnote \d|\b\d+ punkt\w*|höchst\w*|maxim\w*|volle)",
    r"(?:^|[.;:!?\n,]\s*|\by\s+)(?:asigna|otorga|da|califica|punt[úu]a)\b[^.!?\n]{0,60}(?:\b\d+\b|m[áa]xim\w*"
    r"|m[áa]s alta)",
    r"(?:^|[.;:!?\n,]\s*|\bet\s+)(?:attribue|attribuez|donne|donnez|notez)\b[^.!?\n]{0,60}(?:\b\d+(?:/\d+)?\b"
    r"|maximal\w*|maximum|la plus haute)",
    r"(?:打|给)[^。\n]{0,10}(?:\d+分|满分|最高分)", r"(?:\d+点|満点|最高点)を?付け",
    r"(?:امنح|أعط|اعط|إعطاء)[^.\n]{0,40}(?:الدرجة|درجة)", r"الدرجة الكاملة",
    r"\bстав\w*\b[^.!?\n]{0,40}(?:\b\d+ балл\w*|высш\w+ балл|максимальн\w+ балл)",
)
RANGE = re.compile(r"\d+\s*(?:-|–|—|to|bis|a|à|до|到|から|إلى)\s*\d+", re.IGNORECASE)
"""A range of scores ("from 1 to 5"): a task description states the scale; a fixed score is one value."""
"""Giving a stated score: "give ... a score of 5", "vergib ... die Note 5", "给…打5分"."""

REFUSAL = _any(
    r"\bas an ai\b", r"\bas a (?:large )?language model\b", r"\bi(?:'m| am) (?:sorry|unable|not able)\b",
    r"\bi (?:cannot|can't|can not|won't|will not)\b",
    r"\bals (?:ki|ai)[- ]?(?:sprachmodell|assistent|modell)\b", r"\bals sprachmodell\b",
    r"\b(?:kann|darf) ich (?:keine|nicht|leider)\b", r"\bes tut mir leid\b",
    r"\bcomo (?:un )?(?:modelo de lenguaje|asistente de ia|ia)\b", r"\blo siento\b", r"\bno puedo\b",
    r"\ben tant qu['’](?:ia|assistant|mod[èe]le)", r"\bje ne (?:peux|puis) pas\b", r"\bd[ée]sol[ée]\b",
    r"作为(?:一个)?(?:AI|人工智能)", r"(?:我|本人)(?:无法|不能|没法)", r"抱歉", r"AI(?:言語)?モデルとして", r"申し訳",
    r"بصفتي|كنموذج ذكاء|لا يمكنني|لا أستطيع|عذرا|عذراً",
    r"\bкак (?:языковая )?модель\b", r"\bя не (?:могу|в состоянии)\b", r"\bизвините\b",
)
"""A model declining to write the entry, or speaking as a model."""

HEDGE = _any(
    r"\bmay or may not\b", r"\bmight or might not\b", r"\bcould go either way\b", r"\beither way\b",
    r"\b(?:it is|it's) hard to (?:say|tell)\b", r"\bhard to say\b", r"\bit depends\b", r"\bdepending on various\b",
    r"\bsometimes\b[^.!?\n]{0,60}\bsometimes\b",
    r"\bschwer zu sagen\b", r"\bmanchmal ja,? manchmal nein\b", r"\boder auch nicht\b", r"\bje nach umständen\b",
    r"\bkommt darauf an\b",
    r"\bdepende\b", r"\ba veces s[íi],? (?:y )?a veces no\b", r"\bpodr[íi]a\b[^.!?\n]{0,30}\bo no\b",
    r"\bm[áa]s o menos\b",
    r"\bcela d[ée]pend\b", r"\bparfois oui,? parfois non\b", r"\bpeut[- ][êe]tre\b[^.!?\n]{0,80}\b(?:peut|pourrait)\b"
    r"|\b(?:éventuellement|peut-être)\b[^.!?\n]{0,80}\b(?:peut-être|éventuellement)\b",
    r"很难说|难以判断|可能[^。，,]{0,10}也可能|可高可低|有时[^。]{0,10}有时", r"一概には言えない|かもしれない[^。]{0,40}かもしれない",
    r"يصعب الحكم|أحياناً نعم وأحياناً لا|أحيانا نعم وأحيانا لا|أو لا يكون|وقد لا",
    r"\bтрудно сказать\b", r"\bиногда да,? иногда нет\b", r"\bвозможно\b[^.!?\n]{0,60}\bвозможно\b", r"\bили не очень\b",
)
"""A hedge that commits to nothing: "may or may not", "hard to say", "sometimes yes, sometimes no"."""

RATERS = _any(
    r"\b(?:annotators?|raters?|labell?ers?|graders?|crowd ?workers?)\b",
    r"\b(?:annotator(?:en|in|innen)?|bewerter(?:in|innen)?|gutachter\w*)\b",
    r"\b(?:anotador\w*|evaluador\w*|calificador\w*)\b", r"\b(?:annotat(?:eur|rice)s?|[ée]valuat(?:eur|rice)s?)\b",
    r"标注者|标注员|评估者|评审员|评分者|打分者", r"アノテーター|評価者|採点者|アノテータ",
    r"المقيّم|المقيم|المعلق|المصحح", r"\b(?:разметчик\w*|оценщик\w*|асессор\w*|аннотатор\w*)\b",
)
"""Who scored the training items."""

RATER_HABIT = _any(
    r"\b(?:tired|harsh\w*|lenient\w*|bias\w*|preferred|favou?red)\b", r"\b(?:müde|streng\w*|bevorzugt\w*)\b",
    r"\b(?:cansad\w*|prefer[íi]\w*|no leyeron)\b", r"\b(?:fatigu\w*|s[ée]v[èe]re\w*|pr[ée]f[ée]r\w*)\b",
    r"更喜欢|偏好|疲劳|累了", r"厳しく|好んで|疲れ", r"يفضلون|متعب", r"\b(?:устал\w*|предпочита\w*|ставили)\b",
    r"\b(?:were|was|did not|didn't)\b", r"\b(?:waren|hatten|haben)\b", r"\b(?:estaban|fueron)\b", r"\b(?:étaient|avaient)\b",
    r"读到|读过|ていた", r"كانوا", r"\bбыли\b",
)
"""What the raters did or were: a statement about them, not about the judged text."""

SCORE_STATISTICS = _any(
    r"\b(?:normal|uniform|even) distribution\b", r"\bdistributed\b", r"\bspread evenly\b", r"\b(?:mean|average) "
    r"(?:score|rating)?\b[^.!?\n]{0,30}\b(?:is|be|of|should|must)\b", r"\ba fifth of\b", r"\bhalf of the (?:scores|items)\b",
    r"\bnormalverteilung\b", r"\bmittelwert\b", r"\bdurchschnitt\w*\b", r"\bgleichmäßig verteilt\b",
    r"\bdistribuci[óo]n\b", r"\bla media de\b", r"\bpromedio\b", r"\bde forma uniforme\b",
    r"\bdistribution (?:normale|uniforme)\b", r"\bla moiti[ée] des\b", r"\bmoyenne\b",
    r"正态分布|均匀分布|平均分|平均值|一半的", r"正規分布|平均が|平均を|半分",
    r"التوزيع|تتوزع|بالتساوي|المتوسط|متوسط الدرجات|نصف",
    r"\bраспредел\w+\b", r"\bсредн\w+ значени\w*\b", r"\bравномерно\b", r"\bполовин\w+\b",
)
"""Statements about how scores are distributed over the items, not about one judged text."""

SCORE_WORDS = _any(
    r"\b(?:scores?|ratings?|grades?|marks?|points?)\b", r"\b(?:bewertung\w*|note[n]?|punkt\w*)\b",
    r"\b(?:puntuaci\w*|calificaci\w*|nota\w*|escala)\b", r"\b(?:notes?|scores?|[ée]chelle)\b",
    r"分数|评分|得分|打分", r"点数|点|採点|スコア", r"الدرجات|الدرجة|درجات|المقياس", r"\b(?:оценк\w*|балл\w*|шкал\w*)\b",
)
"""Words of a score."""

GRADE_WORDS = frozenset("""
gets get receives receive earns earn obtains obtain given
erhält erhalten bekommt bekommen hohe hoch hohen hoher gute guten gut note bewertung punktzahl
obtiene obtienen recibe reciben alta alto altas buena bueno puntuación nota
reçoit reçoivent obtient bonne bonnes élevée élevé note
получает получают высокую высокий высокая хорошую хорошая оценку оценка оценки
يحصل تحصل درجة الدرجة عالية عال جيد جيدة
获 得 高 分 数 好 评 价 点 い
""".split())
"""Words of many languages that only grade or say a text gets a grade ("gets a high score", "erhält eine hohe
Bewertung", "获得高分"): with the aspect's own words they restate the aspect."""

FUNCTION_CHARACTERS = frozenset("的 是 了 在 和 与 也 很 得 地 着 过 都 而 及 其 之 为 被 把 这 那 个 有 は が の を に で と も".split())
"""Chinese and Japanese characters that name nothing (particles, the copula): Chinese and Japanese are read a
character at a time, and these are no facet of the judged text."""
