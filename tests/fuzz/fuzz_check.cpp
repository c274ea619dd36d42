// `cordon check` as the command line runs it (cli/cmd_check.cpp): policy flags and a TARGET (URL, host,
// host:port, [v6]:port, read:PATH, write:PATH) parsed, the policy built from the flags, the decision printed
// (text and --json). Rule strings arrive as flag values (--allow-domain, --deny-domain, --allow-write, ...).
//
// Input: lines. The last line is the TARGET; each line before it is the value of one policy flag, the flag
// picked by the line's first byte (mod the list below), the value being the rest of the line.
#include <fcntl.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <iostream>
#include <iterator>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "cli/args.hpp"
#include "cli/commands.hpp"

namespace {

const char* const kFlags[] = {"--allow-domain", "--deny-domain", "--allow-write",  "--deny-write",
                              "--allow-read",   "--deny-read",   "--allow-address"};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    static bool quiet = [] {
        // The verdicts go to stdout and stderr: keep libFuzzer's output readable.
        // libFuzzer reports on stderr, cmd_check too: its messages go to stdout's /dev/null (std::cerr is
        // redirected, libFuzzer's own fd 2 stays).
        int null = ::open("/dev/null", O_WRONLY);
        ::dup2(null, 1);
        std::cerr.rdbuf(std::cout.rdbuf());
        return true;
    }();
    (void)quiet;
    std::string_view input(reinterpret_cast<const char*>(data), size);
    if (input.find('\0') != std::string_view::npos) return 0;  // argv strings cannot hold NUL
    std::vector<std::string> args = {"--no-discover", "--managed-dir", "/nonexistent-cordon-fuzz"};
    std::vector<std::string_view> lines;
    for (std::size_t at; (at = input.find('\n')) != std::string_view::npos; input.remove_prefix(at + 1))
        lines.push_back(input.substr(0, at));
    std::string target(input);
    for (auto line : lines) {
        if (line.empty()) continue;
        args.push_back(kFlags[static_cast<unsigned char>(line[0]) % std::size(kFlags)]);
        args.emplace_back(line.substr(1));
    }
    if (size > 0 && (data[0] & 0x80)) args.push_back("--json");
    args.push_back("--");
    args.push_back(target);
    std::vector<char*> argv;
    for (auto& a : args)
        argv.push_back(a.data());
    argv.push_back(nullptr);
    try {
        int status = cordon::cli::cmd_check(static_cast<int>(args.size()), argv.data());
        if (status < 0 || status > 2) __builtin_trap();
    } catch (const cordon::cli::UsageError&) {
        // a usage error: main() prints it and exits 2
    }
    return 0;
}
