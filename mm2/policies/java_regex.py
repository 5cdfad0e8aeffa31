"""Java regex (java.util.regex.Pattern) to Python `re`: translate the syntax that differs."""

from __future__ import annotations

import re

__all__ = ["JavaRegexError", "compile_java", "translate"]

# POSIX-style classes, ASCII as in Java without UNICODE_CHARACTER_CLASS: the body of a [...] set.
_POSIX: dict[str, str] = {
    "Lower": "a-z",
    "Upper": "A-Z",
    "ASCII": "\\x00-\\x7f",
    "Alpha": "a-zA-Z",
    "Digit": "0-9",
    "Alnum": "a-zA-Z0-9",
    "Punct": "!-/:-@\\[-`{-~",
    "Graph": "!-~",
    "Print": " -~",
    "Blank": " \\t",
    "Cntrl": "\\x00-\\x1f\\x7f",
    "XDigit": "0-9a-fA-F",
    "Space": " \\t\\n\\x0b\\f\\r",
    "javaLowerCase": "a-z",
    "javaUpperCase": "A-Z",
    "javaWhitespace": " \\t\\n\\x0b\\f\\r\\x1c-\\x1f",
}
_ESCAPE_SETS: dict[str, str] = {
    "h": " \\t\\xa0\\u1680\\u180e\\u2000-\\u200a\\u202f\\u205f\\u3000",
    "v": "\\n\\x0b\\f\\r\\x85\\u2028\\u2029",
}
_FLAGS_KEPT = set("imsx")
_FLAGS_DROPPED = set("duU")  # UNIX_LINES, UNICODE_CASE, UNICODE_CHARACTER_CLASS: no Python twin
_QUANT = re.compile(r"\{(\d+)(,(\d*))?\}")


class JavaRegexError(ValueError):
    """The pattern is not a valid Java regex, or uses Java syntax Python cannot express."""


def _set_body(name: str, pattern: str) -> str:
    key = name[2:] if name.startswith("Is") and name[2:] in _POSIX else name
    if key not in _POSIX:
        known = ", ".join(sorted(_POSIX))
        raise JavaRegexError(
            f"unsupported character class \\p{{{name}}} in {pattern!r} (known: {known})"
        )
    return _POSIX[key]


