// A collective that never completes, for tests/test_train_watchdog.cpp: rank 0 enters a barrier
// that rank 1 never joins (rank 1 sleeps instead), so rank 0's collective watchdog must end the
// job after `timeout_seconds`, with a message naming rank 0 and the barrier.
#pragma once

namespace mixgpt::testing_support {

void hang_in_a_barrier(double timeout_seconds);

}  // namespace mixgpt::testing_support
