#!/usr/bin/env python3
"""Writes python_answers.json: what CPython's `re`, the `regex` module and the string tests engines
use answer for real and constructed patterns. tests/base/pyregex_test.cc and
tests/ir/matcher_test.cc read the JSON; they never run Python.

Run from anywhere:  python3 tests/data/patterns/generate.py
Needs CPython 3.11 (the version engines run; `re` syntax changed in 3.11 and again in 3.13) and the
`regex` package (pip install regex).

Patterns come from three places, each entry saying which:
  * the configs under tests/data/corpus and the engine oracle cases under tests/data/oracle/cases
    (compressed-tensors "re:" targets, GPTQ "dynamic" keys with "+:"/"-:" stripped, ModelOpt and
    gpt-oss wildcard module lists, bitsandbytes skip lists);
  * CURATED_REGEX / CURATED_MATCHERS below: Python syntax that needs mapping to PCRE2, and patterns
    Python rejects.
"""

import fnmatch
import json
import pathlib
import platform
import re
import sys
import warnings

import regex

HERE = pathlib.Path(__file__).resolve().parent
DATA = HERE.parent

# Layer paths the regex patterns are tried on: real module names of Llama, DeepSeek-V3 (MLA, MoE,
# MTP layer 61), Qwen3.6 (linear attention, mtp), Qwen-VL, GPT-2-style and vision towers, plus the
# edge cases the Python semantics hinge on (trailing newline for `$`, empty, upper case, non-ASCII).
SUBJECTS = [
    "model.layers.0.self_attn.q_proj",
    "model.layers.0.self_attn.k_proj",
    "model.layers.0.self_attn.v_proj",
    "model.layers.0.self_attn.o_proj",
    "model.layers.0.self_attn.qkv_proj",
    "model.layers.0.mlp.gate_proj",
    "model.layers.0.mlp.up_proj",
    "model.layers.0.mlp.down_proj",
    "model.layers.0.mlp.gate_up_proj",
    "model.layers.1.mlp.gate",
    "model.layers.1.mlp.router",
    "model.layers.3.mlp.experts.7.down_proj",
    "model.layers.3.mlp.shared_experts.gate_proj",
    "model.layers.12.self_attn.kv_a_proj_with_mqa",
    "model.layers.15.mlp.down_proj",
    "model.layers.16.self_attn.o_proj",
    "model.layers.20.mlp.experts.0.up_proj",
    "model.layers.29.mlp.down_proj",
    "model.layers.61.self_attn.q_a_proj",
    "model.layers.61.eh_proj",
    "model.layers.0.conv1d",
    "mtp.layers.0.mlp.down_proj",
    "mtp.fc",
    "model.language_model.layers.34.linear_attn.in_proj_b",
    "model.visual.blocks.0.attn.qkv",
    "model.visual.merger.mlp.0",
    "transformer.h.3.attn.c_attn",
    "lm_head",
    "model.embed_tokens",
    "model.layers.0.self_attn.o_proj\n",
    "MODEL.LAYERS.0.MLP.GATE",
    "model.layers.é.mlp",
    "",
]

