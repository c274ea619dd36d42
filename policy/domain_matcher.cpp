#include "policy/domain_matcher.hpp"

#include <algorithm>
#include <array>
#include <cstring>

namespace cordon::policy::detail {
namespace {

constexpr std::uint32_t kRootSlot = DomainMatcher::kNone - 1;

std::uint32_t hash_key(std::uint32_t parent, std::string_view label) {
    std::uint64_t h = 0xcbf29ce484222325ull ^ (static_cast<std::uint64_t>(parent) * 0x9e3779b97f4a7c15ull);
    for (char c : label) {
        h ^= static_cast<unsigned char>(c);
        h *= 0x100000001b3ull;
    }
    h ^= h >> 32;
    return static_cast<std::uint32_t>(h);
}

// Splits a name into labels, left to right. Returns the count, or kMaxLabels + 1 when there are too many.
constexpr std::size_t kMaxLabels = 128;
std::size_t split_labels(std::string_view name, std::array<std::string_view, kMaxLabels>& labels) {
    std::size_t count = 0;
    std::size_t start = 0;
    for (std::size_t i = 0; i <= name.size(); ++i) {
        if (i == name.size() || name[i] == '.') {
            if (count == kMaxLabels) return kMaxLabels + 1;
            labels[count++] = name.substr(start, i - start);
            start = i + 1;
        }
    }
    return count;
}

// A cheap 1-of-16 bit from a label, for the per-node child filter.
std::uint16_t label_bit(std::string_view label) {
    const unsigned mix = static_cast<unsigned>(label.size()) * 7u +
                         static_cast<unsigned char>(label.front()) * 31u +
                         static_cast<unsigned char>(label.back());
    return static_cast<std::uint16_t>(1u << (mix & 15u));
}

std::size_t next_power_of_two(std::size_t n) {
    std::size_t p = 64;
    while (p < n)
        p *= 2;
    return p;
}

}  // namespace

DomainMatcher::DomainMatcher() : slots_(64) {
    root_.id = 0;
}

void DomainMatcher::reserve(std::size_t patterns) {
    // About one and a half new trie nodes per pattern, and the table at most 70% full.
    const std::size_t wanted = next_power_of_two(patterns * 2);
    if (wanted <= slots_.size()) return;
    if (used_ == 0) {
        slots_.assign(wanted, Slot{});
        return;
    }
    while (slots_.size() < wanted)
        grow();
}

bool DomainMatcher::label_equals(const Slot& slot, std::string_view label) const {
    if (slot.length != label.size()) return false;
    if (label.size() <= kInline) return std::memcmp(slot.label, label.data(), label.size()) == 0;
    std::uint32_t offset = 0;
    std::memcpy(&offset, slot.label, sizeof offset);
    return std::string_view(labels_).substr(offset, label.size()) == label;
}

std::uint32_t DomainMatcher::find(std::uint32_t parent, std::string_view label) const {
    const std::uint32_t h = hash_key(parent, label);
    const std::size_t mask = slots_.size() - 1;
    for (std::size_t i = h & mask;; i = (i + 1) & mask) {
        const Slot& slot = slots_[i];
        if (slot.parent == kNone) return kNone;
        if (slot.hash == h && slot.parent == parent && label_equals(slot, label))
            return static_cast<std::uint32_t>(i);
    }
}

void DomainMatcher::grow() {
    std::vector<Slot, HugePageAllocator<Slot>> old = std::move(slots_);
    slots_.assign(old.size() * 2, Slot{});
    const std::size_t mask = slots_.size() - 1;
    for (const Slot& slot : old) {
        if (slot.parent == kNone) continue;
        std::size_t i = slot.hash & mask;
        while (slots_[i].parent != kNone)
            i = (i + 1) & mask;
        slots_[i] = slot;
    }
}

std::uint32_t DomainMatcher::insert_child(std::uint32_t parent_slot, std::string_view label) {
    const std::uint32_t parent = parent_slot == kRootSlot ? 0 : slots_[parent_slot].id;
    if (std::uint32_t existing = find(parent, label); existing != kNone) return existing;
    if ((used_ + 1) * 10 > slots_.size() * 7) grow();  // moves slots: callers keep only the returned index
    const std::uint32_t h = hash_key(parent, label);
    const std::size_t mask = slots_.size() - 1;
    std::size_t i = h & mask;
    while (slots_[i].parent != kNone)
        i = (i + 1) & mask;
    Slot& slot = slots_[i];
    slot.hash = h;
    slot.parent = parent;
    slot.id = next_id_++;
    slot.length = static_cast<std::uint8_t>(label.size());
    if (label.size() <= kInline) {
        std::memcpy(slot.label, label.data(), label.size());
    } else {
        const auto offset = static_cast<std::uint32_t>(labels_.size());
        std::memcpy(slot.label, &offset, sizeof offset);
        labels_.append(label);
    }
    ++used_;
    return static_cast<std::uint32_t>(i);
}

// A list of one port-less terminal (the common case) is stored in the head itself, tagged with kInlineRule,
// so a match needs no access to terminals_.
void DomainMatcher::push_terminal(std::uint32_t& head, std::uint16_t port, std::uint32_t rule) {
    if (head == kNone && port == 0 && rule < kInlineRule) {
        head = kInlineRule | rule;
        return;
    }
    if (head != kNone && (head & kInlineRule) != 0) {
        terminals_.push_back(Terminal{0, head & ~kInlineRule, kNone});
        head = static_cast<std::uint32_t>(terminals_.size() - 1);
    }
    terminals_.push_back(Terminal{port, rule, head});
    head = static_cast<std::uint32_t>(terminals_.size() - 1);
}

void DomainMatcher::add(const DomainPattern& pattern, std::uint32_t rule) {
    ++patterns_;
    switch (pattern.kind) {
        case DomainPattern::Kind::AnyName:
            push_terminal(any_name_, pattern.port, rule);
            return;
        case DomainPattern::Kind::IPv4:
        case DomainPattern::Kind::IPv6: {
            auto [it, inserted] = addresses_.try_emplace(pattern.name, kNone);
            push_terminal(it->second, pattern.port, rule);
            return;
        }
        case DomainPattern::Kind::Name:
            break;
    }
    std::array<std::string_view, kMaxLabels> labels;
    const std::size_t count = split_labels(pattern.name, labels);
    // insert_child may grow the table, which moves slots: only the index it returns is used afterwards.
    std::uint32_t slot = kRootSlot;
    for (std::size_t i = count; i-- > 0;) {
        Slot& parent = slot == kRootSlot ? root_ : slots_[slot];
        if (labels[i] == "*") {
            parent.has_star = 1;
        } else {
            parent.children = static_cast<std::uint16_t>(parent.children | label_bit(labels[i]));
        }
        slot = insert_child(slot, labels[i]);
    }
    Slot& node = slot == kRootSlot ? root_ : slots_[slot];
    push_terminal(pattern.subdomains ? node.below : node.exact, pattern.port, rule);
}

std::uint32_t DomainMatcher::best(std::uint32_t head, std::uint16_t port, std::uint32_t current) const {
    if (head == kNone) return current;
    if ((head & kInlineRule) != 0) return std::min(head & ~kInlineRule, current);
    for (std::uint32_t t = head; t != kNone; t = terminals_[t].next) {
        const Terminal& terminal = terminals_[t];
        if ((terminal.port == 0 || terminal.port == port) && terminal.rule < current) current = terminal.rule;
    }
    return current;
}

// Walks the trie from the rightmost label. A node reached after `consumed` labels matches `*.name` patterns
// when labels remain, and exact patterns when none remain. `*` children are followed as well as the label's
// own child.
void DomainMatcher::walk(std::uint32_t slot, const std::string_view* labels, std::size_t count,
                         std::size_t consumed, std::uint16_t port, std::uint32_t& result) const {
    const Slot& node = slot == kRootSlot ? root_ : slots_[slot];
    if (consumed == count) {
        result = best(node.exact, port, result);
        return;
    }
    result = best(node.below, port, result);
    const std::string_view label = labels[count - 1 - consumed];
    if ((node.children & label_bit(label)) != 0) {
        if (std::uint32_t child = find(node.id, label); child != kNone)
            walk(child, labels, count, consumed + 1, port, result);
    }
    if (node.has_star != 0) {
        if (std::uint32_t star = find(node.id, "*"); star != kNone)
            walk(star, labels, count, consumed + 1, port, result);
    }
}

std::uint32_t DomainMatcher::match(HostKind kind, std::string_view host, std::uint16_t port) const {
    std::uint32_t result = kNone;
    switch (kind) {
        case HostKind::Invalid:
            return kNone;
        case HostKind::IPv4:
        case HostKind::IPv6: {
            if (addresses_.empty()) return kNone;
            auto it = addresses_.find(std::string(host));
            return it == addresses_.end() ? kNone : best(it->second, port, result);
        }
        case HostKind::Name:
            break;
    }
    result = best(any_name_, port, result);
    std::array<std::string_view, kMaxLabels> labels;
    const std::size_t count = split_labels(host, labels);
    if (count > kMaxLabels) return result;
    walk(kRootSlot, labels.data(), count, 0, port, result);
    return result;
}

}  // namespace cordon::policy::detail
