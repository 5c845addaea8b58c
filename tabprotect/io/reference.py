"""The generated part of docs/jobs.md: every job key (from :mod:`tabprotect.io.schema`)
and every output file (from :data:`tabprotect.io.results.OUTPUT_FILES`).

``python -m tabprotect.io.reference docs/jobs.md`` rewrites the part between the markers;
a test checks that the file and the code agree.
"""
from __future__ import annotations

import sys
from pathlib import Path

from tabprotect.io.results import OUTPUT_FILES
from tabprotect.io.schema import reference_markdown

BEGIN = "<!-- generated from tabprotect/io/schema.py: begin -->"
END = "<!-- generated from tabprotect/io/schema.py: end -->"


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
