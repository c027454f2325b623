#!/usr/bin/env python3
"""Render one of our manual pages (docs/ninfer-*.md) as a man(7) page.

usage: md2man.py --version VERSION MARKDOWN OUT.1

The docs are the one source of the manual: this turns the small subset of Markdown they use
(a "# name(1)" title, "##" sections, "###"/"####" subsections, paragraphs, fenced code
blocks, "| a | b |" tables, "-"/"*" and "1." lists, `code`, **bold**, *italic*, [links](x))
into roff with the man macros, so `man ninfer-convert` shows the same text as the Markdown.
Anything else is kept as text, escaped, never dropped.  Only the standard library is used, so
the build needs nothing but Debian's python3.

The date in .TH comes from SOURCE_DATE_EPOCH when it is set (reproducible packages), else
today.
"""

import datetime
import os
import re
import sys


def roff_escape(text):
    """Escape text for roff: backslashes, hyphens of options, and non-ASCII characters.

    Non-ASCII characters become \\[uXXXX] so the page is plain ASCII: groff without -k (and
    mandoc) would otherwise warn about, or mangle, UTF-8 bytes."""
    out = []
    for ch in text:
        if ch == "\\":
            out.append("\\e")
        elif ch == "-":
            # \- is the minus/hyphen that survives copy and paste of options in UTF-8 terminals
            out.append("\\-")
        elif ord(ch) > 127:
            out.append("\\[u%04X]" % ord(ch))
        else:
            out.append(ch)
    return "".join(out)


INLINE = re.compile(r"`([^`]+)`|\*\*(.+?)\*\*|(?<![\w*])\*([^*\s][^*]*?)\*(?![\w*])|\[([^\]]+)\]\(([^)]+)\)")


def inline(text, font="R"):
    """Markdown inline markup to roff font changes: `code` and **bold** bold, *x* italic,
    [text](target) as its text (the targets are repository paths, meaningless in man).
    font is the font to return to after a change (markup inside **bold** returns to bold)."""
    out = []
    pos = 0
    for m in INLINE.finditer(text):
        out.append(roff_escape(text[pos:m.start()]))
        if m.group(1) is not None:
            out.append("\\fB" + roff_escape(m.group(1)) + "\\f" + font)
        elif m.group(2) is not None:
            out.append("\\fB" + inline(m.group(2), "B") + "\\f" + font)
        elif m.group(3) is not None:
            out.append("\\fI" + inline(m.group(3), "I") + "\\f" + font)
        else:
            out.append(inline(m.group(4), font))
        pos = m.end()
    out.append(roff_escape(text[pos:]))
    return "".join(out)


def text_line(s):
    """One line of filled text: a leading '.' or "'" would be read as a request."""
    s = s.strip()
    if s.startswith(".") or s.startswith("'"):
        s = "\\&" + s
    return s


def split_row(line):
    """Cells of a table row, splitting on '|' but not on '\\|' or a '|' inside `code`."""
    body = line.strip()
    if body.startswith("|"):
        body = body[1:]
    if body.endswith("|") and not body.endswith("\\|"):
        body = body[:-1]
    cells, cur, in_code, i = [], [], False, 0
    while i < len(body):
        c = body[i]
        if c == "\\" and i + 1 < len(body) and body[i + 1] == "|":
            cur.append("|")
            i += 2
            continue
        if c == "`":
            in_code = not in_code
        if c == "|" and not in_code:
            cells.append("".join(cur).strip())
            cur = []
        else:
            cur.append(c)
        i += 1
    cells.append("".join(cur).strip())
    return cells


class Writer:
    """Collects roff lines and keeps paragraph macros where man(7) wants them: none right after
    a heading, never two in a row (mandoc and groff -ww warn about both)."""

    def __init__(self):
        self.lines = []
        self.need_para = False
        self.after_heading = True

    def macro(self, m):
        self.lines.append(m)

    def heading(self, macro, title):
        self.lines.append('%s "%s"' % (macro, title.replace('"', "")))
        self.need_para = False
        self.after_heading = True

    def para_break(self):
        self.need_para = True

    def start_block(self, kind):
        """Before a paragraph ('P'), or a tagged/indented block that sets its own ('-')."""
        if kind == "P" and self.need_para and not self.after_heading:
            self.lines.append(".PP")
        self.need_para = False
        self.after_heading = False

    def text(self, s):
        if s.strip():
            self.lines.append(text_line(s))


