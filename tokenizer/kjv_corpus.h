// The default corpus: the King James Bible from Debian's bible-kjv package,
// one document per chapter. `bible -l0 gen1:1-rev22:21` prints each chapter
// as a heading line ("Genesis 1"), a blank line and one indented line per
// verse ("  1 In the beginning God created the heaven and the earth.").
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace mixgpt {

inline constexpr const char* kKjvCommand = "bible -l0 gen1:1-rev22:21";

// Runs kKjvCommand and returns its chapters; throws Error when the program is
// missing (install bible-kjv: scripts/setup.sh) or prints something else.
std::vector<std::string> kjv_chapters();

// Splits the program's output into chapters: the heading line, then each
// verse line without its indentation ("Genesis 1\n1 In the beginning ...\n2 ...").
std::vector<std::string> split_kjv_chapters(std::string_view bible_output);

}  // namespace mixgpt
