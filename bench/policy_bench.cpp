// policy_bench: loads a generated settings file of 100,000 domain patterns (exact, `*.` wildcard, inner `*`,
// with and without ports) and measures the load time and the cost of decide_connect over hits and misses.
//   build/bench/policy_bench [PATTERNS]
#include <sys/mman.h>
#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include "policy/policy.hpp"

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

// CPU time of this thread: on a shared machine, time spent descheduled is not the policy's cost.
double thread_cpu_ns() {
    timespec ts{};
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return static_cast<double>(ts.tv_sec) * 1e9 + static_cast<double>(ts.tv_nsec);
}

namespace {

double median(std::vector<double> values) {
    std::sort(values.begin(), values.end());
    return values[values.size() / 2];
}

std::string pattern_for(std::size_t i) {
    const std::string base = "svc" + std::to_string(i) + ".team" + std::to_string(i % 97) + ".example" +
                             std::to_string(i % 13) + ".com";
    switch (i % 5) {
        case 0:
            return "*." + base;
        case 1:
            return base + ":443";
        case 2:
            return "api.*." + base;
        default:
            return base;
    }
}

// The cost of one page fault right now: on a shared virtual machine it varies by two orders of magnitude and
// dominates a cold load (which touches ~30 MB for 100,000 rules), so it is printed next to the results.
double page_fault_us() {
    constexpr std::size_t kBytes = 16u << 20;
    auto start = Clock::now();
    void* p = mmap(nullptr, kBytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) return 0;
    for (std::size_t i = 0; i < kBytes; i += 4096)
        static_cast<volatile char*>(p)[i] = 1;
    auto end = Clock::now();
    munmap(p, kBytes);
    return std::chrono::duration<double, std::micro>(end - start).count() / (kBytes / 4096);
}

}  // namespace

