"""README's fenced code blocks, and the commands of its shell blocks as a user would type them."""
import re
from dataclasses import dataclass

FENCE = re.compile(r"^```\s*(\S*)\s*$")
SHELL_LANGUAGES = {"sh", "bash", "shell"}
# README's notation for an option a user may add: "[--limit 1000]". The test adds every one.
OPTIONAL = re.compile(r"\[(-[^\[\]]*)\]")


@dataclass
class Block:
    line: int  # of the opening fence, 1-based
    language: str
    lines: list  # [(line number, text), ...] between the fences


@dataclass
class Command:
    line: int  # where the command starts in README
    text: str  # as written, comments and line continuations removed, optional parts kept


def code_blocks(markdown):
    """Every fenced block, in order; an unclosed fence is an error."""
    blocks, current = [], None
    for number, text in enumerate(markdown.splitlines(), start=1):
        fence = FENCE.match(text)
        if current is None and fence:
            current = Block(number, fence.group(1), [])
        elif current is not None and text.strip() == "```":
            blocks.append(current)
            current = None
        elif current is not None:
            current.lines.append((number, text))
    if current is not None:
        raise ValueError(f"line {current.line}: a code block that is never closed")
    return blocks


def without_comment(text):
    """The line up to a '#' that starts a shell comment: at its start or after a blank, outside quotes."""
    quote = None
    for index, character in enumerate(text):
        if quote:
            if character == quote:
                quote = None
        elif character in "'\"":
            quote = character
        elif character == "#" and (index == 0 or text[index - 1].isspace()):
            return text[:index]
    return text


def commands(block):
    """A shell block's commands: one per line, a trailing backslash joins the next line; comment
    lines and blank lines are no command."""
    result, pending, start = [], "", None
    for number, text in block.lines:
        code = without_comment(text).rstrip()
        continued = code.endswith("\\")
        if continued:
            code = code[:-1].rstrip()
        if code.strip():
            start = number if start is None else start
            pending = f"{pending} {code.strip()}" if pending else code.strip()
        if not continued and pending:
            result.append(Command(start, pending))
            pending, start = "", None
    if pending:
        raise ValueError(f"line {start}: the last command ends in a line continuation")
    return result


def with_optional_parts(text):
    """The command with README's optional parts ("[--json]") written in."""
    return OPTIONAL.sub(r"\1", text)
