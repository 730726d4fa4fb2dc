#include "tokenizer/kjv_corpus.h"

#include <sys/wait.h>

#include <cstdio>

#include "core/error.h"

namespace mixgpt {
namespace {

constexpr int kKjvChapters = 1189;

std::string run_command(const std::string& command) {
    FILE* pipe = popen((command + " 2>/dev/null").c_str(), "r");
    MIXGPT_REQUIRE(pipe != nullptr, "cannot run '" + command + "'");
    std::string output;
    char buffer[1 << 16];
    size_t count = 0;
    while ((count = std::fread(buffer, 1, sizeof buffer, pipe)) > 0) output.append(buffer, count);
    const int status = pclose(pipe);
    MIXGPT_REQUIRE(status != -1 && WIFEXITED(status) && WEXITSTATUS(status) == 0,
                   "'" + command +
                       "' failed: the KJV corpus needs the 'bible' program of Debian's bible-kjv "
                       "package (scripts/setup.sh installs it)");
    return output;
}

}  // namespace

std::vector<std::string> split_kjv_chapters(std::string_view bible_output) {
    std::vector<std::string> chapters;
    size_t start = 0;
    while (start < bible_output.size()) {
        size_t end = bible_output.find('\n', start);
        if (end == std::string_view::npos) end = bible_output.size();
        std::string_view line = bible_output.substr(start, end - start);
        start = end + 1;
        if (line.empty()) continue;
        if (line[0] != ' ') {
            chapters.emplace_back(line);
            chapters.back() += '\n';
            continue;
        }
        const size_t text_start = line.find_first_not_of(' ');
        if (text_start == std::string_view::npos) continue;
        MIXGPT_REQUIRE(!chapters.empty(), "unexpected output of '" + std::string(kKjvCommand) +
                                              "': a verse before the first chapter heading");
        line.remove_prefix(text_start);
        chapters.back().append(line).append("\n");
    }
    return chapters;
}

std::vector<std::string> kjv_chapters() {
    std::vector<std::string> chapters = split_kjv_chapters(run_command(kKjvCommand));
    MIXGPT_REQUIRE(chapters.size() == kKjvChapters, "unexpected output of '" + std::string(kKjvCommand) +
                                                        "': " + std::to_string(chapters.size()) +
                                                        " chapters instead of " +
                                                        std::to_string(kKjvChapters));
    return chapters;
}

}  // namespace mixgpt
