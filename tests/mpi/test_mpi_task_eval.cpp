// Multiple-choice evaluation split over 2 ranks gives exactly the single-process result: every
// example is scored by one rank, with the very sums (bit for bit) a single process computes, and
// the trainer's collective (train/task_eval.h) reports the same counts as one process alone. The
// tasks: the KJV fixture in HellaSwag's format (4 choices, ties among them) and the extra set
// with 2 to 6 choices, at B = 4, so examples of 5 and 6 choices take batches of their own.
#include <gtest/gtest.h>

#include <cstdlib>

#include "eval/multiple_choice_scoring.h"
#include "tests/mpi/mpi_test_support.h"
#include "dist/mpi_communicator.h"
#include "train/task_eval.h"

namespace mixgpt {
namespace {

using namespace testing_support;

constexpr int kRows = 4, kWindow = 256;

std::string fixture_task(const std::string& name) {
    const char* directory = std::getenv("MIXGPT_FIXTURES");
    return std::string(directory != nullptr ? directory : "tests/fixtures") + "/multiple_choice/" + name;
}

TEST(MpiTaskEval, TwoRanksGiveTheSingleProcessResult) {
    const Tokenizer tokenizer = Tokenizer::load(shared_tiny_tokenizer_path());
    GPTConfig config = tiny_config();
    config.vocab_size = tokenizer.vocab_size();
    config.max_seq_len = kWindow;
    const std::unique_ptr<Backend> backend = cpu_backend(Precision::fp32);
    GPT model(*backend, config, kRows, kWindow, Recompute::none);
    load_initial_parameters(model, 17);
    MpiCommunicator ranks(MPI_COMM_WORLD, kTestCollectiveTimeout);
    SingleProcessCommunicator alone;
    ASSERT_EQ(ranks.world_size(), 2);

    for (const auto& [format, name] :
         {std::pair<TaskFormat, const char*>{TaskFormat::hellaswag, "hellaswag.jsonl"},
          std::pair<TaskFormat, const char*>{TaskFormat::mc, "mc_extra.jsonl"}}) {
        SCOPED_TRACE(name);
        TaskLoadOptions options;
        options.format = format;
        options.window = kWindow;
        const ChoiceTask task = load_choice_task(fixture_task(name), options, tokenizer);
        const std::vector<ExampleScore> single = score_choice_task(model, task, 0, 1);
        const std::vector<ExampleScore> mine = score_choice_task(model, task, ranks.rank(), 2);
        // Per example: the rank that scored it (summed over ranks, exactly one) and its sums.
        std::vector<double> owners(task.examples.size(), 0);
        int64_t mine_count = 0;
        for (size_t e = 0; e < task.examples.size(); ++e) {
            if (!mine[e].scored) continue;
            owners[e] = 1;
            ++mine_count;
            EXPECT_EQ(mine[e].sums, single[e].sums) << "example " << e << " on rank " << ranks.rank();
            EXPECT_EQ(mine[e].choice, single[e].choice);
            EXPECT_EQ(mine[e].choice_norm, single[e].choice_norm);
        }
        ranks.all_reduce_sum_host(owners.data(), static_cast<int>(owners.size()));
        for (size_t e = 0; e < owners.size(); ++e) EXPECT_EQ(owners[e], 1.0) << "example " << e;
        EXPECT_GT(mine_count, 0) << "rank " << ranks.rank() << " did no work";
    }

    const TrainingTaskEvals evals(
        {"hellaswag:" + fixture_task("hellaswag.jsonl"), "mc:" + fixture_task("mc_extra.jsonl")}, 0,
        tokenizer, kWindow);
    const std::vector<TaskResult> split = evals.run(model, ranks);
    const std::vector<TaskResult> whole = evals.run(model, alone);
    ASSERT_EQ(split.size(), 2u);
    for (size_t t = 0; t < split.size(); ++t) {
        EXPECT_EQ(split[t].totals.examples, whole[t].totals.examples);
        EXPECT_EQ(split[t].totals.correct, whole[t].totals.correct);
        EXPECT_EQ(split[t].totals.correct_norm, whole[t].totals.correct_norm);
        EXPECT_EQ(split[t].totals.contexts_cut, whole[t].totals.contexts_cut);
        EXPECT_DOUBLE_EQ(split[t].totals.chance_sum, whole[t].totals.chance_sum);
    }
}

}  // namespace
}  // namespace mixgpt
