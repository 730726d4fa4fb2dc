// The data-parallel tests, run under `mpirun -np 2` (scripts/run_tests.sh): MPI is initialized
// before GoogleTest, every rank runs every test, and the exit status is non-zero when any rank
// had a failure. `--watchdog-scenario SECONDS` runs the hang of watchdog_scenario.h instead.
#include <gtest/gtest.h>
#include <mpi.h>

#include <cstdio>
#include <cstring>
#include <string>

#include "core/log.h"
#include "tests/mpi/watchdog_scenario.h"

int main(int argc, char** argv) {
    int provided = 0;
    MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
    if (argc == 3 && std::strcmp(argv[1], "--watchdog-scenario") == 0) {
        mixgpt::testing_support::hang_in_a_barrier(std::stod(argv[2]));
        MPI_Finalize();
        return 0;
    }
    // The trainer's log and progress lines would only bury GoogleTest's report.
    mixgpt::set_log_level(mixgpt::LogLevel::error);
    ::testing::InitGoogleTest(&argc, argv);
    int rank = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    if (rank != 0) {  // one report: rank 0's (a failure on any rank still fails the run below)
        ::testing::TestEventListeners& listeners = ::testing::UnitTest::GetInstance()->listeners();
        delete listeners.Release(listeners.default_result_printer());
    }
    int failed = RUN_ALL_TESTS() != 0 ? 1 : 0;
    const ::testing::UnitTest& unit = *::testing::UnitTest::GetInstance();
    if (rank != 0 && unit.failed_test_count() > 0) {
        // Rank 0's report does not know of these: name them, in GoogleTest's summary form.
        std::printf("[  FAILED  ] %d tests, on rank %d:\n", unit.failed_test_count(), rank);
        for (int i = 0; i < unit.total_test_suite_count(); ++i) {
            const ::testing::TestSuite& suite = *unit.GetTestSuite(i);
            for (int j = 0; j < suite.total_test_count(); ++j)
                if (suite.GetTestInfo(j)->result()->Failed())
                    std::printf("[  FAILED  ] %s.%s (rank %d)\n", suite.name(), suite.GetTestInfo(j)->name(),
                                rank);
        }
        std::fflush(stdout);
    }
    MPI_Allreduce(MPI_IN_PLACE, &failed, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    MPI_Finalize();
    return failed;
}
