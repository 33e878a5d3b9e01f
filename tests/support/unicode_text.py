"""Text as people write it, for the tests that carry it through the
document's paths (docs/adr/0128): astral emoji, a flag, a family joined by
zero-width joiners, a skin tone, CJK, Arabic and Hebrew, combining accents,
tabs, a very long line and unusual line breaks."""

FAMILY = "👩\u200d👩\u200d👧"  # woman, ZWJ, woman, ZWJ, girl: one character to the person
FLAG = "🇫🇷"
PARAS = [
    "Le café est prêt. " + FAMILY + " arrive à 10 h. " + FLAG,
    "会议纪要：我们讨论了项目进度，下一步是撰写报告。日本語のテキストも含まれます。",
    "مرحبا بالعالم، هذا نص باللغة العربية. שלום עולם, זה טקסט בעברית.",
    "Cafe\u0301 noir, re\u0301sume\u0301, nai\u0308ve (combining accents).",
    "Col1\tCol2\tCol3\twith tabs",
    "x" * 5000 + "🙂" + "y" * 5000,  # a very long line without a break
    "Line with odd breaks\u2028inside\x0bit\x0cand\u0085more\x1cend",
]


def big_document(n_chars: int) -> str:
    """Numbered paragraphs of PARAS, blank lines between, about `n_chars` long."""
    out, i = [], 0
    while sum(len(p) + 2 for p in out) < n_chars:
        out.append(f"{i}. " + PARAS[i % len(PARAS)])
        i += 1
    return "\n\n".join(out) + "\n"
