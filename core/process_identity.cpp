#include "core/process_identity.h"

#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <fstream>
#include <sstream>

namespace mixgpt {

std::string host_name() {
    char name[256] = {};
    if (::gethostname(name, sizeof(name) - 1) != 0 || name[0] == '\0') return "unknown host";
    return name;
}

// Field 22 of /proc/<pid>/stat, counted after the command name, which is in parentheses and may
// hold spaces and parentheses itself: the fields after the last ')' are 3, 4, ...
uint64_t process_start_time(int64_t pid) {
    std::ifstream file("/proc/" + std::to_string(pid) + "/stat");
    std::stringstream text;
    text << file.rdbuf();
    const std::string stat = text.str();
    const size_t name_end = stat.rfind(')');
    if (name_end == std::string::npos) return 0;
    std::istringstream fields(stat.substr(name_end + 1));
    std::string field;
    for (int number = 3; number < 22 && fields >> field; ++number) {
    }
    uint64_t start = 0;
    fields >> start;
    return start;
}

ProcessIdentity ProcessIdentity::self() {
    ProcessIdentity identity;
    identity.pid = ::getpid();
    identity.start = process_start_time(identity.pid);
    identity.host = host_name();
    return identity;
}

bool ProcessIdentity::is_gone() const {
    if (host != host_name() || pid <= 0 || pid == ::getpid()) return false;
    if (::kill(static_cast<pid_t>(pid), 0) != 0 && errno == ESRCH) return true;
    const uint64_t running_since = process_start_time(pid);
    return start != 0 && running_since != 0 && running_since != start;
}

}  // namespace mixgpt
