// Bad input, bounds family (issue 31): --threads beyond 4 per processor in every subcommand (libgomp
// crashed at 100000), --config from a device, a pipe or a huge file (read without bound), and
// address-space limits (ulimit -v) below what a command needs, in a child process: one line, never
// a hang (OpenBLAS's start-up used to retry a failed reservation forever, before main).
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <filesystem>
#include <fstream>

#include "core/thread_limit.h"
#include "tests/bad_inputs_support.h"

namespace mixgpt {
namespace {

using namespace test;
namespace fs = std::filesystem;

class BadBoundsTest : public ::testing::Test {
protected:
    static void SetUpTestSuite() {
        fixture_ = make_bad_input_fixture("mixgpt_bad_bounds").release();
        const TempDirectory& d = *fixture_;
        d.write("threads.toml", "threads = 100000\n");
        d.write("huge.toml", "# " + std::string((1 << 20) + 100, 'x') + "\n");
        ASSERT_EQ(::mkfifo(d.file("pipe.toml").c_str(), 0600), 0);
        fs::create_symlink("/dev/zero", d.file("zero.toml"));
    }
    static void TearDownTestSuite() {
        delete fixture_;
        fixture_ = nullptr;
    }

    static inline TempDirectory* fixture_ = nullptr;
    BadInputRunner runner_{*fixture_};
};

std::vector<std::string> tiny_bench(const std::vector<std::string>& extra) {
    std::vector<std::string> arguments = {
        "bench", "--model", "d2", "--n-embd",       "32", "--vocab-size", "100", "-b", "1", "-t",
        "8",     "--steps", "1",  "--warmup-steps", "0",  "--precision",  "fp32"};
    arguments.insert(arguments.end(), extra.begin(), extra.end());
    return arguments;
}

std::vector<BadInput> bounds_cases() {
    const std::string too_many = "100000 is more than " + std::to_string(max_threads());
    const std::vector<std::string> threads = {"--threads", "100000"};
    const auto with = [](std::vector<std::string> arguments, const std::vector<std::string>& extra) {
        arguments.insert(arguments.end(), extra.begin(), extra.end());
        return arguments;
    };
    return {
        {"prepare: --threads 100000",
         with({"prepare", "--output", "{D}/new", "{D}/corpus"}, threads),
         2,
         {"--threads", too_many}},
        {"train: --threads 100000", train_with(threads), 2, {"--threads", too_many, "per processor"}},
        {"eval: --threads 100000", with({"eval", "{D}/run"}, threads), 2, {"--threads", too_many}},
        {"sample: --threads 100000", with({"sample", "{D}/run"}, threads), 2, {"--threads", too_many}},
        {"bench: --threads 100000", tiny_bench(threads), 2, {"--threads", too_many}},
        {"study: --threads 100000",
         with({"study", "--dataset", "{DATA}", "-o", "{D}/study"}, threads),
         2,
         {"--threads", too_many}},
        {"export: --threads 100000",
         with({"export", "{D}/run", "-o", "{D}/hf", "--reference-out", "{D}/ref"}, threads),
         2,
         {"--threads", too_many}},
        {"train: --threads 20000",
         train_with({"--threads", "20000"}),
         2,
         {"--threads", "20000 is more than"}},
        {"train: --threads beyond int",
         train_with({"--threads", "3000000000"}),
         2,
         {"--threads", "3000000000"}},
        {"eval: threads = 100000 in the config",
         {"eval", "{D}/run", "--config", "{D}/threads.toml"},
         2,
         {"--threads", too_many}},
        {"train: --config /dev/zero",
         train_with({"--config", "/dev/zero"}),
         2,
         {"/dev/zero: not a regular file"}},
        {"train: --config a link to /dev/zero",
         train_with({"--config", "{D}/zero.toml"}),
         2,
         {"{D}/zero.toml: not a regular file"}},
        {"train: --config a named pipe",
         train_with({"--config", "{D}/pipe.toml"}),
         2,
         {"{D}/pipe.toml: not a regular file"}},
        {"eval: --config over 1 MiB",
         {"eval", "{D}/run", "--config", "{D}/huge.toml"},
         2,
         {"{D}/huge.toml", "1048576 bytes at most"}},
        {"train: --tokens beyond int64",
         train_with({"--steps", "0", "--tokens", "99999999999999999999"}),
         2,
         {"--tokens", "99999999999999999999"}},
    };
}

TEST_F(BadBoundsTest, EveryCaseIsOneLineAndDamagesNothing) {
    const std::vector<BadInput> cases = bounds_cases();
    for (const BadInput& bad : cases) runner_.check(bad);
    EXPECT_EQ(cases.size(), 15u);
}

// Under ulimit -v 350 MiB (in the child only) every command that multiplies matrices says in one
// line that OpenBLAS's buffers do not fit, instead of hanging before main; info still works.
TEST_F(BadBoundsTest, AddressSpaceLimitIsOneLineNotAHang) {
#ifdef __SANITIZE_ADDRESS__
    GTEST_SKIP() << "AddressSanitizer reserves terabytes of shadow address space at start, so a mixgpt "
                    "built with it cannot run under an address-space cap (RLIMIT_AS)";
#endif
    SpawnLimits limits;
    limits.address_space_bytes = size_t{350} << 20;
    const std::vector<std::string> expected = {"memory: OpenBLAS reserves", "ulimit -v", "--threads"};
    for (const BadInput& bad : std::vector<BadInput>{
             {"train under ulimit -v 350 MiB", train_with({}), 1, expected},
             {"eval under ulimit -v 350 MiB", {"eval", "{D}/run", "--threads", "1"}, 1, expected},
             {"sample under ulimit -v 350 MiB", {"sample", "{D}/run", "--threads", "1"}, 1, expected},
             {"bench under ulimit -v 350 MiB", tiny_bench({"--threads", "1"}), 1, expected},
         })
        runner_.check(bad, limits);
    const Outcome info = runner_.run({"info"}, limits, std::chrono::seconds(30));
    EXPECT_FALSE(info.hung);
    EXPECT_EQ(info.exit_status, 0) << info.err;
    EXPECT_NE(info.out.find("mixgpt"), std::string::npos) << info.out;
}

// Near or below what the binary needs to load: it works, or the dynamic loader or mixgpt says in
// one line that it cannot.
TEST_F(BadBoundsTest, TinyAddressSpaceLimitEndsEveryCommandAtOnce) {
#ifdef __SANITIZE_ADDRESS__
    GTEST_SKIP() << "AddressSanitizer cannot run under an address-space cap";
#endif
    SpawnLimits limits;
    limits.address_space_bytes = size_t{64} << 20;
    for (const std::vector<std::string>& arguments :
         {std::vector<std::string>{"info"}, train_with({}), {"eval", "{D}/run", "--threads", "1"}}) {
        SCOPED_TRACE(arguments[0]);
        const std::map<std::string, std::string> before = file_hashes(fixture_->path());
        const Outcome outcome = runner_.run(arguments, limits, std::chrono::seconds(30));
        EXPECT_FALSE(outcome.hung);
        EXPECT_FALSE(outcome.signaled) << outcome.err;
        std::string line;
        if (outcome.exit_status == 127) {  // the dynamic loader could not map a library
            EXPECT_EQ(lines_of(outcome.err).size(), 1u) << outcome.err;
        } else if (outcome.exit_status != 0) {
            EXPECT_TRUE(is_one_error_line(outcome.err, line));
        }
        runner_.expect_unchanged(before);
    }
}

}  // namespace
}  // namespace mixgpt
