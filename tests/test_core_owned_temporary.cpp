// What mixgpt may remove after a process was killed (core/owned_temporary.h): only temporaries that
// prove they are its own and whose writer is gone, never one that is or holds an input.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>

#include "core/error.h"
#include "core/owned_temporary.h"
#include "tests/test_support.h"

namespace mixgpt {
namespace {

namespace fs = std::filesystem;

int64_t reaped_child_pid() {
    const pid_t child = fork();
    if (child == 0) _exit(0);
    waitpid(child, nullptr, 0);  // no process has this pid now
    return child;
}

std::vector<std::string> sorted(std::vector<std::string> paths) {
    std::sort(paths.begin(), paths.end());
    return paths;
}

// A file temporary names its writer (pid and start time): removed when that process is gone (a
// reaped child; pid 1 with another start time, a reused pid), kept when it runs (this process,
// pid 1 as it is), and so is every other name, a folder, and an input.
TEST(OwnedTemporary, RemovesOnlyFileTemporariesOfProcessesThatAreGone) {
    test::TempDirectory dir;
    const std::string gone = std::to_string(reaped_child_pid());
    const uint64_t init_start = process_start_time(1);
    const std::string stale = dir.write("step_00000004.h5.tmp-" + gone + "-123", "partial");
    const std::string reused =
        dir.write("metrics.jsonl.tmp-1-" + std::to_string(init_start + 1), "pid reused");
    const std::string own = owned_file_temporary(dir.file("step_00000006.h5"));
    std::ofstream(own) << "being written";
    const std::string live = dir.write("run_id.tmp-1-" + std::to_string(init_start), "pid 1 as it is");
    const std::string old_style = dir.write("notes.tmp-" + gone, "a user's file");
    const std::string input = dir.write("books.tmp-" + gone + "-5", "an input");
    const std::string complete = dir.write("step_00000002.h5", "complete");
    fs::create_directories(dir.file("folder.tmp-" + gone + "-5"));
    EXPECT_EQ(sorted(remove_stale_owned_files(dir.path(), {input})), sorted({stale, reused}));
    for (const std::string& kept :
         {own, live, old_style, input, complete, dir.file("folder.tmp-" + gone + "-5")})
        EXPECT_TRUE(fs::exists(kept)) << kept;
}

// Beside an output, a folder is removed only when its marker names a process of this host that is
// gone, and it holds no input; a folder without a marker is the user's, whatever its name.
TEST(OwnedTemporary, RemovesOnlyMarkedFoldersOfProcessesThatAreGone) {
    test::TempDirectory dir;
    ProcessIdentity dead = ProcessIdentity::self();
    dead.pid = reaped_child_pid();
    ProcessIdentity elsewhere = dead;
    elsewhere.host = "another-host";
    const auto marked = [&](const std::string& name, const ProcessIdentity& writer) {
        dir.write(name + "/shard-000000.h5", "half written");
        dir.write(name + "/" + kTemporaryMarkerName, temporary_marker_text("prepare", writer));
        return dir.file(name);
    };
    const std::string stale = marked("web.tmp-" + std::to_string(dead.pid), dead);
    const std::string stale_old = marked("web.old-" + std::to_string(dead.pid), dead);
    const std::string other_host = marked("web.tmp-7", elsewhere);
    const std::string holds_input = marked("web.old-8", dead);
    const std::string other_output = marked("webby.tmp-9", dead);
    const std::string backup = dir.write("web.old-2024/notes.txt", "a user's backup");
    const std::string garbled = dir.write(std::string("web.tmp-10/") + kTemporaryMarkerName, "not a marker");
    const std::string live = dir.file("web.tmp-" + std::to_string(::getpid()));
    create_owned_folder(live, "prepare");
    EXPECT_EQ(sorted(remove_stale_owned_folders(dir.file("web"), {holds_input + "/shard-000000.h5"})),
              sorted({stale, stale_old}));
    for (const std::string& kept : {other_host, holds_input, other_output, backup, garbled, live})
        EXPECT_TRUE(fs::exists(kept)) << kept;
    EXPECT_THROW(create_owned_folder(live, "prepare"), Error);  // never into an existing folder
    release_owned_folder(live);
    EXPECT_FALSE(fs::exists(fs::path(live) / kTemporaryMarkerName));
}

}  // namespace
}  // namespace mixgpt
