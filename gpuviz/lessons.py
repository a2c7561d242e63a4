"""Lesson texts: Markdown files in resources/lessons whose section headings end with
`{#anchor}`, the place a figure's Explain button opens. The pane shows a lesson's file
followed by its worked questions, made from resources/questions (`lesson_text`)."""

from __future__ import annotations

import re
from dataclasses import dataclass

from gpuviz import catalog, questions
from gpuviz.paths import resource

ANCHOR = re.compile(r"^(#{1,6})\s+(.*?)\s*\{#([\w-]+)\}\s*$", re.MULTILINE)


@dataclass(frozen=True)
class LessonText:
    markdown: str  # anchors removed, ready for QTextBrowser.setMarkdown
    headings: dict[str, str]  # anchor -> heading text as displayed


def load_lesson_text(file_name: str) -> LessonText:
    path = resource("lessons", file_name)
    try:
        raw = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as error:
        return LessonText(f"# Lesson text unavailable\n\n`{path}` could not be read: "
                          f"{error}.", {})
    headings = {m.group(3): m.group(2) for m in ANCHOR.finditer(raw)}
    return LessonText(ANCHOR.sub(lambda m: f"{m.group(1)} {m.group(2)}", raw), headings)


def lesson_text(lesson: catalog.Lesson) -> LessonText:
    """What the lesson pane shows: the lesson's file, ending with its questions (asked,
    never answered) and their links, made from its questions file, so the two never
    disagree."""
    text = load_lesson_text(lesson.text_file)
    section = questions.lesson_section(lesson.number)
    if not section:
        return text
    return LessonText(f"{text.markdown.rstrip()}\n\n{section}",
                      text.headings | {questions.SECTION_ANCHOR: questions.SECTION_HEADING})
