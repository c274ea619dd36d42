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

namespace {
std::size_t round_up(std::size_t bytes) {
    return (bytes + kHugePage - 1) & ~(kHugePage - 1);
}
}  // namespace

// Maps a 2 MiB-aligned region of whole huge pages, so that every page of it can be a huge page.
void* map_large(std::size_t bytes) {
    const std::size_t size = round_up(bytes);
    void* raw = mmap(nullptr, size + kHugePage, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (raw == MAP_FAILED) return nullptr;
    const auto begin = reinterpret_cast<std::uintptr_t>(raw);
    const std::uintptr_t aligned = (begin + kHugePage - 1) & ~(kHugePage - 1);
    if (aligned > begin) munmap(raw, aligned - begin);
    const std::uintptr_t tail = aligned + size;
    if (begin + size + kHugePage > tail)
        munmap(reinterpret_cast<void*>(tail), begin + size + kHugePage - tail);
    void* p = reinterpret_cast<void*>(aligned);
    madvise(p, size, MADV_HUGEPAGE);
    return p;
}

void unmap_large(void* p, std::size_t bytes) {
    munmap(p, round_up(bytes));
}

}  // namespace cordon::policy::detail
