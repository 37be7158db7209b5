#!/usr/bin/env python3
"""Deterministic generator of tokenizer test strings (JSON array on stdout).

    python3 bench/gen_tokenizer_strings.py [COUNT] [SEED] > texts.json

Families: white-space runs, digits and numbers, emoji (ZWJ sequences, flags,
skin tones), mixed scripts (Latin, Cyrillic, Greek, Arabic, Hebrew,
Devanagari, Thai, Khmer, Hangul, kana, CJK), source code, English
contractions, unusual Unicode (combining marks, zero-width and bidi
controls, private use, C1 controls, full-width forms), and the texts of
special tokens (which must stay plain text without --special).
"""
import json
import random
import sys

WORDS = ("the quick brown fox jumps over lazy dog Hello World tokenizer model llama qwen "
         "a I it is was don't can't we're they've she'll he'd I'm O'Neil rock'n'roll").split()
WS = [" ", "  ", "   ", "\t", "\n", "\n\n", "\r\n", "\r", " \n ", "\u00a0", "\u3000", "\u2003",
      "\u2009", "\u200a", "\u000b", "\u000c", "\u0085", "\u2028", "\u202f", "\u205f", "\u1680", "    "]
SCRIPTS = [
    "naïve café déjà vu Ærøskøbing Œuvre straße İstanbul ıi ŞĞÜ",
    "Привет мир, как дела? Ёжик в тумане",
    "Καλημέρα κόσμε ΑΒΓΔ άέήίόύώ ΐΰ",
    "مرحبا بالعالم ١٢٣ كتاب",
    "שלום עולם ספר",
    "नमस्ते दुनिया हिन्दी ०१२३",
    "สวัสดีชาวโลก ภาษาไทย",
    "កាន់តែពិសេសអាចខលចេញ",
    "안녕하세요 세계 한국어 ㄱㄴㄷ",
    "こんにちは世界 カタカナ ひらがな ｶﾀｶﾅ",
    "我想在apple工作1314151天～ 中文测试，标点。「引号」",
    "𠀀𠀁 𪚥 CJK ext-B",
    "ḀḁẞỳỹỸ ǄǅǆǇ ĳ ﬁﬂ",
    "Ⅷ ⅷ ½ ¾ ² ³ ① ⑩ ٣ ۴ ５ ６",
]
EMOJI = ["🦙", "🚀", "😶‍🌫️", "✅", "👍🏽", "👨‍👩‍👧‍👦", "🇫🇷", "🇯🇵", "❤️", "🏳️‍🌈", "😁", "🤖",
         "🫠", "⌚", "☕", "🧑🏿‍💻", "1️⃣", "#️⃣", "©", "™"]
CODE = [
    "int main(void) {\n    return 0;\n}\n",
    "def f(x):\n\treturn x**2 + 3*x - 1  # comment\n",
    "for (let i = 0; i < n; i++) { sum += a[i]; }",
    "    if (a && b || !c) { x <<= 2; y >>= 1; }",
    "SELECT * FROM users WHERE id = 42 AND name LIKE '%bob%';",
    "#include <stdio.h>\n#define MAX(a,b) ((a)>(b)?(a):(b))",
    "const f = async () => await fetch(`/api/${id}`);",
    "x = {'a': [1, 2, 3], \"b\": None}\nprint(x['a'][-1])",
    "fn main() -> Result<(), Box<dyn Error>> { Ok(()) }",
    "<div class=\"row\"><p>Hi &amp; bye</p></div>",
    "$ ls -la | grep '^d' > out.txt 2>&1",
    "a+=1;b-=2;c*=3;d/=4;e%=5;f^=6;g|=7;h&=8;i~=9",
    "\\begin{equation} e^{i\\pi} + 1 = 0 \\end{equation}",
]
UNUSUAL = ["e\u0301", "a\u0308\u0323", "\u200b", "\u200d", "\u200e", "\u202e", "\ufeff", "\ue000",
           "\U000f0000", "\u00ad", "\u0085", "\u0000a"[1:], "\u001f", "\u007f", "\uff01\uff1f",
           "\u2026", "\u2014", "\u2018quoted\u2019", "\u201cdq\u201d", "\u00b5", "\u212a", "\u2126",
           "\u0345", "\u1fbe", "\u0390", "\ufffd", "\u0660\u0661", "\u3007", "\u4e00\u9fa5"]
