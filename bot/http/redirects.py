r"""Where a browser may be sent after signing in: only somewhere on this site (no open redirect).

A target is read as a browser reads a URL (the WHATWG URL standard), not as Python would: the
browser strips leading and trailing C0 controls and spaces, removes every tab and newline, and
treats a backslash as a slash in http(s) URLs. So `/\t/evil.example`, `/\\evil.example` or
`\\/evil.example` are `//evil.example` to it: another origin. Whatever is left must be a path
(one leading slash, never two, no control characters), and resolving it against this server's
origin must keep the origin; anything else becomes "/".
"""

from __future__ import annotations

from yarl import URL

#: What the URL parser strips from both ends: the C0 controls and space (U+0000 to U+0020).
C0_OR_SPACE = "".join(chr(c) for c in range(0x21))
#: What it removes anywhere in the input: ASCII tab and newlines.
TAB_OR_NEWLINE = str.maketrans("", "", "\t\n\r")
HOME = "/"


def browser_form(to: str) -> str:
    """`to` as the URL parser sees it before parsing (for an http(s) base URL)."""
    return to.strip(C0_OR_SPACE).translate(TAB_OR_NEWLINE).replace("\\", "/")


def same_origin_path(to: str, origin: URL) -> str:
    """`to`, cleaned as a browser would clean it, when it names a place on `origin`; else "/"."""
    seen = browser_form(to)
    if not seen.startswith("/") or seen.startswith("//"):
        return HOME  # a scheme (https:, javascript:), a host (//evil) or a relative path
    if any(ord(c) < 0x20 or ord(c) == 0x7F for c in seen):
        return HOME  # no address of ours holds a control character
    try:
        resolved = origin.join(URL(seen))
    except ValueError:  # yarl cannot read it: no place we can vouch for
        return HOME
    return seen if resolved.origin() == origin.origin() else HOME


__all__ = ["browser_form", "same_origin_path"]
