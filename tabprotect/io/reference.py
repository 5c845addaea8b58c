"""The generated part of docs/jobs.md: every job key (from :mod:`tabprotect.io.schema`)
and every output file (from :data:`tabprotect.io.results.OUTPUT_FILES`).

``python -m tabprotect.io.reference docs/jobs.md`` rewrites the part between the markers;
a test checks that the file and the code agree.
"""
from __future__ import annotations

import sys
from pathlib import Path

from tabprotect.io.results import OUTPUT_FILES
from tabprotect.io.schema import SECTIONS, Key, method_option_keys

BEGIN = "<!-- generated from tabprotect/io/schema.py: begin -->"
END = "<!-- generated from tabprotect/io/schema.py: end -->"


def _default_text(key: Key) -> str:
    if key.default is None:
        return ""
    if isinstance(key.default, bool):
        return "`true`" if key.default else "`false`"
    if isinstance(key.default, str):
        return f'`"{key.default}"`'
    return f"`{key.default!r}`" if not isinstance(key.default, float) else f"`{key.default:g}`"


def _key_table(keys) -> list[str]:
    lines = ["| key | type | default | range | what |", "|---|---|---|---|---|"]
    for key in keys:
        doc = " ".join(str(key.doc).split()).replace("|", "\\|")
        lines.append(f"| `{key.name}` | {key.type} | {_default_text(key)} | "
                     f"{key.range_text()} | {doc} |")
    return lines + [""]


def reference_markdown() -> str:
    """The key reference of docs/jobs.md: one table per section, then one per protection
    method for the options only that method takes."""
    from tabprotect.secondary import METHODS
    lines = []
    for section in SECTIONS.values():
        head = f"[{section.name}.NAME]" if section.shape == "named" else f"[{section.name}]"
        lines += [f"### `{head}`", "", section.doc[0].upper() + section.doc[1:] + ".", ""]
        lines += _key_table(section.keys)
    for method in sorted(METHODS):
        keys = method_option_keys(method)
        if keys:
            lines += [f"### `[protect]` with `method = \"{method}\"`", "",
                      f"Options of the {method} method; a key the chosen method does not "
                      f"take is an error.",
                      ""]
            lines += _key_table(keys[name] for name in sorted(keys))
    return "\n".join(lines).rstrip("\n") + "\n"


def outputs_markdown() -> str:
    """The one table of output file names, shared by every command and the service."""
    lines = ["### Output files", "", "| file | what |", "|---|---|"]
    lines += [f"| `{name}` | {what} |" for name, what in OUTPUT_FILES.values()]
    return "\n".join(lines) + "\n"


def generated() -> str:
    return outputs_markdown() + "\n" + reference_markdown()


def update_docs(path: str | Path) -> bool:
    """Rewrite the generated part of ``path``; True when it changed."""
    path = Path(path)
    text = path.read_text(encoding="utf-8")
    start, end = text.index(BEGIN) + len(BEGIN), text.index(END)
    new = text[:start] + "\n" + generated() + text[end:]
    if new != text:
        path.write_text(new, encoding="utf-8")
    return new != text


def generated_part(path: str | Path) -> str:
    """The generated part of a document as it stands."""
    text = Path(path).read_text(encoding="utf-8")
    return text[text.index(BEGIN) + len(BEGIN):text.index(END)].lstrip("\n")


if __name__ == "__main__":
    for doc in sys.argv[1:]:
        print(f"{doc}: {'updated' if update_docs(doc) else 'up to date'}")