def translate(pattern: str) -> str:
    """Rewrite a Java regex as an equivalent Python regex (to be compiled with re.ASCII)."""
    out: list[str] = []
    i, n = 0, len(pattern)
    in_class = 0  # depth of [...] nesting; Java allows unions like [a[b]]
    # per open group, the inline-flag scopes opened in it: Java's (?i) runs to the group's end,
    # across `|`, while Python only allows scoped flags mid-pattern, so we close and reopen them.
    scopes: list[list[str]] = [[]]
    while i < n:
        c = pattern[i]
        if c == "\\":
            if i + 1 >= n:
                raise JavaRegexError(f"unexpected trailing backslash in {pattern!r}")
            d = pattern[i + 1]
            if d == "Q":
                end = pattern.find("\\E", i + 2)
                end = n if end < 0 else end
                out.append(re.escape(pattern[i + 2 : end]))
                i = end + 2
                continue
            if d in "pP":
                m = re.match(r"\{(\w+)\}|([A-Za-z])", pattern[i + 2 :])
                if not m:
                    raise JavaRegexError(f"malformed \\{d} class in {pattern!r}")
                body = _set_body(m.group(1) or m.group(2), pattern)
                i += 2 + m.end()
                if in_class:
                    if d == "P":
                        msg = f"\\P{{..}} inside [...] is not supported: {pattern!r}"
                        raise JavaRegexError(msg)
                    out.append(body)
                else:
                    out.append(f"[{'^' if d == 'P' else ''}{body}]")
                continue
            if d in "hHvV":
                body = _ESCAPE_SETS[d.lower()]
                if in_class and d.isupper():
                    raise JavaRegexError(f"\\{d} inside [...] is not supported: {pattern!r}")
                neg = "^" if d.isupper() else ""
                out.append(body if in_class else f"[{neg}{body}]")
                i += 2
                continue
            if d == "z":
                out.append("\\Z")
            elif d == "Z":
                out.append("(?=\\n?\\Z)")
            elif d == "e":
                out.append("\\x1b")
            elif d == "c" and i + 2 < n:
                out.append(f"\\x{ord(pattern[i + 2]) ^ 64:02x}")
                i += 3
                continue
            elif d == "0":
                m = re.match(r"[0-3]?[0-7]{1,2}", pattern[i + 2 :])
                if not m:
                    raise JavaRegexError(f"illegal octal escape in {pattern!r}")
                out.append(f"\\x{int(m.group(0), 8):02x}")
                i += 2 + m.end()
                continue
            elif d == "x" and pattern.startswith("{", i + 2):
                end = pattern.find("}", i + 3)
                if end < 0:
                    raise JavaRegexError(f"unclosed \\x{{ in {pattern!r}")
                out.append(f"\\U{int(pattern[i + 3 : end], 16):08x}")
                i = end + 1
                continue
            elif d == "k" and pattern.startswith("<", i + 2):
                end = pattern.find(">", i + 3)
                out.append(f"(?P={pattern[i + 3 : end]})")
                i = end + 1
                continue
            elif d in "GRXN" or (d == "b" and pattern.startswith("{", i + 2)):
                raise JavaRegexError(f"\\{d} is not supported: {pattern!r}")
            elif in_class and d in "-&~|[]":
                out.append("\\" + d)
            else:
                out.append(pattern[i : i + 2])
            i += 2
            continue
        if in_class:
            if c == "[":
                if pattern.startswith("[^", i):
                    raise JavaRegexError(f"negated nested class is not supported: {pattern!r}")
                in_class += 1  # a union: flatten into the enclosing set
                i += 1
                continue
            if c == "]" and not (out and out[-1] in ("[", "[^")):
                in_class -= 1
                if in_class:
                    i += 1
                    continue
                out.append("]")
            elif pattern.startswith("&&", i):
                raise JavaRegexError(f"class intersection (&&) is not supported: {pattern!r}")
            elif c in "&~|":
                out.append("\\" + c)
            else:
                out.append(c)
            i += 1
            continue
        if c == "[":
            in_class = 1
            if pattern.startswith("[^", i):
                out.append("[^")
                i += 2
            else:
                out.append("[")
                i += 1
            if i < n and pattern[i] == "]":
                out.append("\\]")  # Java, like Python, takes a leading ] literally
                i += 1
            continue
        if c == "(":
            m = re.match(r"\(\?([a-zA-Z]*)(?:-([a-zA-Z]*))?\)", pattern[i:])
            if m:
                on, off = m.group(1), m.group(2) or ""
                bad = set(on + off) - _FLAGS_KEPT - _FLAGS_DROPPED
                if bad:
                    flags = "".join(sorted(bad))
                    raise JavaRegexError(f"unknown inline flag {flags!r} in {pattern!r}")
                on = "".join(f for f in on if f in _FLAGS_KEPT)
                off = "".join(f for f in off if f in _FLAGS_KEPT)
                if on or off:
                    opener = f"(?{on}{'-' + off if off else ''}:"
                    out.append(opener)
                    scopes[-1].append(opener)
                i += m.end()
                continue
            if pattern.startswith("(?<", i) and not pattern.startswith(("(?<=", "(?<!"), i):
                out.append("(?P<")
                i += 3
            else:
                out.append(c)
                i += 1
            scopes.append([])
            continue
        if c == "|":
            out.append(")" * len(scopes[-1]) + "|" + "".join(scopes[-1]))
            i += 1
            continue
        if c == ")":
            if len(scopes) == 1:
                raise JavaRegexError(f"unmatched closing ')' in {pattern!r}")
            out.append(")" * len(scopes.pop()) + ")")
            i += 1
            continue
        if c == "{":
            m = _QUANT.match(pattern, i)
            if not m or not out:
                raise JavaRegexError(f"illegal repetition near index {i} in {pattern!r}")
            out.append(m.group(0))
            i = m.end()
            continue
        out.append(c)
        i += 1
    if in_class:
        raise JavaRegexError(f"unclosed character class in {pattern!r}")
    if len(scopes) > 1:
        raise JavaRegexError(f"unclosed group in {pattern!r}")
    out.append(")" * len(scopes[0]))
    return "".join(out)


def compile_java(pattern: str) -> re.Pattern[str]:
    """Compile a Java regex for Python; match it with `fullmatch` as Java's `matches()` does."""
    try:
        return re.compile(translate(pattern), re.ASCII)
    except re.error as exc:
        raise JavaRegexError(f"invalid regex {pattern!r}: {exc.msg}") from None
