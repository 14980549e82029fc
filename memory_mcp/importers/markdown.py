"""A folder of plain Markdown notes (or one note): each file becomes one memory (type knowledge).

Title: the frontmatter `title`, else the `# heading` the note opens with, else the file name. Body: the
rest of the note, verbatim. `tags` (and `aliases`) become entities; any other frontmatter field is kept
as one `Properties:` line at the end of the body, so nothing is lost.
"""

from __future__ import annotations

from pathlib import Path

from .notes import as_list, properties_line, readable_notes, title_and_body
from .records import Draft, Parsed

FORMAT = "markdown"


def parse(path: Path) -> Parsed:
    out = Parsed()
    for note in readable_notes(path, out, "files"):
        name = note.name
        title, body = title_and_body(note)
        if not body and not note.content.strip() and not note.meta:
            out.skip(name, "empty note")
            continue
        props = properties_line(note.meta, {"title", "tags", "aliases"})
        body = "\n\n".join(p for p in (body, props) if p)
        entities = tuple(dict.fromkeys(as_list(note.meta.get("tags")) + as_list(note.meta.get("aliases"))))
        out.drafts.append(Draft(title, body, "knowledge", f"{FORMAT} import: {name}", entities, key=name))
    return out
