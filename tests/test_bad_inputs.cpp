// Bad input, table-driven, through the `mixgpt` binary: every subcommand and the config file,
// each case checked as tests/bad_inputs_support.h says. Also: the full-disk cases on a small tmpfs
// (skipped with a message where mounting one is not allowed) and a run too large for the memory
// the process may have (under RLIMIT_AS). The families of issue 31 are in test_bad_inputs_*.cpp.
#include <gtest/gtest.h>
#include <sys/mount.h>

#include <filesystem>
#include <fstream>
#include <regex>

#include "tests/bad_inputs_support.h"

namespace mixgpt {
namespace {

using namespace test;

class BadInputTest : public ::testing::Test {
protected:
    // Files every case may read (bad_inputs_support.h), and corrupt ones.
    static void SetUpTestSuite() {
        fixture_ = make_bad_input_fixture("mixgpt_bad_inputs").release();
        const TempDirectory& d = *fixture_;
        d.write("not_hdf5.h5", "plain text, not HDF5\n");
        d.write("empty.txt", "");
        d.write("nokey.jsonl", "{\"body\": \"text under another key\"}\n{\"body\": \"more\"}\n");
        d.write("badline.jsonl", "{\"text\": \"fine\"}\nnot json at all\n");
        d.write("syntax.toml", "model = \"d2\"\nbatch_size = = 4\n");
        d.write("unknown_key.toml", "batch_sise = 4\n");
        d.write("wrong_type.toml", "eval_interval = \"many\"\n");
        d.write("bad_header.toml", "[*");  // found by fuzz/toml_config: toml++ asserted (SIGABRT)
        d.write("control.toml", std::string("model = \"d2\"\n[\x0e\0x]\n", 19));  // found by fuzz/toml_config
        d.write("plain_file", "a file where a directory is expected\n");
        d.write("task.jsonl",
                "{\"context\": \"the cat\", \"choices\": [\"sees\", \"likes\"], \"label\": 0}\n");
        d.write("bad_task.jsonl",
                "{\"context\": \"the cat\", \"choices\": [\"sees\", \"likes\"], \"label\": 0}\n"
                "{\"context\": \"the dog\", \"choices\": \"sees\", \"label\": 0}\n");
        std::filesystem::create_directories(d.file("empty_dir"));
        const std::string checkpoint = checkpoint_path(checkpoint_directory(d.file("run")), 2);
        std::filesystem::copy(checkpoint, d.file("truncated.h5"));
        std::filesystem::resize_file(d.file("truncated.h5"), std::filesystem::file_size(checkpoint) / 2);
    }
    static void TearDownTestSuite() {
        delete fixture_;
        fixture_ = nullptr;
    }

    Outcome run(const std::vector<std::string>& arguments, const SpawnLimits& limits = {}) {
        return runner_.run(arguments, limits);
    }
    void check(const BadInput& bad, const SpawnLimits& limits = {}) { runner_.check(bad, limits); }

