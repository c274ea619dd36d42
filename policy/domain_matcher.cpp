#include "policy/domain_matcher.hpp"

#include <array>

namespace cordon::policy::detail {
namespace {

std::uint64_t hash_key(std::uint32_t parent, std::string_view label) {
    std::uint64_t h = 0xcbf29ce484222325ull ^ (static_cast<std::uint64_t>(parent) * 0x9e3779b97f4a7c15ull);
    for (char c : label) {
        h ^= static_cast<unsigned char>(c);
        h *= 0x100000001b3ull;
    }
    return h ^ (h >> 29);
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

}  // namespace

DomainMatcher::DomainMatcher() : nodes_(1), slots_(64) {}

std::uint32_t DomainMatcher::find_child(std::uint32_t parent, std::string_view label) const {
    const std::uint64_t h = hash_key(parent, label);
    const std::size_t mask = slots_.size() - 1;
    for (std::size_t i = h & mask;; i = (i + 1) & mask) {
        const Slot& slot = slots_[i];
        if (slot.parent == kNone) return kNone;
        if (slot.hash == h && slot.parent == parent && slot.label_length == label.size() &&
            std::string_view(labels_).substr(slot.label_offset, slot.label_length) == label)
            return slot.child;
    }
}

void DomainMatcher::grow() {
    std::vector<Slot> old = std::move(slots_);
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

std::uint32_t DomainMatcher::child_for_insert(std::uint32_t parent, std::string_view label) {
    if (label == "*") {
        if (nodes_[parent].star == kNone) {
            nodes_[parent].star = static_cast<std::uint32_t>(nodes_.size());
            nodes_.emplace_back();
        }
        return nodes_[parent].star;
    }
    if (std::uint32_t existing = find_child(parent, label); existing != kNone) return existing;
    if ((used_slots_ + 1) * 4 > slots_.size() * 3) grow();
    const std::uint64_t h = hash_key(parent, label);
    const std::size_t mask = slots_.size() - 1;
    std::size_t i = h & mask;
    while (slots_[i].parent != kNone)
        i = (i + 1) & mask;
    const auto child = static_cast<std::uint32_t>(nodes_.size());
    nodes_.emplace_back();
    slots_[i] = Slot{h, parent, static_cast<std::uint32_t>(labels_.size()),
                     static_cast<std::uint32_t>(label.size()), child};
    labels_.append(label);
    ++used_slots_;
    return child;
}

void DomainMatcher::push_terminal(std::uint32_t& head, std::uint16_t port, std::uint32_t rule) {
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
    std::uint32_t node = 0;
    for (std::size_t i = count; i-- > 0;)
        node = child_for_insert(node, labels[i]);
    push_terminal(pattern.subdomains ? nodes_[node].below : nodes_[node].exact, pattern.port, rule);
}

std::uint32_t DomainMatcher::best(std::uint32_t head, std::uint16_t port, std::uint32_t current) const {
    for (std::uint32_t t = head; t != kNone; t = terminals_[t].next) {
        const Terminal& terminal = terminals_[t];
        if ((terminal.port == 0 || terminal.port == port) && terminal.rule < current) current = terminal.rule;
    }
    return current;
}

// Walks the trie from the rightmost label. A node reached after `consumed` labels matches `*.name` patterns
// when labels remain, and exact patterns when none remain. `*` children are followed as well as the label's
// own child.
void DomainMatcher::walk(std::uint32_t node, const std::string_view* labels, std::size_t count,
                         std::size_t consumed, std::uint16_t port, std::uint32_t& result) const {
    const Node& n = nodes_[node];
    if (consumed == count) {
        result = best(n.exact, port, result);
        return;
    }
    result = best(n.below, port, result);
    const std::string_view label = labels[count - 1 - consumed];
    if (std::uint32_t child = find_child(node, label); child != kNone)
        walk(child, labels, count, consumed + 1, port, result);
    if (n.star != kNone) walk(n.star, labels, count, consumed + 1, port, result);
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
    walk(0, labels.data(), count, 0, port, result);
    return result;
}

}  // namespace cordon::policy::detail