def convert(md, version):
    lines = md.split("\n")
    w = Writer()
    title = None
    i = 0
    n = len(lines)
    section = ""
    while i < n:
        line = lines[i]
        if line.startswith("```"):
            # set apart from the text before it, except right under a heading
            heading = w.after_heading
            w.start_block("P")
            if not heading and w.lines[-1] != ".PP":
                w.macro(".PP")
            w.macro(".RS 4")
            w.macro(".nf")
            i += 1
            while i < n and not lines[i].startswith("```"):
                code = roff_escape(lines[i].replace("\t", "    "))
                if code.startswith(".") or code.startswith("'"):
                    code = "\\&" + code
                w.macro(code)
                i += 1
            w.macro(".fi")
            w.macro(".RE")
            w.para_break()
            i += 1
            continue
        m = re.match(r"^(#{1,6})\s+(.*)$", line)
        if m:
            level, head = len(m.group(1)), m.group(2).strip()
            if level == 1:
                t = re.match(r"^`?([^`(]+)`?\((\d)\)$", head)
                title = (t.group(1), t.group(2)) if t else (head, "1")
            elif level == 2:
                section = head.upper()
                w.heading(".SH", section)
            else:
                w.heading(".SS", re.sub(r"[`*]", "", head))
            i += 1
            continue
        if not line.strip():
            w.para_break()
            i += 1
            continue
        if section == "NAME":
            # "`prog` — what it does" is the NAME line man(7) and whatis expect: "prog \- what"
            name = re.sub(r"\s+[\u2014\u2013-]+\s+", " -- ", line.strip(), count=1)
            prog, _, what = name.partition(" -- ")
            w.start_block("-")
            w.text(roff_escape(prog.replace("`", "")) + " \\- " + inline(what))
            i += 1
            continue
        if line.lstrip().startswith("|"):
            rows = []
            while i < n and lines[i].lstrip().startswith("|"):
                rows.append(split_row(lines[i]))
                i += 1
            # header row, then the |---|---| rule, then the body rows
            body = [r for r in rows[1:] if not all(re.fullmatch(r":?-+:?", c or "-") for c in r)]
            w.start_block("-")
            for r in body:
                w.macro(".TP")
                w.text(inline(r[0]))
                w.text(inline(" ".join(c for c in r[1:] if c)))
            w.para_break()
            continue
        m = re.match(r"^(\s*)([-*]|\d+\.)\s+(.*)$", line)
        if m:
            bullet = m.group(2)
            tag = "\\(bu" if bullet in "-*" else bullet
            w.start_block("-")
            w.macro('.IP "%s" 4' % tag)
            w.text(inline(m.group(3)))
            i += 1
            # continuation lines of the item: indented, or plain text until a blank line
            while i < n and lines[i].strip() and not re.match(r"^\s*([-*]|\d+\.)\s+", lines[i]) \
                    and not lines[i].startswith("```") and not lines[i].lstrip().startswith("|") \
                    and not lines[i].startswith("#"):
                w.text(inline(lines[i]))
                i += 1
            continue
        if line.startswith("   ") and w.lines and (w.lines[-1].startswith(".IP") or w.need_para) \
                and any(l.startswith(".IP") for l in w.lines[-40:]):
            # an indented paragraph after a list item continues that item
            w.start_block("-")
            w.macro('.IP "" 4')
            while i < n and lines[i].strip() and not lines[i].startswith("```"):
                w.text(inline(lines[i]))
                i += 1
            continue
        # a plain paragraph
        w.start_block("P")
        while i < n and lines[i].strip() and not lines[i].startswith("```") \
                and not re.match(r"^#{1,6}\s", lines[i]) and not lines[i].lstrip().startswith("|") \
                and not re.match(r"^\s*([-*]|\d+\.)\s+", lines[i]):
            w.text(inline(lines[i]))
            i += 1
    if title is None:
        raise ValueError("no '# name(1)' title line")
    epoch = os.environ.get("SOURCE_DATE_EPOCH")
    when = datetime.datetime.fromtimestamp(int(epoch), datetime.timezone.utc) if epoch \
        else datetime.datetime.now(datetime.timezone.utc)
    head = ['.\\" Generated from docs/%s by scripts/md2man.py; edit the Markdown, not this file.' % (title[0] + ".md"),
            '.TH "%s" "%s" "%s" "ninfer-tools %s" "User Commands"'
            % (title[0].upper(), title[1], when.strftime("%Y-%m-%d"), version)]
    return "\n".join(head + w.lines) + "\n"


def main(argv):
    if len(argv) != 5 or argv[1] != "--version":
        sys.stderr.write("usage: md2man.py --version VERSION MARKDOWN OUT.1\n")
        return 2
    version, src, dst = argv[2], argv[3], argv[4]
    try:
        with open(src, encoding="utf-8") as f:
            md = f.read()
        page = convert(md, version)
    except (OSError, UnicodeDecodeError, ValueError) as e:
        sys.stderr.write("md2man.py: %s: %s\n" % (src, e))
        return 1
    # written under a temp name and renamed, so an interrupted build never leaves half a page
    tmp = dst + ".tmp"
    try:
        with open(tmp, "w", encoding="ascii") as f:
            f.write(page)
        os.replace(tmp, dst)
    except OSError as e:
        sys.stderr.write("md2man.py: %s: %s\n" % (dst, e))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
