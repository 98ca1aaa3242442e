#!/usr/bin/env python3
"""Checks the documentation against the tree (a CI stage):

  * every option of src/config/options.c's table and of etc/rmqns.conf
    appears in docs/configuration.md (as `name`), and its option table is
    the one options.c makes (names, defaults, meanings);
  * every relative link of every git-tracked *.md resolves: the file, and
    the #anchor when the target is a Markdown file (GitHub's heading ids);
  * no build or run leftovers are tracked (pid files, logs, core dumps).

Exit 0 when all hold, 1 with one line per problem otherwise.

  tools/docs-check.py                    check
  tools/docs-check.py --write-options    rewrite the option table of
                                         docs/configuration.md from options.c
"""
import os
import re
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
OPTIONS_C = "src/config/options.c"
CONF = "etc/rmqns.conf"
CONFIG_MD = "docs/configuration.md"
TABLE_BEGIN = "<!-- options: begin -->"
TABLE_END = "<!-- options: end -->"
LEFTOVER = re.compile(r"(^|/)([^/]+\.pid|[^/]+\.log|core|core\.[0-9]+|vgcore\.[0-9]+)$")


def read(path):
    with open(os.path.join(ROOT, path), encoding="utf-8") as f:
        return f.read()


def tracked(pattern=None):
    args = ["git", "-C", ROOT, "ls-files", "-z"] + ([pattern] if pattern else [])
    out = subprocess.run(args, check=True, capture_output=True).stdout.decode()
    return [p for p in out.split("\0") if p]


# ---- the options table of options.c ----

def c_strings(text):
    """The concatenated value of the C string literals in text."""
    return "".join(re.sub(r"\\(.)", r"\1", m) for m in re.findall(r'"((?:[^"\\]|\\.)*)"', text))


def split_top(text, sep=","):
    """text split at `sep` outside strings, parentheses and braces."""
    parts, depth, cur, quoted, i = [], 0, "", False, 0
    while i < len(text):
        ch = text[i]
        if quoted:
            cur += ch
            if ch == "\\":
                cur += text[i + 1]
                i += 1
            elif ch == '"':
                quoted = False
        elif ch == '"':
            quoted = True
            cur += ch
        elif ch in "({":
            depth += 1
            cur += ch
        elif ch in ")}":
            depth -= 1
            cur += ch
        elif ch == sep and depth == 0:
            parts.append(cur.strip())
            cur = ""
        else:
            cur += ch
        i += 1
    if cur.strip():
        parts.append(cur.strip())
    return parts


def options_from_c():
    """[(name, type, flags, default, choices, meaning)] in the table's order."""
    src = re.sub(r"/\*.*?\*/", "", read(OPTIONS_C), flags=re.S)
    choice_lists = {m.group(1): re.findall(r'"([^"]*)"', m.group(2))
                    for m in re.finditer(r"static const char \*const (\w+)\[\] = \{(.*?)\};", src, re.S)}
    m = re.search(r"options_table\[\] = \{(.*?)\n\};", src, re.S)
    if not m:
        sys.exit(f"docs-check: no options_table in {OPTIONS_C}")
    opts = []
    for entry in split_top(m.group(1)):
        if not entry.startswith("{"):
            continue
        f = split_top(entry.strip("{} \n\t"))
        if len(f) < 10 or not f[0].startswith('"'):
            sys.exit(f"docs-check: an entry of {OPTIONS_C} not understood: {entry[:80]}")
        default = None if f[4] == "NULL" else c_strings(f[4])
        choices = choice_lists.get(f[8]) if f[8] != "NULL" else None
        opts.append((c_strings(f[0]), f[1].replace("CONFIG_", ""), f[2], default, choices,
                     c_strings(",".join(f[9:]))))
    return opts


def options_from_conf():
    return re.findall(r"^#?([A-Za-z][A-Za-z0-9_.]*)=", read(CONF), re.M)


def options_table(opts):
    type_names = {"BOOL": "true/false", "I32": "integer", "I64": "integer", "STR": "text"}
    rows = ["| option | values | default | live | meaning |", "|---|---|---|---|---|"]
    for name, typ, flags, default, choices, meaning in opts:
        values = ", ".join(choices) if choices else type_names.get(typ, typ)
        if default is None:
            shown = "computed at start"
        elif default == "":
            shown = "empty"
        else:
            shown = f"`{default}`"
        live = "yes" if "CONFIG_LIVE" in flags else ""
        if "CONFIG_UNUSED" in flags:
            meaning += " (accepted for compatibility, no effect)"
        meaning = meaning.replace("|", "\\|")
        rows.append(f"| `{name}` | {values} | {shown} | {live} | {meaning} |")
    return "\n".join(rows)