int main(int argc, char** argv) {
    const std::size_t count = argc > 1 ? std::strtoul(argv[1], nullptr, 10) : 100000;
    char tmpl[] = "/tmp/cordon-bench-XXXXXX";
    if (mkdtemp(tmpl) == nullptr) {
        std::perror("mkdtemp");
        return 1;
    }
    const fs::path dir = tmpl;
    const fs::path file = dir / "settings.json";
    {
        std::ofstream out(file);
        out << "{\n  \"sandbox\": {\n    \"network\": {\n      \"allowedDomains\": [\n";
        for (std::size_t i = 0; i < count; ++i)
            out << "        \"" << pattern_for(i) << "\"" << (i + 1 < count ? ",\n" : "\n");
        out << "      ],\n      \"deniedDomains\": [\"*.blocked.example0.com\", \"evil.example1.com\"]\n"
               "    }\n  }\n}\n";
    }
    std::printf("settings file: %zu patterns, %ju bytes\n", count,
                static_cast<std::uintmax_t>(fs::file_size(file)));

    cordon::policy::LoadOptions options;
    options.cwd = dir;
    options.home = dir;
    options.managed_dir = dir / "no-managed";
    options.discover = false;
    options.settings_files = {file};

    std::vector<double> load_ms, load_cpu_ms;
    long first_load_faults = 0;
    cordon::policy::PolicyPtr policy;
    for (int run = 0; run < 7; ++run) {
        policy.reset();
        rusage usage_before{};
        getrusage(RUSAGE_SELF, &usage_before);
        const double cpu_start = thread_cpu_ns();
        auto start = Clock::now();
        auto result = cordon::policy::load_policy(options);
        auto end = Clock::now();
        load_cpu_ms.push_back((thread_cpu_ns() - cpu_start) / 1e6);
        if (auto* error = std::get_if<cordon::policy::LoadError>(&result)) {
            std::fprintf(stderr, "load failed: %s\n", error->message.c_str());
            return 1;
        }
        policy = std::get<cordon::policy::PolicyPtr>(result);
        load_ms.push_back(std::chrono::duration<double, std::milli>(end - start).count());
        rusage usage_after{};
        getrusage(RUSAGE_SELF, &usage_after);
        if (run == 0) first_load_faults = usage_after.ru_minflt - usage_before.ru_minflt;
        if (std::getenv("BENCH_VERBOSE") != nullptr) std::printf("  load %d: %.1f ms\n", run, load_ms.back());
    }
    std::printf(
        "load_policy: median %.1f ms wall (min %.1f), median %.1f ms CPU (7 runs); first (cold) load %.1f "
        "ms with %ld page faults\n",
        median(load_ms), *std::min_element(load_ms.begin(), load_ms.end()), median(load_cpu_ms), load_ms[0],
        first_load_faults);

    // Targets: half hits (exact, port-limited, deep subdomains of `*.` patterns, inner-wildcard names), half
    // misses (unknown names, wrong ports, the bare domain of a `*.` pattern).
    std::mt19937 rng(42);
    std::vector<std::pair<std::string, std::uint16_t>> targets;
    std::size_t expected_hits = 0;
    for (std::size_t n = 0; n < 20000; ++n) {
        const std::size_t i = rng() % count;
        const std::string base = "svc" + std::to_string(i) + ".team" + std::to_string(i % 97) + ".example" +
                                 std::to_string(i % 13) + ".com";
        if (n % 2 == 0) {
            ++expected_hits;
            switch (i % 5) {
                case 0:
                    targets.emplace_back("a.b." + base, 443);
                    break;
                case 2:
                    targets.emplace_back("api.x." + base, 443);
                    break;
                default:
                    targets.emplace_back(base, 443);
            }
        } else {
            switch (n % 3) {
                case 0:
                    targets.emplace_back("nosuch" + std::to_string(n) + ".example.org", 443);
                    break;
                case 1:
                    targets.emplace_back(i % 5 == 0 ? base : "x" + base, 443);
                    break;
                default:
                    targets.emplace_back(i % 5 == 1 ? base : "zz." + base + ".net", i % 5 == 1 ? 80 : 443);
            }
        }
    }
    std::size_t hits = 0;
    for (const auto& [host, port] : targets)
        hits += policy->decide_connect(host, port).allowed() ? 1 : 0;
    if (hits != expected_hits) {
        std::fprintf(stderr, "unexpected result: %zu hits, expected %zu\n", hits, expected_hits);
        return 1;
    }

    // Median cost per lookup over batches of kBatch lookups (a single lookup is below the clock's
    // resolution), for the mixed list and separately for hits and misses.
    constexpr std::size_t kBatch = 100;
    std::size_t sink = 0;
    auto measure = [&](const std::vector<std::pair<std::string, std::uint16_t>>& list, const char* what) {
        std::vector<double> wall_ns, cpu_ns;
        for (int round = 0; round < 20; ++round) {
            for (std::size_t b = 0; b + kBatch <= list.size(); b += kBatch) {
                const double cpu_start = thread_cpu_ns();
                auto start = Clock::now();
                for (std::size_t k = b; k < b + kBatch; ++k)
                    sink += policy->decide_connect(list[k].first, list[k].second).allowed() ? 1 : 0;
                auto end = Clock::now();
                cpu_ns.push_back((thread_cpu_ns() - cpu_start) / kBatch);
                wall_ns.push_back(std::chrono::duration<double, std::nano>(end - start).count() / kBatch);
            }
        }
        std::sort(wall_ns.begin(), wall_ns.end());
        std::printf(
            "decide_connect %-6s: median %4.0f ns wall (p99 %5.0f), median %4.0f ns CPU per lookup (%zu "
            "lookups)\n",
            what, median(wall_ns), wall_ns[wall_ns.size() * 99 / 100], median(cpu_ns),
            wall_ns.size() * kBatch);
    };
    std::vector<std::pair<std::string, std::uint16_t>> hit_list, miss_list;
    for (std::size_t n = 0; n < targets.size(); ++n)
        (n % 2 == 0 ? hit_list : miss_list).push_back(targets[n]);
    measure(targets, "mixed");
    measure(hit_list, "hits");
    measure(miss_list, "misses");
    std::printf("(%zu hits of %zu targets)\n", hits, targets.size());
    std::printf("page fault cost now: %.2f us (a cold load touches ~30 MB)\n", page_fault_us());
    std::printf("(sink %zu)\n", sink);
    fs::remove_all(dir);
    return 0;
}
