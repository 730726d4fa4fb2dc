"""What the README-examples test does with each command of README: skip it (a pattern with its
reason) or run it, at the small sizes the substitutions below give. Both tables are short on
purpose: the test runs what a user types. A skip pattern that matches no command, and a command
that still holds a placeholder ("...") when it would run, are errors, so neither table can rot and
README cannot show a command that is neither run nor skipped."""
import re
from dataclasses import dataclass

from extract import SHELL_LANGUAGES, code_blocks, commands, with_optional_parts

# (pattern searched in the command as written, why it cannot run here)
SKIPS = [
    (r"^make demo\b", "the whole demo, about 6 minutes (scripts/demo.sh: prepare, train, eval, sample, as below)"),
    (r"^make test\b", "the suite that runs this test"),
    (r"^curl ", "a download; hellaswag_val.jsonl stands in (tests/fixtures/multiple_choice/hellaswag.jsonl)"),
    (r"^mpirun -np 8 ", "8 GPUs (2-rank CPU training is tested by make test's 2-rank stage)"),
    (r"^sbatch ", "a Slurm cluster"),
    (r"--device cuda\b", "a CUDA device"),
    (r"parquet_to_jsonl\.py", "pyarrow, which Debian's python3 lacks"),
]


def thousandth(match):
    """A thousandth of the option's count of steps; at least one step of training."""
    option, count = match.group(1), int(match.group(2))
    return f"{option} {max(1 if option == '--steps' else 0, count // 1000)}"


# (pattern, replacement, why): sizes only, applied to every command that runs
SIZES = [
    (r"(--steps|--warmup-steps) (\d+)", thousandth, "a thousandth of the steps"),
    (r"--model d6\b", "--model d2", "d2 for d6: a d6 step and evaluation take seconds on 2 cores"),
    (r"--corpus kjv$", "--corpus kjv --val-fraction 0.005", "6 validation chapters, not 60: a tenth of "
     "every evaluation below"),
    (r"make_kjv_tasks\.py next-verse", "make_kjv_tasks.py next-verse --examples 16", "16 examples of 1000"),
]

PLACEHOLDER = re.compile(r"(^|\s)\.\.\.(\s|$)")


@dataclass
class Step:
    line: int
    written: str  # as README has it (optional parts written in)
    to_run: str = ""  # empty when skipped
    skip_reason: str = ""


def sized(text):
    for pattern, replacement, _ in SIZES:
        text = re.sub(pattern, replacement, text)
    return text


def plan(markdown, name="README.md", skips=SKIPS):
    """(steps in README's order, errors): every command of every shell block, skipped or to run;
    other blocks are skipped by their language; a block without one is an error."""
    steps, errors, used = [], [], set()
    for block in code_blocks(markdown):
        if block.language not in SHELL_LANGUAGES:
            if not block.language:
                errors.append(f"{name}:{block.line}: a code block without a language: mark it sh "
                              "to run it, or text (or its language) to leave it")
            else:
                steps.append(Step(block.line, f"```{block.language} block",
                                  skip_reason=f"{block.language}, not shell"))
            continue
        for command in commands(block):
            written = with_optional_parts(command.text)
            skip = next(((pattern, reason) for pattern, reason in skips if re.search(pattern, written)), None)
            if skip:
                used.add(skip[0])
                steps.append(Step(command.line, written, skip_reason=skip[1]))
                continue
            to_run = sized(written)
            if PLACEHOLDER.search(to_run):
                errors.append(f"{name}:{command.line}: '...' in `{written}`: write the command out "
                              "or add a skip to scripts/readme_examples/plan.py")
                continue
            steps.append(Step(command.line, written, to_run=to_run))
    errors += [f"skip pattern {pattern!r} matches no command of README: remove it"
               for pattern, _ in skips if pattern not in used]
    return steps, errors
