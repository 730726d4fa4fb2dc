#include "core/stop_signal.h"

#include <unistd.h>

#include <csignal>

#include "core/error.h"

namespace mixgpt {
namespace {

volatile std::sig_atomic_t g_received_signal = 0;
bool g_guard_active = false;
struct sigaction g_previous_interrupt;
struct sigaction g_previous_terminate;

extern "C" void handle_stop_signal(int signal_number) {
    if (g_received_signal != 0) _exit(128 + signal_number);
    g_received_signal = signal_number;
}

void install(int signal_number, struct sigaction* previous) {
    struct sigaction action {};
    action.sa_handler = handle_stop_signal;
    sigemptyset(&action.sa_mask);
    action.sa_flags = SA_RESTART;
    if (sigaction(signal_number, &action, previous) != 0) throw Error("cannot install a signal handler");
}

}  // namespace

StopSignalGuard::StopSignalGuard() {
    MIXGPT_REQUIRE(!g_guard_active, "StopSignalGuard: only one guard may be active at a time");
    g_received_signal = 0;
    install(SIGINT, &g_previous_interrupt);
    install(SIGTERM, &g_previous_terminate);
    g_guard_active = true;
}

StopSignalGuard::~StopSignalGuard() {
    sigaction(SIGINT, &g_previous_interrupt, nullptr);
    sigaction(SIGTERM, &g_previous_terminate, nullptr);
    g_guard_active = false;
}

bool StopSignalGuard::stop_requested() const { return g_received_signal != 0; }

int StopSignalGuard::signal_number() const { return static_cast<int>(g_received_signal); }

}  // namespace mixgpt
