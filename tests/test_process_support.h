// Running the `mixgpt` binary (found beside the test binary) as a user would, for the tests of the
// command line: stdout and stderr to files, an optional address-space cap in the child, a
// deadline after which the child is killed and reported as hung.
#pragma once

#include <fcntl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <csignal>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

namespace mixgpt::test {

inline std::string mixgpt_binary() {
    return (std::filesystem::read_symlink("/proc/self/exe").parent_path() / "mixgpt").string();
}

inline std::string read_text(const std::string& path) {
    std::ifstream file(path);
    std::stringstream text;
    text << file.rdbuf();
    return text.str();
}

inline std::vector<std::string> lines_of(const std::string& text) {
    std::vector<std::string> lines;
    std::istringstream stream(text);
    for (std::string line; std::getline(stream, line);) lines.push_back(line);
    return lines;
}

struct SpawnLimits {
    size_t address_space_bytes = 0;  // RLIMIT_AS of the child (ulimit -v); 0: inherited
};

// Starts `mixgpt arguments...` with stdout and stderr going to files.
inline pid_t spawn(const std::vector<std::string>& arguments, const std::string& out_path,
                   const std::string& err_path, const SpawnLimits& limits = {}) {
    std::vector<std::string> argv_storage = {mixgpt_binary()};
    argv_storage.insert(argv_storage.end(), arguments.begin(), arguments.end());
    std::vector<char*> argv;
    for (std::string& argument : argv_storage) argv.push_back(argument.data());
    argv.push_back(nullptr);
    const pid_t pid = fork();
    if (pid == 0) {
        const int out = ::open(out_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
        const int err = ::open(err_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
        dup2(out, STDOUT_FILENO);
        dup2(err, STDERR_FILENO);
        if (limits.address_space_bytes > 0) {
            const struct rlimit cap = {limits.address_space_bytes, limits.address_space_bytes};
            setrlimit(RLIMIT_AS, &cap);
        }
        execv(argv[0], argv.data());
        _exit(127);
    }
    return pid;
}

struct Outcome {
    int exit_status = -1;  // 128 + N when killed by signal N
    bool signaled = false;
    bool hung = false;  // still running at the deadline (then killed)
    std::string out, err;
};

inline Outcome wait_for(pid_t pid, const std::string& out_path, const std::string& err_path,
                        std::chrono::seconds deadline = std::chrono::seconds(600)) {
    int status = 0;
    Outcome outcome;
    const auto end = std::chrono::steady_clock::now() + deadline;
    while (waitpid(pid, &status, WNOHANG) == 0) {
        if (std::chrono::steady_clock::now() > end) {
            outcome.hung = true;
            kill(pid, SIGKILL);
            waitpid(pid, &status, 0);
            break;
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(2));
    }
    outcome.signaled = WIFSIGNALED(status);
    outcome.exit_status = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    outcome.out = read_text(out_path);
    outcome.err = read_text(err_path);
    return outcome;
}

}  // namespace mixgpt::test
