// `cordon doctor` in the portable build (CORDON_PORTABLE: no Linux jail). The layers it examines (namespaces,
// seccomp, Landlock, cgroups) are the Linux jail's; this build runs commands under Seatbelt's sandbox-exec
// (macOS) instead, so there is nothing for it to try.
#include <iostream>

#include "cli/commands.hpp"

namespace cordon::cli {

int cmd_doctor(int /*argc*/, char** /*argv*/) {
    std::cerr
        << "cordon doctor: this build has no Linux jail (built with CORDON_PORTABLE): the layers doctor "
           "examines are Linux's; `cordon run` here runs the command under sandbox-exec (macOS)\n";
    return 2;
}

}  // namespace cordon::cli
