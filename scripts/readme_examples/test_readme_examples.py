#!/usr/bin/env python3
"""Tests of the README-examples test itself, run by scripts/run_tests.sh before it: the extraction
of commands from fenced blocks (continuations, comments, quotes, optional parts), the plan's
errors (a skip pattern that matches nothing, a placeholder, a block without a language), the size
substitutions, and the runner's failure paths on a small README whose command fails or hangs.

Usage: test_readme_examples.py BUILD (the build folder with mixgpt).
"""
import contextlib
import io
import os
import sys
import tempfile
import textwrap
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import run_readme_examples  # noqa: E402
from extract import code_blocks, commands, with_optional_parts  # noqa: E402
from plan import plan  # noqa: E402

BUILD = os.path.abspath(sys.argv.pop(1) if len(sys.argv) > 1 else os.path.join(HERE, "..", "..", "build"))

SAMPLE = textwrap.dedent("""\
    Text.

    ```sh
    build/mixgpt train --dataset data/kjv --steps 2000 \\
        -o runs/d6          # a comment
                            # the comment, continued
    build/mixgpt sample runs/d6 -p "a # in quotes" --x a#b [--json]
    ```

    ```toml
    steps = 10
    ```
    """)


class Extraction(unittest.TestCase):
    def test_blocks_carry_their_language_and_lines(self):
        blocks = code_blocks(SAMPLE)
        self.assertEqual([(block.line, block.language) for block in blocks], [(3, "sh"), (10, "toml")])
        self.assertEqual(blocks[1].lines, [(11, "steps = 10")])

    def test_continuations_join_and_comments_go(self):
        found = commands(code_blocks(SAMPLE)[0])
        self.assertEqual([(command.line, command.text) for command in found], [
            (4, "build/mixgpt train --dataset data/kjv --steps 2000 -o runs/d6"),
            (7, 'build/mixgpt sample runs/d6 -p "a # in quotes" --x a#b [--json]')])

    def test_optional_parts_are_written_in(self):
        self.assertEqual(with_optional_parts("eval x [--limit 10] [-b 32] 'notes/[ab].txt'"),
                         "eval x --limit 10 -b 32 'notes/[ab].txt'")

    def test_an_unclosed_block_is_an_error(self):
        with self.assertRaisesRegex(ValueError, "line 1: a code block that is never closed"):
            code_blocks("```sh\nls\n")


class Plan(unittest.TestCase):
    def test_commands_run_at_small_sizes_and_other_languages_are_skipped(self):
        steps, errors = plan(SAMPLE, skips=[])
        self.assertEqual(errors, [])
        self.assertEqual(steps[0].to_run, "build/mixgpt train --dataset data/kjv --steps 2 -o runs/d6")
        self.assertEqual(steps[1].to_run, 'build/mixgpt sample runs/d6 -p "a # in quotes" --x a#b --json')
        self.assertEqual((steps[2].to_run, steps[2].skip_reason), ("", "toml, not shell"))

    def test_a_skip_pattern_that_matches_nothing_is_an_error(self):
        steps, errors = plan(SAMPLE, skips=[(r"^sample", "never matches"), (r"sample runs", "matches")])
        self.assertEqual(errors, ["skip pattern '^sample' matches no command of README: remove it"])
        self.assertEqual(steps[1].skip_reason, "matches")

    def test_a_placeholder_is_neither_run_nor_skipped(self):
        _, errors = plan("```sh\nbuild/mixgpt train ... --resume\n```\n", skips=[])
        self.assertEqual(len(errors), 1)
        self.assertRegex(errors[0], r"^README.md:2: '\.\.\.' in `build/mixgpt train \.\.\. --resume`")

    def test_a_block_without_a_language_is_an_error(self):
        _, errors = plan("```\nls\n```\n", skips=[])
        self.assertRegex(errors[0], "^README.md:1: a code block without a language")

    def test_warm_up_steps_shrink_with_the_steps(self):
        steps, _ = plan("```sh\nbuild/mixgpt study --steps 1200 --warmup-steps 100\n```\n", skips=[])
        self.assertEqual(steps[0].to_run, "build/mixgpt study --steps 1 --warmup-steps 0")


class Runner(unittest.TestCase):
    def run_readme(self, markdown):
        """(number failed, printed lines) of running markdown's commands with build/ linked in."""
        steps, errors = plan(markdown, skips=[])
        self.assertEqual(errors, [])
        with tempfile.TemporaryDirectory() as folder:
            os.symlink(BUILD, os.path.join(folder, "build"))
            printed = io.StringIO()
            with contextlib.redirect_stdout(printed):
                failed = run_readme_examples.run_steps(steps, folder, "README.md")
        return failed, printed.getvalue().splitlines()

    def test_a_failing_command_is_reported_with_its_error(self):
        failed, lines = self.run_readme(
            "```sh\nbuild/mixgpt info\nbuild/mixgpt eval runs/missing --json\n```\n")
        self.assertEqual(failed, 1)
        self.assertRegex(lines[0], r"^ran .* README.md:2 +build/mixgpt info$")
        self.assertRegex(lines[1], r"^FAILED .* README.md:3 +build/mixgpt eval runs/missing --json  \(exit 1\)$")
        self.assertTrue(any("runs/missing" in line and line.startswith("        | mixgpt: error:")
                            for line in lines[2:]), lines)

    def test_a_failing_stage_of_a_pipe_fails_the_command(self):
        failed, lines = self.run_readme("```sh\nfalse | cat\n```\n")
        self.assertEqual(failed, 1)
        self.assertRegex(lines[0], r"^FAILED .*false \| cat  \(exit 1\)$")

    def test_a_command_that_does_not_end_is_stopped(self):
        saved = run_readme_examples.COMMAND_TIMEOUT_S
        run_readme_examples.COMMAND_TIMEOUT_S = 1
        try:
            failed, lines = self.run_readme("```sh\nsleep 30 | sleep 30\n```\n")
        finally:
            run_readme_examples.COMMAND_TIMEOUT_S = saved
        self.assertEqual(failed, 1)
        self.assertRegex(lines[0], r"^FAILED +[0-9.]+ s .*\(no exit within 1 s\)$")


if __name__ == "__main__":
    unittest.main()
