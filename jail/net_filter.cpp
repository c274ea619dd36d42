// Transparent redirection inside the jail's network namespace (docs/DESIGN.md, choice 2): a default route
// (IPv4 and IPv6) via lo, and nftables rules keyed on the destination address:
//
//   table inet cordon
//     chain redirect { type nat hook output priority -100
//       ip daddr 127.0.0.0/8 return; ip6 daddr ::1 return
//       udp dport 53 redirect to :53; tcp dport 53 redirect to :53      (the DNS stub)
//       meta l4proto tcp redirect to :TRANSPARENT_PORT }
//     chain refuse { type filter hook output priority 0
//       ip daddr 127.0.0.0/8 accept; ip6 daddr ::1 accept
//       reject with icmpx admin-prohibited }
//
// Every outbound TCP connection not addressed to the jail's own loopback reaches the transparent listener
// (which reads the original destination with SO_ORIGINAL_DST); UDP (DNS goes to the stub on 127.0.0.1:53)
// and everything else not addressed to loopback fails at once: a dropped locally generated packet is EPERM to
// its sender, never a hang.
//
// Why a route via lo: dummy devices are missing on some kernels (this machine's included). Why `src
// 127.0.0.1` on the IPv4 route: without a preferred source the kernel picks none that lo accepts back, and
// the redirected SYN is answered to nowhere (the connect hangs). Why keyed on the address and not the
// interface: every packet leaves through lo.
//
// Everything is set up with netlink (libmnl, libnftnl): the two routes in one rtnetlink message buffer, the
// table, its chains and rules in one nftables batch (atomic: all or nothing). No process is started.
#include <arpa/inet.h>
#include <fcntl.h>
#include <libmnl/libmnl.h>
#include <libnftnl/chain.h>
#include <libnftnl/expr.h>
#include <libnftnl/rule.h>
#include <libnftnl/table.h>
#include <linux/netfilter.h>
#include <linux/netfilter/nf_tables.h>
#include <linux/rtnetlink.h>
#include <net/if.h>
#include <netinet/in.h>
#include <sys/mount.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cstring>
#include <memory>
#include <vector>

#include "jail/detail/setup.hpp"

