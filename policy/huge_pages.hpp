// Memory for large load-time tables (a 100,000-domain policy touches tens of megabytes once). Each fresh 4
// KiB page costs a page fault, and on a loaded virtual machine a fault can cost tens of microseconds, so
// large buffers ask for transparent huge pages (MADV_HUGEPAGE). Advice only: without huge pages nothing
// changes.
#pragma once

#include <cstddef>
#include <new>

namespace cordon::policy::detail {

// Advises huge pages for the 2 MiB-aligned part of [data, data + bytes) when it is large enough to matter.
void advise_huge_pages(void* data, std::size_t bytes);

// An allocator that maps large arrays directly (with huge-page advice) and leaves small ones to operator new.
template <typename T>
struct HugePageAllocator {
    using value_type = T;
    HugePageAllocator() = default;
    template <typename U>
    HugePageAllocator(const HugePageAllocator<U>&) {}
    T* allocate(std::size_t n);
    void deallocate(T* p, std::size_t n);
    template <typename U>
    bool operator==(const HugePageAllocator<U>&) const {
        return true;
    }
};

void* map_large(std::size_t bytes);  // a 2 MiB-aligned mapping with huge-page advice; nullptr on failure
void unmap_large(void* p, std::size_t bytes);  // only for pointers from map_large
bool is_large(std::size_t bytes);              // worth a mapping of its own (2 MiB or more)

template <typename T>
T* HugePageAllocator<T>::allocate(std::size_t n) {
    const std::size_t bytes = n * sizeof(T);
    if (is_large(bytes)) {
        if (void* p = map_large(bytes)) return static_cast<T*>(p);
        throw std::bad_alloc();
    }
    return static_cast<T*>(::operator new(bytes));
}

template <typename T>
void HugePageAllocator<T>::deallocate(T* p, std::size_t n) {
    const std::size_t bytes = n * sizeof(T);
    if (is_large(bytes)) {
        unmap_large(p, bytes);
    } else {
        ::operator delete(p);
    }
}

}  // namespace cordon::policy::detail