    static inline TempDirectory* fixture_ = nullptr;
    BadInputRunner runner_{*fixture_};
};

// A one-step bench of a tiny model that writes its JSON to `json_out`.
std::vector<std::string> tiny_bench_writing(const std::string& json_out) {
    return {"bench", "--model",   "d2", "--n-embd",   "32",    "--vocab-size",   "100", "-b",
            "1",     "-t",        "8",  "--steps",    "1",     "--warmup-steps", "0",   "--precision",
            "fp32",  "--threads", "1",  "--json-out", json_out};
}

std::vector<BadInput> bad_inputs() {
    const std::string ckpt = "{D}/run/checkpoints/step_00000002.h5";
    return {
        // ---- no or unknown subcommand ----
        {"no subcommand", {}, 2, {"subcommand"}},
        {"unknown subcommand", {"fly"}, 2, {"subcommand"}},
        // ---- prepare ----
        {"prepare: no input", {"prepare", "--output", "{D}/new"}, 1, {"no input"}},
        {"prepare: missing input",
         {"prepare", "--output", "{D}/new", "{D}/absent.txt"},
         1,
         {"{D}/absent.txt"}},
        {"prepare: unknown corpus", {"prepare", "--corpus", "wiki"}, 1, {"wiki", "kjv"}},
        {"prepare: corpus and inputs",
         {"prepare", "--corpus", "kjv", "--output", "{D}/new", "{D}/corpus"},
         1,
         {"not both"}},
        {"prepare: inputs without output", {"prepare", "{D}/corpus"}, 1, {"--output"}},
        {"prepare: val fraction above 1",
         {"prepare", "--output", "{D}/new", "--val-fraction", "1.5", "{D}/corpus"},
         1,
         {"--val-fraction", "1.5"}},
        {"prepare: negative val fraction",
         {"prepare", "--output", "{D}/new", "--val-fraction", "-0.1", "{D}/corpus"},
         1,
         {"--val-fraction"}},
        {"prepare: zero sample bytes",
         {"prepare", "--output", "{D}/new", "--tokenizer-sample-bytes", "0", "{D}/corpus"},
         1,
         {"--tokenizer-sample-bytes"}},
        {"prepare: negative threads",
         {"prepare", "--output", "{D}/new", "--threads", "-4", "{D}/corpus"},
         2,
         {"--threads", "-4"}},
        {"prepare: vocab size not a number",
         {"prepare", "--output", "{D}/new", "--vocab-size", "many", "{D}/corpus"},
         2,
         {"--vocab-size", "many"}},
        {"prepare: unknown format",
         {"prepare", "--output", "{D}/new", "--format", "xml", "{D}/corpus"},
         1,
         {"xml"}},
        {"prepare: unknown model type",
         {"prepare", "--output", "{D}/new", "--model-type", "word", "{D}/corpus"},
         1,
         {"word"}},
        {"prepare: tokenizer not a model",
         {"prepare", "--output", "{D}/new", "--tokenizer", "{D}/not_hdf5.h5", "{D}/corpus"},
         1,
         {"{D}/not_hdf5.h5"}},
        {"prepare: missing tokenizer",
         {"prepare", "--output", "{D}/new", "--tokenizer", "{D}/absent", "{D}/corpus"},
         1,
         {"{D}/absent"}},
        {"prepare: output exists",
         {"prepare", "--output", "{DATA}", "{D}/corpus"},
         1,
         {"already exists", "--force"}},
        {"prepare: JSONL without the key",
         {"prepare", "--output", "{D}/new", "{D}/nokey.jsonl"},
         1,
         {"{D}/nokey.jsonl", "'text'", "--jsonl-key"}},
        {"prepare: JSONL bad line",
         {"prepare", "--output", "{D}/new", "--tokenizer", "{DATA}/tokenizer.model", "{D}/badline.jsonl"},
         1,
         {"{D}/badline.jsonl:2", "not valid JSON"}},
        {"prepare: empty corpus", {"prepare", "--output", "{D}/new", "{D}/empty.txt"}, 1, {"empty corpus"}},
        {"prepare: vocabulary too small",
         {"prepare", "--output", "{D}/new", "--vocab-size", "10", "{D}/corpus"},
         1,
         {"vocabulary size 10"}},
        {"prepare: directory without files",
         {"prepare", "--output", "{D}/new", "{D}/empty_dir"},
         1,
         {"{D}/empty_dir"}},
        {"prepare: glob matching nothing",
         {"prepare", "--output", "{D}/new", "{D}/*.nothing"},
         1,
         {"*.nothing"}},
        {"prepare: unknown option", {"prepare", "--bogus"}, 2, {"--bogus"}},
        // ---- train ----
        {"train: no dataset", {"train", "--steps", "2", "-o", "{D}/new_run"}, 1, {"dataset"}},
        {"train: missing dataset", train_with({"--dataset", "{D}/absent.h5"}), 1, {"{D}/absent.h5"}},
        {"train: dataset not HDF5", train_with({"--dataset", "{D}/not_hdf5.h5"}), 1, {"{D}/not_hdf5.h5"}},
        {"train: dataset is a checkpoint", train_with({"--dataset", ckpt}), 1, {ckpt}},
        {"train: zero steps", train_with({"--steps", "0"}), 1, {"--steps", "0 trains nothing"}},
        {"train: steps and tokens", train_with({"--tokens", "1000"}), 1, {"not both"}},
        {"train: unknown model", train_with({"--model", "d7"}), 1, {"d7"}},
        {"train: zero batch", train_with({"-b", "0"}), 1, {"batch-size"}},
        {"train: zero sequence", train_with({"-t", "0"}), 1, {"seq-len"}},
        {"train: unknown precision", train_with({"--precision", "fp4"}), 1, {"fp4"}},
        {"train: unknown recompute", train_with({"--recompute", "some"}), 1, {"some"}},
        {"train: unknown schedule", train_with({"--lr-schedule", "step"}), 1, {"step"}},
        {"train: total batch not a multiple",
         train_with({"--total-batch-tokens", "100"}),
         1,
         {"total-batch-tokens", "100"}},
        {"train: beta1 out of range", train_with({"--beta1", "1.5"}), 1, {"beta1"}},
        {"train: negative threads", train_with({"--threads", "-2"}), 2, {"--threads", "-2"}},
        {"train: keep no checkpoint", train_with({"--keep-checkpoints", "0"}), 1, {"keep-checkpoints"}},
        {"train: unknown loss scale", train_with({"--loss-scale", "huge"}), 1, {"huge"}},
        {"train: stochastic rounding in fp32",
         train_with({"--stochastic-rounding"}),
         1,
         {"stochastic-rounding"}},
        {"train: negative eval interval", train_with({"--eval-interval", "-1"}), 1, {"eval-interval"}},
        {"train: heads do not divide width", train_with({"--n-head", "3"}), 1, {"n_head 3"}},
        {"train: resume from a non-checkpoint",
         train_with({"--resume", "{D}/not_hdf5.h5"}),
         1,
         {"{D}/not_hdf5.h5"}},
        {"train: resume from a truncated checkpoint",
         train_with({"--resume", "{D}/truncated.h5"}),
         1,
         {"{D}/truncated.h5", "truncated"}},
        {"train: resume another model shape",
         train_with({"--n-embd", "64", "--resume"}, "{D}/run"),
         1,
         {"refusing checkpoint", "n_embd"}},
        {"train: output dir is a file", train_with({}, "{D}/plain_file"), 1, {"{D}/plain_file"}},
        {"train: config is a directory",
         train_with({"--config", "{D}/empty_dir"}),
         2,
         {"{D}/empty_dir", "directory"}},
        {"train: missing config", train_with({"--config", "{D}/absent.toml"}), 2, {"{D}/absent.toml"}},
        {"train: config syntax error",
         train_with({"--config", "{D}/syntax.toml"}),
         2,
         {"{D}/syntax.toml:2:"}},
        {"train: config unknown key",
         train_with({"--config", "{D}/unknown_key.toml"}),
         2,
         {"{D}/unknown_key.toml", "batch-sise"}},
        {"train: config with a control character",
         train_with({"--config", "{D}/control.toml"}),
         2,
         {"{D}/control.toml:2:2", "control character U+000E"}},
        {"train: config table header without a key",
         train_with({"--config", "{D}/bad_header.toml"}),
         2,
         {"{D}/bad_header.toml:1:2", "expected bare key"}},
        {"train: config wrong type", train_with({"--config", "{D}/wrong_type.toml"}), 2, {"many"}},
        // ---- eval ----
        {"eval: missing checkpoint", {"eval", "{D}/absent.h5"}, 1, {"{D}/absent.h5"}},
        {"eval: not a checkpoint", {"eval", "{D}/not_hdf5.h5"}, 1, {"{D}/not_hdf5.h5"}},
        {"eval: truncated checkpoint", {"eval", "{D}/truncated.h5"}, 1, {"{D}/truncated.h5", "truncated"}},
        {"eval: run without checkpoints", {"eval", "{D}/empty_dir"}, 1, {"{D}/empty_dir"}},
        {"eval: unknown split", {"eval", ckpt, "--split", "test", "--threads", "1"}, 1, {"test"}},
        {"eval: zero stride", {"eval", ckpt, "--stride", "0"}, 2, {"--stride"}},
        {"eval: zero batch", {"eval", ckpt, "-b", "0"}, 2, {"--batch-size"}},
        {"eval: zero max tokens", {"eval", ckpt, "--max-tokens", "0"}, 2, {"--max-tokens"}},
        {"eval: missing text input",
         {"eval", ckpt, "--text", "{D}/absent.txt", "--threads", "1"},
         1,
         {"{D}/absent.txt"}},
        {"eval: dataset not HDF5",
         {"eval", ckpt, "--dataset", "{D}/not_hdf5.h5", "--threads", "1"},
         1,
         {"{D}/not_hdf5.h5"}},
        {"eval: window beyond the context", {"eval", ckpt, "-t", "100", "--threads", "1"}, 1, {"100"}},
        {"eval: unknown precision", {"eval", ckpt, "--precision", "fp4"}, 1, {"fp4"}},
        {"eval: task without data", {"eval", ckpt, "--task", "mc", "--threads", "1"}, 1, {"data", "--task"}},
        {"eval: unknown task",
         {"eval", ckpt, "--task", "arc", "--data", "{D}/task.jsonl"},
         2,
         {"--task", "arc"}},
        {"eval: task and text",
         {"eval", ckpt, "--task", "mc", "--data", "{D}/task.jsonl", "--text", "{D}/corpus"},
         2,
         {"--task", "--text"}},
        {"eval: limit without task", {"eval", ckpt, "--limit", "5"}, 2, {"--limit", "--task"}},
        {"eval: malformed task line",
         {"eval", ckpt, "--task", "mc", "--data", "{D}/bad_task.jsonl", "--threads", "1"},
         1,
         {"{D}/bad_task.jsonl:2", "choices"}},
        {"eval: missing task file",
         {"eval", ckpt, "--task", "hellaswag", "--data", "{D}/absent.jsonl", "--threads", "1"},
         1,
         {"{D}/absent.jsonl"}},
        {"eval: per-example file in a missing directory",
         {"eval", ckpt, "--task", "mc", "--data", "{D}/task.jsonl", "--per-example",
          "{D}/absent/scores.jsonl", "--threads", "1"},
         1,
         {"{D}/absent/scores.jsonl"}},
        {"train: unknown task-eval format",
         train_with({"--task-eval", "piqa:{D}/task.jsonl"}),
         1,
         {"task-eval", "piqa"}},
        {"train: task-eval file with a bad line",
         train_with({"--task-eval", "mc:{D}/bad_task.jsonl"}),
         1,
         {"{D}/bad_task.jsonl:2", "choices"}},
        {"train: task-eval interval without a task",
         train_with({"--task-eval-interval", "5"}),
         2,
         {"--task-eval-interval", "--task-eval"}},
        // ---- sample ----
        {"sample: missing checkpoint", {"sample", "{D}/absent.h5"}, 1, {"{D}/absent.h5"}},
        {"sample: negative temperature", {"sample", ckpt, "--temperature", "-1"}, 1, {"temperature"}},
        {"sample: top-p above 1", {"sample", ckpt, "--top-p", "1.5"}, 1, {"top-p"}},
        {"sample: no samples", {"sample", ckpt, "--num-samples", "0"}, 1, {"num-samples"}},
        {"sample: negative top-k", {"sample", ckpt, "--top-k", "-1"}, 1, {"top-k"}},
        {"sample: prompt fills the context",
         {"sample", ckpt, "--threads", "1", "--prompt",
          "the cat sees the red ball. the dog likes the moon. my sister finds an apple. the bird keeps the "
          "river."},
         1,
         {"context"}},
        // ---- bench ----
        {"bench: negative peak", {"bench", "--peak-tflops", "-1"}, 2, {"--peak-tflops"}},
        {"bench: unknown precision", {"bench", "--precision", "fp4"}, 1, {"fp4"}},
        {"bench: unknown attention", {"bench", "--attention", "other"}, 2, {"--attention", "other"}},
        {"bench: zero batch", {"bench", "-b", "0", "--steps", "1"}, 1, {"batch"}},
        {"bench: unknown model", {"bench", "--model", "d7"}, 1, {"d7"}},
        {"bench: JSON into a missing directory",
         tiny_bench_writing("{D}/absent/out.json"),
         1,
         {"{D}/absent/out.json"}},
        {"bench: unknown exchange", {"bench", "--gradient-exchange", "sideways"}, 2, {"sideways"}},
    };
}

TEST_F(BadInputTest, EveryCaseIsOneLineNonZeroAndDamagesNothing) {
    const std::vector<BadInput> cases = bad_inputs();
    EXPECT_GE(cases.size(), 60u);
    for (const BadInput& bad : cases) check(bad);
}

// Under a 3 GiB address-space cap (ulimit -v), a 70000-token context: the CPU attention's
// scratch alone is tens of GiB. Before the memory check this died of std::bad_alloc (rc 134).
TEST_F(BadInputTest, RunTooLargeForTheMemoryIsRefusedUpFront) {
#ifdef __SANITIZE_ADDRESS__
    GTEST_SKIP() << "AddressSanitizer reserves terabytes of shadow address space at start, so a mixgpt "
                    "built with it cannot run under an address-space cap (RLIMIT_AS)";
#endif
    SpawnLimits limits;
    limits.address_space_bytes = size_t{3} << 30;
    check({"train: T=70000 under ulimit -v 3 GiB",
           {"train", "--dataset", "{DATA}", "--model", "d2", "-b", "1", "-t", "70000", "--steps", "1",
            "--threads", "1", "-o", "{D}/new_run"},
           1,
           {"memory: this run needs", "RLIMIT_AS", "--recompute"}},
          limits);
}

// A small tmpfs mounted inside the fixture; unmounted when the test ends.
class SmallDisk {
public:
    SmallDisk(const std::string& path, const std::string& size) : path_(path) {
        std::filesystem::create_directories(path);
        mounted_ = ::mount("tmpfs", path.c_str(), "tmpfs", 0, ("size=" + size).c_str()) == 0;
    }
    ~SmallDisk() {
        if (mounted_) ::umount2(path_.c_str(), MNT_DETACH);
        std::error_code ignored;
        std::filesystem::remove_all(path_, ignored);
    }
    bool mounted() const { return mounted_; }

private:
    std::string path_;
    bool mounted_ = false;
};

// A corpus of about 4 MB in one file: more than the small disks hold once tokenized.
std::string big_corpus(const TempDirectory& directory) {
    std::string text;
    for (const std::string& document : testing_support::generated_documents(20000, 3)) text += document;
    return directory.write("big.txt", text);
}

TEST_F(BadInputTest, FullDiskIsOneLineAndKeepsWhatWasThere) {
    SmallDisk disk(fixture_->file("full"), "2m");
    if (!disk.mounted()) GTEST_SKIP() << "cannot mount a tmpfs here (needs root): full-disk cases not run";
    TempDirectory scratch("mixgpt_bad_inputs_corpus");
    const std::string corpus = big_corpus(scratch);
    const std::vector<std::string> prepare = {
        "prepare", "--tokenizer", "{DATA}/tokenizer.model", "--threads", "1", "--val-fraction", "0"};
    auto with = [](std::vector<std::string> arguments, const std::vector<std::string>& extra) {
        arguments.insert(arguments.end(), extra.begin(), extra.end());
        return arguments;
    };
    // Before the fix: HDF5 error, then SIGSEGV at exit (a file left open on the error path).
    check({"prepare: disk full",
           with(prepare, {"--output", "{D}/full/ds", corpus}),
           1,
           {"{D}/full/ds/shard-000000.h5", "no space left on device"}});
    EXPECT_FALSE(std::filesystem::exists(fixture_->file("full/ds")));

    ASSERT_EQ(run(with(prepare, {"--output", "{D}/full/small", "{D}/corpus"})).exit_status, 0);
    check({"prepare --force over a dataset: disk full",
           with(prepare, {"--output", "{D}/full/small", "--force", corpus}),
           1,
           {"{D}/full/small.tmp-", "no space left on device"}});
}

TEST_F(BadInputTest, FullDiskDuringCheckpointKeepsThePreviousOne) {
    SmallDisk disk(fixture_->file("full"), "1m");
    if (!disk.mounted()) GTEST_SKIP() << "cannot mount a tmpfs here (needs root): full-disk cases not run";
    const Outcome outcome = run(train_with(
        {"--steps", "40", "--checkpoint-interval", "1", "--keep-checkpoints", "100"}, "{D}/full/run"));
    EXPECT_EQ(outcome.exit_status, 1) << outcome.err;
    std::string line;
    ASSERT_TRUE(is_one_error_line(outcome.err, line));
    EXPECT_NE(line.find("no space left on device"), std::string::npos) << line;
    const std::smatch kept = [&] {
        std::smatch match;
        std::regex_search(line, match, std::regex("the previous checkpoint (\\S+) is kept intact"));
        return match;
    }();
    ASSERT_EQ(kept.size(), 2u) << line;
    EXPECT_NO_THROW(verify_checkpoint_file(kept[1].str()));
    EXPECT_EQ(list_checkpoints(checkpoint_directory(fixture_->file("full/run"))).back(), kept[1].str());
}

TEST_F(BadInputTest, FullDiskForBenchJsonLeavesNoFile) {
    SmallDisk disk(fixture_->file("full"), "64k");
    if (!disk.mounted()) GTEST_SKIP() << "cannot mount a tmpfs here (needs root): full-disk cases not run";
    {
        std::ofstream filler(fixture_->file("full/filler"), std::ios::binary);
        const std::string block(4096, 'x');
        while (filler.write(block.data(), block.size())) {
        }
    }
    check({"bench --json-out: disk full",
           tiny_bench_writing("{D}/full/bench.json"),
           1,
           {"{D}/full/bench.json", "No space left on device"}});
    EXPECT_FALSE(std::filesystem::exists(fixture_->file("full/bench.json")));
}

}  // namespace
}  // namespace mixgpt