def write_options():
    md = read(CONFIG_MD)
    if TABLE_BEGIN not in md or TABLE_END not in md:
        sys.exit(f"docs-check: {CONFIG_MD} has no {TABLE_BEGIN} ... {TABLE_END}")
    head, rest = md.split(TABLE_BEGIN, 1)
    tail = rest.split(TABLE_END, 1)[1]
    table = options_table(options_from_c())
    with open(os.path.join(ROOT, CONFIG_MD), "w", encoding="utf-8") as f:
        f.write(f"{head}{TABLE_BEGIN}\n{table}\n{TABLE_END}{tail}")


def check_options(problems):
    md = read(CONFIG_MD)
    table = md.split(TABLE_BEGIN, 1)[-1].split(TABLE_END, 1)[0].strip("\n")
    if table != options_table(options_from_c()):
        problems.append(f"{CONFIG_MD}: the option table differs from {OPTIONS_C} "
                        "(tools/docs-check.py --write-options rewrites it)")
    documented = set(re.findall(r"`([A-Za-z][A-Za-z0-9_.]*)`", md))
    for source, names in ((OPTIONS_C, [o[0] for o in options_from_c()]), (CONF, options_from_conf())):
        for name in names:
            if name not in documented:
                problems.append(f"{CONFIG_MD}: option {name} (in {source}) is not documented")


# ---- links ----

def prose_lines(text):
    """The lines outside fenced code blocks, with their numbers."""
    fence = None
    for n, line in enumerate(text.split("\n"), 1):
        m = re.match(r"^\s*(```+|~~~+)", line)
        if m:
            if fence is None:
                fence = m.group(1)[0] * 3
            elif line.strip().startswith(fence):
                fence = None
            continue
        if fence is None:
            yield n, line


def anchors(path, cache={}):
    """GitHub's ids for the headings of a Markdown file."""
    if path not in cache:
        ids, seen = set(), {}
        for _, line in prose_lines(read(path)):
            m = re.match(r"^#{1,6}\s+(.*?)\s*#*\s*$", line)
            if not m:
                continue
            title = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", m.group(1))
            slug = re.sub(r"[^\w\- ]", "", title.lower().replace("`", "")).replace(" ", "-")
            n = seen.get(slug, 0)
            seen[slug] = n + 1
            ids.add(slug if n == 0 else f"{slug}-{n}")
        ids.update(re.findall(r'<a (?:name|id)="([^"]+)"', read(path)))
        cache[path] = ids
    return cache[path]


LINK = re.compile(r"!?\[[^\]]*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")


def check_links(problems):
    for md in tracked("*.md"):
        for n, line in prose_lines(read(md)):
            line = re.sub(r"`[^`]*`", "", line)
            for target in LINK.findall(line):
                if re.match(r"^[a-z][a-z0-9+.-]*:", target, re.I):
                    continue  # http:, https:, mailto:
                file_part, _, anchor = target.partition("#")
                dest = os.path.normpath(os.path.join(os.path.dirname(md), file_part)) if file_part else md
                where = f"{md}:{n}: link {target}"
                if not os.path.exists(os.path.join(ROOT, dest)):
                    problems.append(f"{where}: no such file")
                elif anchor and dest.endswith(".md") and anchor.lower() not in anchors(dest):
                    problems.append(f"{where}: no heading #{anchor} in {dest}")


def check_leftovers(problems):
    for path in tracked():
        if LEFTOVER.search(path):
            problems.append(f"{path}: a build or run leftover is tracked (git rm it)")


def main():
    os.chdir(ROOT)
    if sys.argv[1:] == ["--write-options"]:
        write_options()
        return 0
    if sys.argv[1:]:
        print(__doc__.strip(), file=sys.stderr)
        return 2
    problems = []
    check_options(problems)
    check_links(problems)
    check_leftovers(problems)
    for p in problems:
        print(p)
    print(f"docs-check: {len(problems)} problem(s)" if problems else "docs-check: ok")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
