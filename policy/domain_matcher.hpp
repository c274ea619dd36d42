// DomainMatcher: a reversed-label trie over domain patterns, so that the cost of a lookup depends on the
// number of labels of the host, never on the number of patterns. Children of all nodes live in one
// open-addressing hash table keyed by (parent node, label). Each match reports the lowest rule index among
// the matching patterns (rules are numbered in precedence order: managed first, flags last).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "policy/host_name.hpp"

namespace cordon::policy::detail {

class DomainMatcher {
  public:
    static constexpr std::uint32_t kNone = 0xffffffffu;

    DomainMatcher();
    // Adds a pattern for rule number `rule`. Rules must be added in increasing order.
    void add(const DomainPattern& pattern, std::uint32_t rule);
    // The lowest rule index of the patterns matching the normalised host (see normalise_host), or kNone.
    std::uint32_t match(HostKind kind, std::string_view host, std::uint16_t port) const;
    std::size_t size() const { return patterns_; }

  private:
    struct Node {
        std::uint32_t star = kNone;   // child for a `*` label (exactly one label)
        std::uint32_t exact = kNone;  // terminals for the name ending here
        std::uint32_t below = kNone;  // terminals for `*.name`: any name strictly below
    };
    struct Terminal {
        std::uint16_t port;  // 0 = every port
        std::uint32_t rule;
        std::uint32_t next;
    };
    struct Slot {
        std::uint64_t hash = 0;
        std::uint32_t parent = kNone;  // kNone = empty slot
        std::uint32_t label_offset = 0;
        std::uint32_t label_length = 0;
        std::uint32_t child = kNone;
    };

    std::uint32_t find_child(std::uint32_t parent, std::string_view label) const;
    std::uint32_t child_for_insert(std::uint32_t parent, std::string_view label);
    void grow();
    void push_terminal(std::uint32_t& head, std::uint16_t port, std::uint32_t rule);
    std::uint32_t best(std::uint32_t head, std::uint16_t port, std::uint32_t current) const;
    void walk(std::uint32_t node, const std::string_view* labels, std::size_t count, std::size_t consumed,
              std::uint16_t port, std::uint32_t& result) const;

    std::vector<Node> nodes_;
    std::vector<Terminal> terminals_;
    std::vector<Slot> slots_;  // power-of-two size, linear probing
    std::size_t used_slots_ = 0;
    std::string labels_;  // arena of child labels
    std::uint32_t any_name_ = kNone;
    std::unordered_map<std::string, std::uint32_t> addresses_;  // canonical IP literal -> terminals
    std::size_t patterns_ = 0;
};

}  // namespace cordon::policy::detail
