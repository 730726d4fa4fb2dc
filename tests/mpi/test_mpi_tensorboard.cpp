// `train --tensorboard` under 2 ranks: rank 0 alone writes, so the shared folder holds one event
// file, and it agrees with metrics.jsonl (the mean loss over both ranks) when read by the
// independent reader (scripts/tensorboard_events/check_event_files.py).
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <iterator>

#include "tests/mpi/mpi_test_support.h"
#include "tests/test_python_support.h"
#include "train/trainer.h"

namespace mixgpt {
namespace {

using namespace testing_support;

TEST(DataParallelTensorBoardTest, RankZeroAloneWritesTheEventFile) {
    SharedTempDirectory directory("mixgpt_mpi_tensorboard");
    TrainOptions options = tiny_train_options(directory.file("run"));
    options.dataset = shared_tiny_dataset_path();
    options.batch_size = 2;
    options.steps = 4;
    options.eval_interval = 2;
    options.eval_batches = 2;
    options.collective_timeout = kTestCollectiveTimeout;
    options.tensorboard_dir = directory.file("tb");
    run_training(options);
    if (world_rank() != 0) return;
    size_t files = 0;
    for ([[maybe_unused]] const auto& entry : std::filesystem::directory_iterator(directory.file("tb")))
        ++files;
    EXPECT_EQ(files, 1u);
    const std::string output = directory.file("reader.txt");
    EXPECT_EQ(test::run_python({"scripts/tensorboard_events/check_event_files.py", directory.file("tb"),
                                metrics_path(options.output_dir)},
                               output),
              0)
        << std::string(std::istreambuf_iterator<char>(std::ifstream(output).rdbuf()), {});
}

}  // namespace
}  // namespace mixgpt