# (pattern, why it is here, extra subjects). Flavours: both `re` and `regex` answers are recorded.
CURATED_REGEX = [
    # Python spellings that PCRE2 writes differently.
    (r".*proj\Z", r"\Z is PCRE2's \z: no match before a trailing newline", []),
    (r".*proj$", "$ also matches before a trailing newline", ["q_proj\n\n"]),
    (r".*proj\z", r"\z: invalid in re, end of string in the regex module", []),
    (r"model\.layers\.\d{,2}\.mlp", "{,n} is {0,n}", ["model.layers..mlp", "model.layers.123.mlp"]),
    (r"model\.layers\.\d{1,}\.", "{m,} open repeat", []),
    (r"model\.layers\.\d{}", "{} is literal", ["model.layers.0{}"]),
    (r"model\.layers\.\d{1,x}", "an unfinished {…} is literal", ["model.layers.0{1,x}"]),
    (r"(?P<blk>layers)\.\d+\.(?P=blk)?", "named group and (?P=name) back-reference", []),
    (r"(?P<n>\w+)\.(?P=n)", "back-reference to a named group", ["mlp.mlp", "a.b"]),
    (r"(\w+)\.\1\.", "numbered back-reference", ["mlp.mlp.x"]),
    (r"(?<blk>model)\.layers", "(?<name>…): invalid in re, a named group in the regex module", []),
    (r"^(?!.*experts).*$", "look-ahead from a real compressed-tensors ignore list", []),
    (r".*(?<=self_attn)\.o_proj", "fixed-width look-behind", []),
    (r".*(?<!shared_)experts\.\d+\..*", "negative look-behind", []),
    (r".*(?<=attn|mlp)\..*", "alternatives of different widths in look-behind", []),
    (r"model\.layers\.(?>\d+)\.mlp", "atomic group (3.11)", []),
    (r".*\d++\.mlp", "possessive quantifier (3.11)", []),
    (r"(?:(a)*+)?^\1", "captures inside a possessive repeat are reset on backtracking", ["a", ""]),
    (r"(?i)MODEL\.LAYERS", "global case-insensitive flag", []),
    (r"model\.(?i:LAYERS)\.0", "scoped flag", []),
    (r"model(?i)\.LAYERS", "global flag not at the start: re rejects, regex applies it onward", []),
    (r"(?s).*", "DOTALL", []),
    (r".*", "dot excludes newline", ["a\nb"]),
    (r"(?m)^mlp$", "MULTILINE", ["x\nmlp\ny", "mlp\n"]),
    (r"(?x) model \. layers  # verbose comment", "VERBOSE", []),
    (r"\Amodel", r"\A", []),
    (r".*\bgate\b.*", r"\b word boundary", []),
    (r".*\Bproj", r"\B", []),
    (r"\B", r"\B on the empty string: no match in CPython 3.11, a match in the regex module", []),
    (r"\s", r"\s is str.isspace(): U+001C..U+001F included", ["\x1c", "\u180e", "\u3000", " "]),
    (r"\w+", r"\w is Unicode", ["é", "_", "٣", "-"]),
    (r"\d", r"\d is Unicode Nd", ["٣", "²"]),
    (r"(?a)\w+", "ASCII flag", ["é"]),
    (r"(?i)i", "Turkish dotted and dotless I fold with i in CPython", ["İ", "ı", "I"]),
    (r"(?i)k", "Kelvin sign folds with k", ["K", "K"]),
    (r"(?ai)k", "ASCII folding only", ["K", "K"]),
    # The shapes the importers build, and the edges of their items (newlines for `.` and `$`,
    # dots for `[^.]`).
    (r"(?!(?:.*\.)?(?:qkv_proj|gate_up_proj)$)(?:.*\.)?model\.layers\.0\.self_attn(?:\..*)?",
     "SGLang is_layer_skipped: whole dotted segments, fused names excluded",
     ["x.model.layers.0.self_attn", "model.layers.0.self_attn.qkv_proj\n", "a\nmodel.layers.0.self_attn",
      "model.layers.0.self_attnx", "model.layers.0.self_attn.\n"]),
    (r"(?:.*\.)?[^.]*kv_a_proj[^.]*", "the last dotted part contains a word",
     ["kv_a_proj", "a.kv_a_proj\nb", "x.kv_a_proj.y", "\nkv_a_proj"]),
    (r"(?:language_model\.)?(?:model\.layers\.0\..*)", "optional literal prefix, then a run",
     ["language_model.model.layers.0.\n", "language_model.model.layers.1.x"]),
    (r"model\.layers\.(?:1|12|3)\.mlp\..*", "alternatives of literals",
     ["model.layers.12.mlp.", "model.layers.13.mlp.x"]),
    (r"(?:language_model\.)?(?:model\.norm)", "a few whole names: an optional literal prefix",
     ["model.norm", "language_model.model.norm", "language_model.model.normx", "xmodel.norm",
      "model.norm\n", "language_model."]),
    (r"model\.layers\.0\.(?:q|kv_a|)_proj(?:\.weight)?", "a few whole names: alternatives",
     ["model.layers.0.q_proj", "model.layers.0.kv_a_proj.weight", "model.layers.0._proj",
      "model.layers.0.k_proj", "model.layers.0.q_proj.weight\n", "model.layers.0.q_proj.weigh"]),
    (r"model\.layers\.0\.(?:q)??_proj", "a lazy optional group: no whole-name screen",
     ["model.layers.0.q_proj", "model.layers.0._proj"]),
    (r"(lm_head|.*embed.*)$", "a capturing group with a run, `$` at the end", ["lm_head\n", "embed\n\n"]),
    (r"(?=.*mlp)model\..*", "positive look-ahead", []),
    (r"^(?:)a?", "empty group, then an optional literal", ["a", "b"]),
    (r"(?:(?:.*\.)?(?:.*\.)?)*x", "a repeated group of optional groups", ["a.b.x", "x", "a\n.x"]),
    (r"(?:[^.]*\.)*(?:lm_head)(?:\.[^.]*)*", "SGLang: one whole dotted part", ["a.lm_head.b\n.c", "lm_headx"]),
    (r"...\.[^.][^.]", "single `.` and `[^.]` items", ["abc.de", "ab\n.de", "abc..e", "abc.d\n"]),
    (r"a\\b\-c\ d#", "escaped punctuation and plain space and #", ["a\\b-c d#"]),
    (r"[^.]+\.[^.]+", "negated set", []),
    (r"[\S]", r"\S in a set", ["\x1c", " "]),
    (r"[]a]", "a ']' first in a set is literal", ["]"]),
    (r"\x41\u00e9\U0001F600\101\0", "escapes: \\x \\u \\U octal", ["Aé😀A\0"]),
    (r"\ud800|x", "a lone surrogate literal never matches UTF-8 text", ["x"]),
    (r"a(?#comment)*", "a comment adds no item: the star repeats 'a'", ["aaa"]),
    (r"(a)?(?(1)b|c)", "conditional group", ["ab", "c", "ac"]),
    (r"(?:)*x", "repeat of an empty group", ["x"]),
    (r"a{0}b", "zero repeat", ["b", "ab"]),
    # Rejected by Python: each must be an error, never a silent miss.
    (r"(", "unbalanced parenthesis", []),
    (r")", "unbalanced parenthesis", []),
    (r"(a|b", "missing )", []),
    (r"*a", "nothing to repeat", []),
    (r"a**", "multiple repeat", []),
    (r"x{1,2}{3}", "multiple repeat", []),
    (r"^*", "nothing to repeat: an anchor (the regex module accepts it)", []),
    (r"a{2,1}", "min repeat greater than max", []),
    (r"\e", "bad escape", []),
    (r"\p{L}", "bad escape in re; a Unicode property in the regex module", []),
    (r"[a-", "unterminated set", []),
    (r"[z-a]", "bad character range", []),
    (r"[\d-z]", "bad character range", []),
    (r"\x4", "incomplete escape", []),
    (r"\400", "octal escape out of range", []),
    (r"\1", "invalid group reference", []),
    (r"(a)\2", "invalid group reference", []),
    (r"(a\1)", "reference to an open group", []),
    (r"(?P=x)", "unknown group name", []),
    (r"(?P<1>a)", "bad group name", []),
    (r"(?P<n>a)(?P<n>b)", "redefinition of a group name", []),
    (r"(?<=a+)b", "variable-width look-behind (the regex module accepts it)", []),
    (r"(?(2)a|b)", "condition on a missing group", []),
    (r"(?L)a", "LOCALE flag on a str pattern", []),
    (r"(?#unterminated", "unterminated comment", []),
    (r"(?Q)", "unknown extension", []),
    ("\\", "bad escape at the end", []),
    # Accepted by Python, but with no PCRE2 spelling: must be an error (kUnsupported).
    (r"\N{EM DASH}", "named character", ["\u2014"]),
    (r"a{70000}", "repeat count above PCRE2's 65535", []),
]

