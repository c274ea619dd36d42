// DomainMatcher: a reversed-label trie over domain patterns, so that the cost of a lookup depends on the
// number of labels of the host, never on the number of patterns. The trie's nodes live in one open-addressing
// hash table keyed by (parent node, label); each slot holds its node's data and short labels inline, so one
// step down the trie touches one 32-byte slot. Each match reports the lowest rule index among the matching
// patterns (rules are numbered in precedence order: managed first, flags last).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "policy/host_name.hpp"
#include "policy/huge_pages.hpp"

namespace cordon::policy::detail {

class DomainMatcher {
  public:
    static constexpr std::uint32_t kNone = 0xffffffffu;

    DomainMatcher();
    // Sizes the table for about `patterns` patterns (avoids rehashing while loading large lists).
    void reserve(std::size_t patterns);
    // Adds a pattern for rule number `rule`.
    void add(const DomainPattern& pattern, std::uint32_t rule);
    // The lowest rule index of the patterns matching the normalised host (see normalise_host), or kNone.
    std::uint32_t match(HostKind kind, std::string_view host, std::uint16_t port) const;
    std::size_t size() const { return patterns_; }

  private:
    static constexpr std::size_t kInline = 8;
    static constexpr std::uint32_t kInlineRule = 0x80000000u;  // tags a terminal list of one port-less rule
    // One trie node (except the root) and the key that leads to it.
    struct Slot {
        std::uint32_t hash = 0;
        std::uint32_t parent = kNone;  // parent node id; kNone = empty slot
        std::uint32_t id = kNone;      // this node's id
        std::uint32_t exact = kNone;   // terminals for the name ending here
        std::uint32_t below = kNone;   // terminals for `*.name`: any name strictly below
        std::uint8_t length = 0;       // label length (1..63)
        std::uint8_t has_star = 0;     // this node has a `*` child (exactly one label)
        std::uint16_t children = 0;    // one bit per child label (label_bit): most dead ends need no probe
        char label[kInline] = {};      // the label when it fits, else its offset in labels_
    };
    static_assert(sizeof(Slot) == 32);
    struct Terminal {
        std::uint16_t port;  // 0 = every port
        std::uint32_t rule;
        std::uint32_t next;
    };

    std::uint32_t find(std::uint32_t parent, std::string_view label) const;  // slot index or kNone
    bool label_equals(const Slot& slot, std::string_view label) const;
    std::uint32_t insert_child(std::uint32_t parent_slot, std::string_view label);  // slot index of the child
    void grow();
    void push_terminal(std::uint32_t& head, std::uint16_t port, std::uint32_t rule);
    std::uint32_t best(std::uint32_t head, std::uint16_t port, std::uint32_t current) const;
    void walk(std::uint32_t slot, const std::string_view* labels, std::size_t count, std::size_t consumed,
              std::uint16_t port, std::uint32_t& result) const;

    Slot root_;                                         // node id 0
    std::vector<Slot, HugePageAllocator<Slot>> slots_;  // power-of-two size, linear probing, at most 70% full
                                                        // (the child filter spares most unsuccessful probes)
    std::size_t used_ = 0;
    std::uint32_t next_id_ = 1;
    std::string labels_;  // labels longer than kInline
    std::vector<Terminal> terminals_;
    std::uint32_t any_name_ = kNone;
    std::unordered_map<std::string, std::uint32_t> addresses_;  // canonical IP literal -> terminals
    std::size_t patterns_ = 0;
};

}  // namespace cordon::policy::detail