namespace cordon::jail::detail {

namespace {

struct MnlSocket {
    mnl_socket* nl = nullptr;
    ~MnlSocket() {
        if (nl) mnl_socket_close(nl);
    }
};

// Reads the kernel's answers until `expected` acknowledgements (or the first error) arrived. Every message
// was sent with NLM_F_ACK, so each gets exactly one NLMSG_ERROR (error 0 = done).
Result read_acks(mnl_socket* nl, unsigned expected, const std::string& what) {
    std::vector<char> buf(MNL_SOCKET_BUFFER_SIZE);
    unsigned acked = 0;
    while (acked < expected) {
        ssize_t n = mnl_socket_recvfrom(nl, buf.data(), buf.size());
        if (n < 0) {
            if (errno == EINTR) continue;
            return fail("read the kernel's answer to " + what);
        }
        int len = static_cast<int>(n);
        for (auto* h = reinterpret_cast<nlmsghdr*>(buf.data()); mnl_nlmsg_ok(h, len);
             h = mnl_nlmsg_next(h, &len)) {
            if (h->nlmsg_type != NLMSG_ERROR) continue;
            const auto* e = static_cast<const nlmsgerr*>(mnl_nlmsg_get_payload(h));
            if (e->error != 0) {
                errno = -e->error;
                return fail(what);
            }
            ++acked;
        }
    }
    return std::nullopt;
}

// RTM_NEWROUTE: default route of `family` via lo (with `src` as the preferred source for IPv4).
void put_default_route(char* buf, int family, unsigned lo, std::uint32_t seq) {
    nlmsghdr* h = mnl_nlmsg_put_header(buf);
    h->nlmsg_type = RTM_NEWROUTE;
    h->nlmsg_flags = NLM_F_REQUEST | NLM_F_CREATE | NLM_F_EXCL | NLM_F_ACK;
    h->nlmsg_seq = seq;
    auto* rt = static_cast<rtmsg*>(mnl_nlmsg_put_extra_header(h, sizeof(rtmsg)));
    rt->rtm_family = static_cast<unsigned char>(family);
    rt->rtm_dst_len = 0;
    rt->rtm_table = RT_TABLE_MAIN;
    rt->rtm_protocol = RTPROT_BOOT;
    rt->rtm_scope = family == AF_INET ? RT_SCOPE_LINK : RT_SCOPE_UNIVERSE;
    rt->rtm_type = RTN_UNICAST;
    mnl_attr_put_u32(h, RTA_OIF, lo);
    if (family == AF_INET) {
        in_addr src{};
        src.s_addr = htonl(INADDR_LOOPBACK);
        mnl_attr_put(h, RTA_PREFSRC, sizeof src, &src);
    }
}

Result add_routes(bool& have_v6) {
    unsigned lo = if_nametoindex("lo");
    if (lo == 0) return fail("find lo");
    MnlSocket s;
    s.nl = mnl_socket_open2(NETLINK_ROUTE, SOCK_CLOEXEC);
    if (!s.nl) return fail("open a route netlink socket");
    if (mnl_socket_bind(s.nl, 0, MNL_SOCKET_AUTOPID) < 0) return fail("bind the route netlink socket");
    // IPv4 first, alone: it must succeed. IPv6 may be disabled in the kernel (then there is no IPv6 at all in
    // the jail, nothing to redirect).
    alignas(nlmsghdr) char buf[512];
    put_default_route(buf, AF_INET, lo, 1);
    auto* h = reinterpret_cast<nlmsghdr*>(buf);
    if (mnl_socket_sendto(s.nl, buf, h->nlmsg_len) < 0) return fail("send the default route");
    if (auto r = read_acks(s.nl, 1, "add the default route via lo")) return r;
    put_default_route(buf, AF_INET6, lo, 2);
    if (mnl_socket_sendto(s.nl, buf, h->nlmsg_len) < 0) return fail("send the IPv6 default route");
    have_v6 = !read_acks(s.nl, 1, "add the IPv6 default route via lo");
    return std::nullopt;
}

constexpr const char* kTable = "cordon";

nftnl_expr* expr(const char* name) {
    return nftnl_expr_alloc(name);
}

void add_meta(nftnl_rule* r, std::uint32_t key) {
    nftnl_expr* e = expr("meta");
    nftnl_expr_set_u32(e, NFTNL_EXPR_META_KEY, key);
    nftnl_expr_set_u32(e, NFTNL_EXPR_META_DREG, NFT_REG_1);
    nftnl_rule_add_expr(r, e);
}

void add_cmp_eq(nftnl_rule* r, const void* data, std::uint32_t len) {
    nftnl_expr* e = expr("cmp");
    nftnl_expr_set_u32(e, NFTNL_EXPR_CMP_SREG, NFT_REG_1);
    nftnl_expr_set_u32(e, NFTNL_EXPR_CMP_OP, NFT_CMP_EQ);
    nftnl_expr_set(e, NFTNL_EXPR_CMP_DATA, data, len);
    nftnl_rule_add_expr(r, e);
}

void add_daddr(nftnl_rule* r, std::uint32_t offset, std::uint32_t len) {
    nftnl_expr* e = expr("payload");
    nftnl_expr_set_u32(e, NFTNL_EXPR_PAYLOAD_DREG, NFT_REG_1);
    nftnl_expr_set_u32(e, NFTNL_EXPR_PAYLOAD_BASE, NFT_PAYLOAD_NETWORK_HEADER);
    nftnl_expr_set_u32(e, NFTNL_EXPR_PAYLOAD_OFFSET, offset);
    nftnl_expr_set_u32(e, NFTNL_EXPR_PAYLOAD_LEN, len);
    nftnl_rule_add_expr(r, e);
}

void add_verdict(nftnl_rule* r, int verdict) {
    nftnl_expr* e = expr("immediate");
    nftnl_expr_set_u32(e, NFTNL_EXPR_IMM_DREG, NFT_REG_VERDICT);
    nftnl_expr_set_u32(e, NFTNL_EXPR_IMM_VERDICT, static_cast<std::uint32_t>(verdict));
    nftnl_rule_add_expr(r, e);
}

nftnl_rule* new_rule(const char* chain) {
    nftnl_rule* r = nftnl_rule_alloc();
    nftnl_rule_set_u32(r, NFTNL_RULE_FAMILY, NFPROTO_INET);
    nftnl_rule_set_str(r, NFTNL_RULE_TABLE, kTable);
    nftnl_rule_set_str(r, NFTNL_RULE_CHAIN, chain);
    return r;
}

// `ip daddr 127.0.0.0/8 VERDICT`
nftnl_rule* loopback_v4(const char* chain, int verdict) {
    nftnl_rule* r = new_rule(chain);
    std::uint8_t ipv4 = NFPROTO_IPV4;
    add_meta(r, NFT_META_NFPROTO);
    add_cmp_eq(r, &ipv4, 1);
    add_daddr(r, 16, 4);
    nftnl_expr* e = expr("bitwise");
    std::uint32_t mask = htonl(0xff000000U), zero = 0;
    nftnl_expr_set_u32(e, NFTNL_EXPR_BITWISE_SREG, NFT_REG_1);
    nftnl_expr_set_u32(e, NFTNL_EXPR_BITWISE_DREG, NFT_REG_1);
    nftnl_expr_set_u32(e, NFTNL_EXPR_BITWISE_LEN, 4);
    nftnl_expr_set(e, NFTNL_EXPR_BITWISE_MASK, &mask, 4);
    nftnl_expr_set(e, NFTNL_EXPR_BITWISE_XOR, &zero, 4);
    nftnl_rule_add_expr(r, e);
    std::uint32_t net = htonl(0x7f000000U);
    add_cmp_eq(r, &net, 4);
    add_verdict(r, verdict);
    return r;
}

// `ip6 daddr ::1 VERDICT`
nftnl_rule* loopback_v6(const char* chain, int verdict) {
    nftnl_rule* r = new_rule(chain);
    std::uint8_t ipv6 = NFPROTO_IPV6;
    add_meta(r, NFT_META_NFPROTO);
    add_cmp_eq(r, &ipv6, 1);
    add_daddr(r, 24, 16);
    add_cmp_eq(r, &in6addr_loopback, 16);
    add_verdict(r, verdict);
    return r;
}

// `meta l4proto PROTO [th dport DPORT] redirect to :PORT`
nftnl_rule* redirect(const char* chain, std::uint8_t proto, std::uint16_t dport, std::uint16_t port) {
    nftnl_rule* r = new_rule(chain);
    add_meta(r, NFT_META_L4PROTO);
    add_cmp_eq(r, &proto, 1);
    if (dport != 0) {
        nftnl_expr* e = expr("payload");
        nftnl_expr_set_u32(e, NFTNL_EXPR_PAYLOAD_DREG, NFT_REG_1);
        nftnl_expr_set_u32(e, NFTNL_EXPR_PAYLOAD_BASE, NFT_PAYLOAD_TRANSPORT_HEADER);
        nftnl_expr_set_u32(e, NFTNL_EXPR_PAYLOAD_OFFSET, 2);
        nftnl_expr_set_u32(e, NFTNL_EXPR_PAYLOAD_LEN, 2);
        nftnl_rule_add_expr(r, e);
        std::uint16_t d = htons(dport);
        add_cmp_eq(r, &d, sizeof d);
    }
    nftnl_expr* imm = expr("immediate");
    std::uint16_t p = htons(port);
    nftnl_expr_set_u32(imm, NFTNL_EXPR_IMM_DREG, NFT_REG_1);
    nftnl_expr_set(imm, NFTNL_EXPR_IMM_DATA, &p, sizeof p);
    nftnl_rule_add_expr(r, imm);
    nftnl_expr* redir = expr("redir");
    nftnl_expr_set_u32(redir, NFTNL_EXPR_REDIR_REG_PROTO_MIN, NFT_REG_1);
    nftnl_rule_add_expr(r, redir);
    return r;
}

// `reject with icmpx admin-prohibited`
nftnl_rule* reject_all(const char* chain) {
    nftnl_rule* r = new_rule(chain);
    nftnl_expr* e = expr("reject");
    nftnl_expr_set_u32(e, NFTNL_EXPR_REJECT_TYPE, NFT_REJECT_ICMPX_UNREACH);
    nftnl_expr_set_u8(e, NFTNL_EXPR_REJECT_CODE, NFT_REJECT_ICMPX_ADMIN_PROHIBITED);
    nftnl_rule_add_expr(r, e);
    return r;
}

nftnl_chain* new_chain(const char* name, const char* type, int priority) {
    nftnl_chain* c = nftnl_chain_alloc();
    nftnl_chain_set_u32(c, NFTNL_CHAIN_FAMILY, NFPROTO_INET);
    nftnl_chain_set_str(c, NFTNL_CHAIN_TABLE, kTable);
    nftnl_chain_set_str(c, NFTNL_CHAIN_NAME, name);
    nftnl_chain_set_str(c, NFTNL_CHAIN_TYPE, type);
    nftnl_chain_set_u32(c, NFTNL_CHAIN_HOOKNUM, NF_INET_LOCAL_OUT);
    nftnl_chain_set_s32(c, NFTNL_CHAIN_PRIO, priority);
    nftnl_chain_set_u32(c, NFTNL_CHAIN_POLICY, NF_ACCEPT);
    return c;
}

Result add_rules(std::uint16_t transparent_port, bool v6) {
    constexpr const char* kRedirect = "redirect";
    constexpr const char* kRefuse = "refuse";
    std::vector<char> buf(2 * MNL_SOCKET_BUFFER_SIZE);
    mnl_nlmsg_batch* batch = mnl_nlmsg_batch_start(buf.data(), buf.size());
    std::uint32_t seq = 1;
    unsigned messages = 0;
    nftnl_batch_begin(static_cast<char*>(mnl_nlmsg_batch_current(batch)), seq++);
    mnl_nlmsg_batch_next(batch);
    auto put = [&](std::uint16_t type, auto build) {
        // NLM_F_APPEND: a rule goes after the chain's others (without it, before them).
        std::uint16_t flags = NLM_F_CREATE | NLM_F_ACK | (type == NFT_MSG_NEWRULE ? NLM_F_APPEND : 0);
        nlmsghdr* h = nftnl_nlmsg_build_hdr(static_cast<char*>(mnl_nlmsg_batch_current(batch)), type,
                                            NFPROTO_INET, flags, seq++);
        build(h);
        mnl_nlmsg_batch_next(batch);
        ++messages;
    };
    nftnl_table* table = nftnl_table_alloc();
    nftnl_table_set_u32(table, NFTNL_TABLE_FAMILY, NFPROTO_INET);
    nftnl_table_set_str(table, NFTNL_TABLE_NAME, kTable);
    put(NFT_MSG_NEWTABLE, [&](nlmsghdr* h) { nftnl_table_nlmsg_build_payload(h, table); });
    nftnl_table_free(table);
    for (nftnl_chain* c : {new_chain(kRedirect, "nat", -100), new_chain(kRefuse, "filter", 0)}) {
        put(NFT_MSG_NEWCHAIN, [&](nlmsghdr* h) { nftnl_chain_nlmsg_build_payload(h, c); });
        nftnl_chain_free(c);
    }
    std::vector<nftnl_rule*> rules = {loopback_v4(kRedirect, NFT_RETURN)};
    if (v6) rules.push_back(loopback_v6(kRedirect, NFT_RETURN));
    // DNS to any server (a program that ignores /etc/resolv.conf) is answered by the stub too.
    rules.push_back(redirect(kRedirect, IPPROTO_UDP, 53, 53));
    rules.push_back(redirect(kRedirect, IPPROTO_TCP, 53, 53));
    rules.push_back(redirect(kRedirect, IPPROTO_TCP, 0, transparent_port));
    rules.push_back(loopback_v4(kRefuse, NF_ACCEPT));
    if (v6) rules.push_back(loopback_v6(kRefuse, NF_ACCEPT));
    rules.push_back(reject_all(kRefuse));
    for (nftnl_rule* r : rules) {
        put(NFT_MSG_NEWRULE, [&](nlmsghdr* h) { nftnl_rule_nlmsg_build_payload(h, r); });
        nftnl_rule_free(r);
    }
    nftnl_batch_end(static_cast<char*>(mnl_nlmsg_batch_current(batch)), seq++);
    mnl_nlmsg_batch_next(batch);

    MnlSocket s;
    s.nl = mnl_socket_open2(NETLINK_NETFILTER, SOCK_CLOEXEC);
    Result result;
    if (!s.nl)
        result = fail("open a netfilter netlink socket");
    else if (mnl_socket_bind(s.nl, 0, MNL_SOCKET_AUTOPID) < 0)
        result = fail("bind the netfilter netlink socket");
    else if (mnl_socket_sendto(s.nl, mnl_nlmsg_batch_head(batch), mnl_nlmsg_batch_size(batch)) < 0)
        result = fail("send the nftables rules");
    else
        result = read_acks(s.nl, messages, "load the nftables rules that redirect TCP to the proxy");
    mnl_nlmsg_batch_stop(batch);
    return result;
}

// A file mounted read-only on the symlink `link_fd` itself (new mount API): a symlinked /etc/resolv.conf
// (systemd-resolved's) may point to a file the jail does not have.
Result mount_on_symlink(const char* source, int link_fd) {
    int tree =
        static_cast<int>(::syscall(SYS_open_tree, AT_FDCWD, source, OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC));
    if (tree < 0) return fail(std::string("clone a mount of ") + source);
    mount_attr attr{};
    attr.attr_set = MOUNT_ATTR_RDONLY;
    Result r;
    if (::syscall(SYS_mount_setattr, tree, "", AT_EMPTY_PATH, &attr, sizeof attr) != 0)
        r = fail("make the jail's resolv.conf read-only");
    else if (::syscall(SYS_move_mount, tree, "", link_fd, "",
                       MOVE_MOUNT_F_EMPTY_PATH | MOVE_MOUNT_T_EMPTY_PATH) != 0)
        r = fail("mount the jail's resolv.conf on the symlink /etc/resolv.conf");
    ::close(tree);
    return r;
}

}  // namespace

Result bind_resolv_conf(Context& ctx) {
    if (ctx.config.transparent_port == 0) return std::nullopt;
    // Runs in the staging root, before the pivot: the new root is below /newroot.
    constexpr const char* kSource = "/resolv.conf";
    constexpr const char* kTarget = "/newroot/etc/resolv.conf";
    static const char kText[] =
        "# cordon: the jail's DNS stub (answers allowed names with addresses of cordon's proxy)\n"
        "nameserver 127.0.0.1\noptions edns0 trust-ad\n";
    int fd = ::open(kSource, O_CREAT | O_WRONLY | O_TRUNC | O_CLOEXEC, 0444);
    if (fd < 0) return fail("create the jail's resolv.conf");
    bool written = ::write(fd, kText, sizeof kText - 1) == static_cast<ssize_t>(sizeof kText - 1);
    ::close(fd);
    if (!written) return fail("write the jail's resolv.conf");
    struct stat st {};
    if (::lstat(kTarget, &st) != 0) {
        // No /etc/resolv.conf: every resolver then asks 127.0.0.1, the stub, already.
        if (errno == ENOENT) return std::nullopt;
        return fail(std::string("stat ") + kTarget);
    }
    if (S_ISLNK(st.st_mode)) {
        int link = ::open(kTarget, O_PATH | O_NOFOLLOW | O_CLOEXEC);
        if (link < 0) return fail(std::string("open ") + kTarget);
        Result r = mount_on_symlink(kSource, link);
        ::close(link);
        return r;
    }
    if (::mount(kSource, kTarget, nullptr, MS_BIND, nullptr) != 0)
        return fail("bind the jail's resolv.conf over /etc/resolv.conf");
    if (::mount("", kTarget, nullptr, MS_REMOUNT | MS_BIND | MS_RDONLY | MS_NOSUID | MS_NODEV, nullptr) != 0)
        return fail("make the jail's /etc/resolv.conf read-only");
    return std::nullopt;
}

Result redirect_to_proxy(Context& ctx) {
    if (ctx.config.transparent_port == 0) return std::nullopt;
    // Not an optional restriction but the jail's way out: without it the run stops (the user can choose
    // --no-transparent, where only programs that honour the proxy variables reach anything).
    bool v6 = false;
    Result r = add_routes(v6);
    if (!r) r = add_rules(ctx.config.transparent_port, v6);
    if (r) r->what += " (transparent proxying; `cordon run --no-transparent` runs without it)";
    return r;
}

}  // namespace cordon::jail::detail
