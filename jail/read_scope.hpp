// The project read scope (policy::ReadScope::Project) in the jail: the plan hides everything (an empty
// read-only tmpfs over "/", as `denyRead: ["/"]` does) and binds the scope back in read-only, with the
// secrets of read_scope_hidden_paths() masked inside; Landlock (where the kernel has it) then allows reading
// and executing files only below what the mounts show. Internal to the jail module.
#pragma once

#include <filesystem>
#include <vector>

#include "jail/mount_plan.hpp"

namespace cordon::jail {

// `input` with the project read scope turned into mask and re-expose rules the planner knows: denyRead "/"
// and the hidden secrets (globs expanded on what exists, without a notice: they are cordon's, not the
// user's), allowRead = the scope's entries but /proc, /dev and /tmp (the jail makes its own) and those inside
// a hidden secret. The user's denyRead entries stay: denyRead wins inside the scope.
PlanInput with_read_scope(const PlanInput& input);

// The paths the plan shows (for Landlock's read rules): every writable or read-only bind, the private /tmp,
// /proc and /dev; "/" itself when it is not masked (`allowRead: ["/"]`).
std::vector<std::filesystem::path> shown_roots(const MountPlan& plan);

}  // namespace cordon::jail