# Python accepts these but quantpath reports kUnsupported (never a different answer).
UNSUPPORTED = {
    ("re", r"\N{EM DASH}"), ("regex", r"\N{EM DASH}"),
    ("re", r"a{70000}"), ("regex", r"a{70000}"),
    ("regex", r".*(?<=attn|mlp)\..*"), ("regex", r"(?<=a+)b"),
    ("regex", r"\p{L}"), ("regex", r"(?L)a"), ("regex", r"[\d-z]"),
    ("regex", r"(?x) model \. layers  # verbose comment"),
    ("regex", r"(?P<n>a)(?P<n>b)"),
    # The regex module's own rules for optional or repeated groups that match empty, read back.
    ("regex", r"(?:(a)*+)?^\1"),
}

# Matchers other than regex: (kind, pattern, why). Class names come with each subject.
CURATED_MATCHERS = [
    ("exact", "lm_head", "transformers / vLLM ignore lists"),
    ("exact", "model.layers.0.self_attn.o_proj", "full path"),
    ("leading_path", "lm_head", "bitsandbytes skip: a component"),
    ("leading_path", "self_attn", "bitsandbytes skip: a component in the middle"),
    ("leading_path", "model.layers.0.self_attn", "bitsandbytes skip: a dotted prefix"),
    ("leading_path", "layers.0", "neither a component nor a prefix"),
    ("leading_path", "model.layers.1", "prefix ends at a component boundary (not model.layers.15)"),
    ("leading_path", "mlp.experts", "dotted but not a prefix"),
    ("dotted_suffix", "o_proj", "suffix at a component boundary"),
    ("dotted_suffix", "proj", "not at a boundary"),
    ("dotted_suffix", "self_attn.o_proj", "dotted suffix"),
    ("substring", "mlp.gate", "vLLM substring: also reaches mlp.gate_proj"),
    ("substring", "experts", "substring"),
    ("substring", "", "the empty string is in every path"),
    ("reverse_substring", "model.layers.0.self_attn.q_proj.weight", "path in entry"),
    ("reverse_substring", "lm_head.weight", "path in entry"),
    ("substring_ignore_case", "MLP.GATE", "case-insensitive substring"),
    ("regex_match", r".*\.layers\.(1[0-9]|2[0-9])\..*", "GPTQ dynamic key"),
    ("regex_match", r"model\.layers\.1", "re.match is anchored at the start only"),
    ("regex_fullmatch", r"model\.layers\.1", "re.fullmatch needs the whole path"),
    ("regex_fullmatch", r".*proj$", "fullmatch with $ and a trailing newline"),
    ("glob", "model.layers.*.self_attn*", "ModelOpt exclude: '*' crosses dots"),
    ("glob", "*mlp.gate", "ModelOpt exclude"),
    ("glob", "model.layers.?.mlp.*", "'?' is one character"),
    ("glob", "model.layers.[0-1].*", "a set"),
    ("glob", "model.layers.[!0].*", "a negated set"),
    ("glob", "model.layers.[z-a0].*", "an empty range is dropped"),
    ("glob", "model.layers.[0*", "'[' without ']' is literal"),
    ("glob", "lm_head", "no wildcard"),
    ("glob_any_segment", "*_proj", "any segment"),
    ("glob_any_segment", "expert?", "any segment, '?'"),
    ("glob_any_segment", "layers.*", "a dotted pattern never matches one segment"),
    ("class_name", "linear", "compressed-tensors class target, case-insensitive substring"),
    ("class_name", "RowParallel", "class substring"),
    ("class_name", "FusedMoE", "class substring"),
]