SPECIALS = ["<|im_start|>", "<|im_end|>", "<|endoftext|>", "<s>", "</s>", "<unk>", "<|user|>",
            "<|end|>", "<|assistant|>", "<|begin_of_text|>", "<|eot_id|>", "[PAD151646]",
            "<｜begin▁of▁sentence｜>", "õ", "÷", "Á", "<|system|>", "<0x0A>"]
PUNCT = list("!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~") + ["...", "!!!", "?!", "--", "—", "«»", "‹›", "¿¡"]


def number(r):
    k = r.choice([1, 2, 3, 4, 5, 7, 9, 12, 20])
    s = "".join(r.choice("0123456789") for _ in range(k))
    return r.choice([s, s + "." + s[:2], "-" + s, s + "%", "$" + s, s + "e-5", "0x" + s, s + ",000"])


def piece(r):
    f = r.random()
    if f < 0.25:
        return r.choice(WORDS)
    if f < 0.35:
        return r.choice(WS)
    if f < 0.45:
        return number(r)
    if f < 0.55:
        s = r.choice(SCRIPTS)
        a = r.randrange(len(s))
        return s[a:a + r.randint(1, 12)]
    if f < 0.62:
        return r.choice(EMOJI)
    if f < 0.70:
        return r.choice(PUNCT)
    if f < 0.78:
        return r.choice(UNUSUAL)
    if f < 0.83:
        return r.choice(SPECIALS)
    if f < 0.92:
        c = r.choice(CODE)
        a = r.randrange(len(c))
        return c[a:a + r.randint(1, 30)]
    return "'" + r.choice(["s", "t", "re", "ve", "m", "ll", "d", "S", "T", "RE", "Ll", "D", "x"])


def main():
    count = int(sys.argv[1]) if len(sys.argv) > 1 else 3000
    seed = int(sys.argv[2]) if len(sys.argv) > 2 else 1234
    r = random.Random(seed)
    out = []
    # fixed families first
    for n in range(1, 40):
        out.append(" " * n)
        out.append("\n" * (n % 7 + 1) + " " * (n % 5) + "x")
        out.append("\t" * (n % 4) + " " * n + "word" + " " * (n % 3))
    for n in range(1, 25):
        out.append("7" * n)
        out.append("1" + "0" * n)
        out.append("x" + "3" * n + "y")
    out += SCRIPTS + CODE + EMOJI + UNUSUAL + SPECIALS
    out.append("".join(EMOJI))
    out.append(" ".join(SPECIALS))
    # long runs and codepoints newer than Unicode 15 (the tables here are 15.0)
    out += [" " * 300 + "x", "\n" * 100, "9" * 200, "\u4e2d\u6587" * 300, "ab" * 500,
            "\t \n" * 80, "x" + "\u0301" * 50, "\U0001f999" * 60, "'s" * 100,
            "\u1c89\u1c8a", "\U00010d40\U00010d41", "\U0001cc00", "\u0897", "\U0002ebf0",
            "\U000e0001\U000e0041", "\ud7ff\ue000\uf8ff\ufffd\uffff"]
    while len(out) < count - 50:
        k = r.choice([1, 2, 3, 4, 6, 10, 20, 40])
        s = "".join(piece(r) for _ in range(k))
        if r.random() < 0.3:
            s = r.choice(WS) + s
        if r.random() < 0.3:
            s = s + r.choice(WS)
        out.append(s)
    # a few long mixed strings
    while len(out) < count:
        out.append("".join(piece(r) for _ in range(300)))
    json.dump(out[:count], sys.stdout, ensure_ascii=False)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
