#include "policy/huge_pages.hpp"

#include <sys/mman.h>

#include <cstdint>

namespace cordon::policy::detail {
namespace {
constexpr std::size_t kHugePage = 2u << 20;
}

bool is_large(std::size_t bytes) {
    return bytes >= kHugePage;
}

void advise_huge_pages(void* data, std::size_t bytes) {
    if (bytes < 2 * kHugePage) return;
    const auto begin = reinterpret_cast<std::uintptr_t>(data);
    const std::uintptr_t aligned = (begin + kHugePage - 1) & ~(kHugePage - 1);
    const std::uintptr_t end = (begin + bytes) & ~(kHugePage - 1);
    if (end > aligned) madvise(reinterpret_cast<void*>(aligned), end - aligned, MADV_HUGEPAGE);
}

void* map_large(std::size_t bytes) {
    void* p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) return nullptr;
    advise_huge_pages(p, bytes);
    return p;
}

void unmap_large(void* p, std::size_t bytes) {
    munmap(p, bytes);
}

}  // namespace cordon::policy::detail