# Paths with the engine class vLLM gives them (tests/data/oracle/README.md defaults).
MATCHER_SUBJECTS = [
    ("model.layers.0.self_attn.q_proj", "ColumnParallelLinear"),
    ("model.layers.0.self_attn.qkv_proj", "QKVParallelLinear"),
    ("model.layers.0.self_attn.o_proj", "RowParallelLinear"),
    ("model.layers.0.mlp.gate_proj", "ColumnParallelLinear"),
    ("model.layers.0.mlp.gate_up_proj", "MergedColumnParallelLinear"),
    ("model.layers.0.mlp.down_proj", "RowParallelLinear"),
    ("model.layers.1.mlp.gate", "ReplicatedLinear"),
    ("model.layers.1.mlp.experts", "FusedMoE"),
    ("model.layers.3.mlp.experts.7.down_proj", "RowParallelLinear"),
    ("model.layers.15.self_attn.o_proj", "RowParallelLinear"),
    ("model.layers.1.self_attn.o_proj", "RowParallelLinear"),
    ("model.layers.20.mlp.down_proj", "RowParallelLinear"),
    ("model.layers.0.self_attn.o_proj\n", "RowParallelLinear"),
    ("model.visual.blocks.0.attn.qkv", "QKVParallelLinear"),
    ("lm_head", "ParallelLMHead"),
    ("lm_head.weight", "ParallelLMHead"),
    ("model.embed_tokens", "VocabParallelEmbedding"),
    ("MODEL.LAYERS.0.MLP.GATE", "ReplicatedLinear"),
    ("", ""),
]


def leading_path(path, entry):
    # vLLM / SGLang is_layer_skipped_bnb, for a one-entry list.
    components = path.split(".")
    prefixes = {".".join(components[: i + 1]) for i in range(len(components))}
    return entry in components or entry in prefixes


