// Running the project's Python checkers from a test: /usr/bin/python3 (Debian's, with NumPy) and
// scripts/check_hf_export.py found beside the sources.
#pragma once

#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

namespace mixgpt::test {

// Runs /usr/bin/python3 with `arguments`; its exit status (127: could not start).
inline int run_python(const std::vector<std::string>& arguments, const std::string& output_path) {
    std::vector<std::string> storage = {"/usr/bin/python3"};
    storage.insert(storage.end(), arguments.begin(), arguments.end());
    std::vector<char*> argv;
    for (std::string& argument : storage) argv.push_back(argument.data());
    argv.push_back(nullptr);
    const pid_t pid = fork();
    if (pid == 0) {
        std::FILE* output = std::freopen(output_path.c_str(), "w", stdout);
        if (output == nullptr || dup2(fileno(stdout), STDERR_FILENO) < 0) _exit(127);
        execv(argv[0], argv.data());
        _exit(127);
    }
    int status = 0;
    waitpid(pid, &status, 0);
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128;
}

// The checker beside the sources: the first folder above the test binary (build/ or
// build/asan/, say) that holds scripts/check_hf_export.py; "" if none does.
inline std::string find_checker() {
    namespace fs = std::filesystem;
    for (fs::path folder = fs::read_symlink("/proc/self/exe").parent_path(); folder.has_relative_path();
         folder = folder.parent_path())
        if (fs::exists(folder / "scripts/check_hf_export.py"))
            return (folder / "scripts/check_hf_export.py").string();
    return "";
}

}  // namespace mixgpt::test