def matcher_hit(kind, pattern, path, cls):
    if kind == "exact":
        return path == pattern
    if kind == "leading_path":
        return leading_path(path, pattern)
    if kind == "dotted_suffix":
        return path == pattern or path.endswith("." + pattern)
    if kind == "substring":
        return pattern in path
    if kind == "reverse_substring":
        return path in pattern
    if kind == "substring_ignore_case":
        return pattern.lower() in path.lower()
    if kind == "regex_match":
        return re.match(pattern, path) is not None
    if kind == "regex_fullmatch":
        return re.fullmatch(pattern, path) is not None
    if kind == "glob":
        return fnmatch.fnmatch(path, pattern)
    if kind == "glob_any_segment":
        return any(fnmatch.fnmatch(s, pattern) for s in path.split("."))
    if kind == "class_name":
        return pattern.lower() in cls.lower()
    raise ValueError(kind)


def collect_corpus():
    """Patterns in the repository's copies of real configs and oracle cases."""
    regexes, globs, skips = {}, {}, {}

    def visit(node, source):
        if isinstance(node, dict):
            for key, value in node.items():
                if key == "dynamic" and isinstance(value, dict):
                    for k in value:
                        if k[:2] in ("+:", "-:"):
                            regexes.setdefault(k[2:], source + " (GPTQ dynamic " + k[:2] + ")")
                if key == "llm_int8_skip_modules" and isinstance(value, list):
                    for v in value:
                        skips.setdefault(v, source)
                if key in ("exclude_modules", "modules_to_not_convert") and isinstance(value, list):
                    for v in value:
                        if isinstance(v, str) and ("*" in v or "?" in v):
                            globs.setdefault(v, source)
                visit(value, source)
        elif isinstance(node, list):
            for v in node:
                visit(v, source)
        elif isinstance(node, str) and node.startswith("re:"):
            regexes.setdefault(node[3:], source + " (re: target)")

    for path in sorted((DATA / "corpus").rglob("*.json")) + sorted(
            (DATA / "oracle" / "cases").glob("*.json")):
        try:
            doc = json.loads(path.read_text())
        except ValueError:
            continue  # excerpts of rendered pages are not JSON
        visit(doc, str(path.relative_to(DATA)))
    return regexes, globs, skips


def answer(module, pattern, subjects):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            compiled = module.compile(pattern)
        except Exception as e:  # re.error, regex.error, OverflowError, ValueError
            return {"error": f"{type(e).__name__}: {e}"}
    return {
        "match": [s for s in subjects if compiled.match(s)],
        "fullmatch": [s for s in subjects if compiled.fullmatch(s)],
    }


def main():
    if sys.version_info[:2] != (3, 11):
        sys.exit("run with CPython 3.11: engines run it, and re's syntax differs in other versions")
    regexes, globs, skips = collect_corpus()
    entries = [(p, "corpus: " + src, []) for p, src in sorted(regexes.items())]
    entries += [(p, why, extra) for p, why, extra in CURATED_REGEX if p not in regexes]

    regex_cases = []
    for pattern, why, extra in entries:
        subjects = SUBJECTS + extra
        case = {"pattern": pattern, "why": why, "extra_subjects": extra}
        for flavor, module in (("re", re), ("regex", regex)):
            result = answer(module, pattern, subjects)
            if (flavor, pattern) in UNSUPPORTED:
                if "error" in result:
                    sys.exit(f"{flavor} rejects {pattern!r}; it cannot be listed as unsupported")
                result = {"unsupported": True, **result}
            case[flavor] = result
        regex_cases.append(case)

    matchers = [(k, p, why) for k, p, why in CURATED_MATCHERS]
    matchers += [("glob", p, "corpus: " + src) for p, src in sorted(globs.items())]
    matchers += [("leading_path", p, "corpus: " + src) for p, src in sorted(skips.items())]
    matcher_cases = []
    for kind, pattern, why in matchers:
        hits = [path for path, cls in MATCHER_SUBJECTS if matcher_hit(kind, pattern, path, cls)]
        matcher_cases.append({"kind": kind, "pattern": pattern, "why": why, "hits": hits})

    out = {
        "generated_by": "tests/data/patterns/generate.py",
        "python": platform.python_version(),
        "regex_module": regex.__version__,
        "subjects": SUBJECTS,
        "regex_cases": regex_cases,
        "matcher_subjects": [{"path": p, "class": c} for p, c in MATCHER_SUBJECTS],
        "matcher_cases": matcher_cases,
    }
    text = json.dumps(out, indent=1, ensure_ascii=False) + "\n"
    (HERE / "python_answers.json").write_text(text, encoding="utf-8")
    print(f"{len(regex_cases)} regex patterns, {len(matcher_cases)} matcher patterns")


if __name__ == "__main__":
    main()
