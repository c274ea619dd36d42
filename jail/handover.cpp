// The hand-over between the supervisor and the jail (see detail/handover.hpp).
#include "jail/detail/handover.hpp"

#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstring>

namespace cordon::jail::detail {

namespace {

// The message that carries the seccomp listener: this number (never an exit status, which the report carries)
// and the descriptor.
constexpr int kNotifyFdMessage = 0x4e4f5449;

}  // namespace

bool read_all(int fd, void* buf, std::size_t size) {
    auto* p = static_cast<char*>(buf);
    while (size > 0) {
        ssize_t n = ::read(fd, p, size);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) return false;
        p += n;
        size -= static_cast<std::size_t>(n);
    }
    return true;
}

bool write_all(int fd, const std::string& data) {
    std::size_t done = 0;
    while (done < data.size()) {
        ssize_t n = ::send(fd, data.data() + done, data.size() - done, MSG_NOSIGNAL);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) return false;
        done += static_cast<std::size_t>(n);
    }
    return true;
}

// What the supervisor sends the jail child after the clone: the mount plan, the placeholders it could not
// create, the seccomp program. Each is one frame: a byte count (native uint32), then the body; in a body
// every number is a native uint32 and every string length-prefixed.
constexpr std::uint32_t kMaxFrameBytes = 64U << 20;

void put_u32(std::string& out, std::size_t v) {
    auto u = static_cast<std::uint32_t>(v);
    out.append(reinterpret_cast<const char*>(&u), sizeof u);
}
void put_string(std::string& out, const std::string& s) {
    put_u32(out, s.size());
    out += s;
}

bool send_frame(int fd, const std::string& body) {
    std::string message;
    put_u32(message, body.size());
    return write_all(fd, message + body);
}

bool receive_frame(int fd, std::string& body) {
    std::uint32_t size = 0;
    if (!read_all(fd, &size, sizeof size) || size > kMaxFrameBytes) return false;
    body.assign(size, '\0');
    return read_all(fd, body.data(), size);
}

struct FrameReader {
    const std::string& data;
    std::size_t pos = 0;
    bool ok = true;

    std::uint32_t u32() {
        std::uint32_t v = 0;
        if (data.size() - pos < sizeof v) {
            ok = false;
            return 0;
        }
        std::memcpy(&v, data.data() + pos, sizeof v);
        pos += sizeof v;
        return v;
    }
    std::string string() {
        std::uint32_t n = u32();
        if (!ok || data.size() - pos < n) {
            ok = false;
            return {};
        }
        pos += n;
        return data.substr(pos - n, n);
    }
    bool done() const { return ok && pos == data.size(); }
};

// The seccomp program: its instructions (none: --best-effort without a filter).
bool send_seccomp(int fd, const std::vector<sock_filter>& program) {
    return send_frame(
        fd, std::string(reinterpret_cast<const char*>(program.data()), program.size() * sizeof(sock_filter)));
}

bool receive_seccomp(int fd, std::vector<sock_filter>& program) {
    std::string body;
    if (!receive_frame(fd, body) || body.size() % sizeof(sock_filter) != 0) return false;
    program.resize(body.size() / sizeof(sock_filter));
    if (!body.empty()) std::memcpy(program.data(), body.data(), body.size());
    return program.size() <= 4096;  // BPF_MAXINSNS
}

// The mount plan: the ops (kind, path, why, source), the writable roots, the placeholders' paths.
bool send_plan(int fd, const MountPlan& plan) {
    std::string body;
    put_u32(body, plan.ops.size());
    for (const auto& op : plan.ops) {
        put_u32(body, static_cast<std::size_t>(op.kind));
        put_string(body, op.path.string());
        put_string(body, op.why);
        put_string(body, op.source.string());
    }
    put_u32(body, plan.writable_roots.size());
    for (const auto& root : plan.writable_roots)
        put_string(body, root.string());
    put_u32(body, plan.placeholders.size());
    for (const auto& ph : plan.placeholders)
        put_string(body, ph.path.string());
    put_u32(body, plan.read_scope ? 1 : 0);
    put_u32(body, plan.readable_roots.size());
    for (const auto& root : plan.readable_roots)
        put_string(body, root.string());
    put_u32(body, plan.env.size());
    for (const auto& e : plan.env)
        put_string(body, e);
    put_u32(body, plan.host_ports.size());
    for (const auto port : plan.host_ports)
        put_u32(body, port);
    put_u32(body, plan.jail_sockets ? 1 : 0);
    return send_frame(fd, body);
}

// After the plan, when it has placeholders: the ones the supervisor could not create (where the command could
// not create them either), as a list of paths.
bool send_paths(int fd, const std::vector<std::filesystem::path>& paths) {
    std::string body;
    put_u32(body, paths.size());
    for (const auto& p : paths)
        put_string(body, p.string());
    return send_frame(fd, body);
}

// Why: the plan is due within a millisecond or two (the supervisor computes it meanwhile). A process that
// sleeps in read(2) leaves its CPU idle, and waking an idle CPU costs up to a millisecond on a VM (measured
// 0.3-1 ms here); polling keeps the CPU awake for the handover. Bounded: after 3 ms, sleep as usual.
void await_readable(int fd) {
    timespec start{}, now{};
    ::clock_gettime(CLOCK_MONOTONIC, &start);
    pollfd p{fd, POLLIN, 0};
    do {
        if (::poll(&p, 1, 0) != 0) return;
        ::clock_gettime(CLOCK_MONOTONIC, &now);
    } while ((now.tv_sec - start.tv_sec) * 1000000000L + (now.tv_nsec - start.tv_nsec) < 3000000L);
}

bool receive_plan(int fd, MountPlan& plan) {
    await_readable(fd);
    std::string body;
    if (!receive_frame(fd, body)) return false;
    FrameReader in{body};
    for (std::uint32_t i = 0, n = in.u32(); in.ok && i < n; ++i) {
        std::uint32_t kind = in.u32();
        std::string path = in.string(), why = in.string(), source = in.string();
        if (kind > static_cast<std::uint32_t>(MountKind::Symlink)) in.ok = false;
        if (in.ok) plan.ops.push_back({static_cast<MountKind>(kind), path, why, source});
    }
    for (std::uint32_t i = 0, n = in.u32(); in.ok && i < n; ++i)
        plan.writable_roots.emplace_back(in.string());
    for (std::uint32_t i = 0, n = in.u32(); in.ok && i < n; ++i)
        plan.placeholders.push_back({in.string(), false, {}});
    plan.read_scope = in.u32() == 1;
    for (std::uint32_t i = 0, n = in.u32(); in.ok && i < n; ++i)
        plan.readable_roots.emplace_back(in.string());
    for (std::uint32_t i = 0, n = in.u32(); in.ok && i < n; ++i)
        plan.env.push_back(in.string());
    for (std::uint32_t i = 0, n = in.u32(); in.ok && i < n; ++i) {
        const std::uint32_t port = in.u32();
        if (port == 0 || port > 65535) in.ok = false;
        plan.host_ports.push_back(static_cast<std::uint16_t>(port));
    }
    plan.jail_sockets = in.u32() == 1;
    return in.done();
}

bool receive_placeholders_made(int fd, std::vector<std::filesystem::path>& not_made) {
    std::string body;
    if (!receive_frame(fd, body)) return false;
    FrameReader in{body};
    for (std::uint32_t i = 0, n = in.u32(); in.ok && i < n; ++i)
        not_made.emplace_back(in.string());
    return in.done();
}

ssize_t send_fds(int sock, const void* data, std::size_t size, const int* fds, std::size_t nfds) {
    if (nfds > kMaxPassedFds) {
        errno = EINVAL;
        return -1;
    }
    iovec iov{const_cast<void*>(data), size};
    alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int) * kMaxPassedFds)] = {};
    msghdr msg{};
    msg.msg_iov = &iov;
    msg.msg_iovlen = 1;
    if (nfds > 0) {
        msg.msg_control = control;
        msg.msg_controllen = CMSG_SPACE(sizeof(int) * nfds);
        cmsghdr* c = CMSG_FIRSTHDR(&msg);
        c->cmsg_level = SOL_SOCKET;
        c->cmsg_type = SCM_RIGHTS;
        c->cmsg_len = CMSG_LEN(sizeof(int) * nfds);
        std::memcpy(CMSG_DATA(c), fds, sizeof(int) * nfds);
    }
    ssize_t n;
    do
        n = ::sendmsg(sock, &msg, MSG_NOSIGNAL);
    while (n < 0 && errno == EINTR);
    return n;
}

ssize_t receive_fds(int sock, void* data, std::size_t size, int* fds, std::size_t max_fds, std::size_t& nfds,
                    int flags) {
    nfds = 0;
    iovec iov{data, size};
    alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int) * kMaxPassedFds)] = {};
    msghdr msg{};
    msg.msg_iov = &iov;
    msg.msg_iovlen = 1;
    msg.msg_control = control;
    msg.msg_controllen = sizeof control;
    ssize_t n;
    do
        n = ::recvmsg(sock, &msg, flags | MSG_CMSG_CLOEXEC);
    while (n < 0 && errno == EINTR);
    if (n < 0) return n;
    // Why: a descriptor the kernel installed here is ours to close, whatever the message; one we neither
    // asked for nor close would stay open in this process (and reach whatever this process later starts).
    bool refused = (msg.msg_flags & MSG_CTRUNC) != 0;
    for (cmsghdr* c = CMSG_FIRSTHDR(&msg); c; c = CMSG_NXTHDR(&msg, c)) {
        if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS) continue;
        const std::size_t count = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
        for (std::size_t i = 0; i < count; ++i) {
            int fd = -1;
            std::memcpy(&fd, CMSG_DATA(c) + i * sizeof(int), sizeof fd);
            if (nfds < max_fds) {
                fds[nfds++] = fd;
            } else {
                ::close(fd);
                refused = true;
            }
        }
    }
    if (refused) {
        for (std::size_t i = 0; i < nfds; ++i)
            ::close(fds[i]);
        nfds = 0;
        errno = EBADMSG;
        return -1;
    }
    return n;
}

bool send_notify_fd(int sock, int fd) {
    const int tag = kNotifyFdMessage;
    return send_fds(sock, &tag, sizeof tag, &fd, 1) == static_cast<ssize_t>(sizeof tag);
}

int receive_notify_fd(int sock, bool& again) {
    again = false;
    int tag = 0;
    int passed = -1;
    std::size_t nfds = 0;
    const ssize_t n = receive_fds(sock, &tag, sizeof tag, &passed, 1, nfds, MSG_DONTWAIT);
    if (n < 0 && errno == EAGAIN) {
        again = true;
        return -1;
    }
    if (nfds == 1 && (n != static_cast<ssize_t>(sizeof tag) || tag != kNotifyFdMessage)) {
        ::close(passed);
        nfds = 0;
    }
    return nfds == 1 ? passed : -1;
}

int take_notify_fd(int& sock) {
    if (sock < 0) return -1;
    bool again = false;
    const int passed = receive_notify_fd(sock, again);
    if (again) return -1;
    ::close(sock);
    sock = -1;
    return passed;
}

bool send_session_command(int fd, const SessionCommand& command) {
    std::string body;
    put_u32(body, command.id);
    put_u32(body, command.argv.size());
    for (const auto& a : command.argv)
        put_string(body, a);
    put_u32(body, command.env.size());
    for (const auto& e : command.env)
        put_string(body, e);
    put_string(body, command.cwd);
    const char op = 'R';
    if (send_fds(fd, &op, 1, command.fds, 3) != 1) return false;
    return send_frame(fd, body);
}

bool send_session_signal(int fd, std::uint32_t id, int sig) {
    std::string body;
    put_u32(body, id);
    put_u32(body, static_cast<std::uint32_t>(sig));
    const char op = 'K';
    if (send_fds(fd, &op, 1, nullptr, 0) != 1) return false;
    return send_frame(fd, body);
}

char receive_session_request(int fd, SessionCommand& command, int& sig) {
    char op = 0;
    int fds[3] = {-1, -1, -1};
    std::size_t nfds = 0;
    auto close_all = [&] {
        for (std::size_t i = 0; i < nfds; ++i)
            ::close(fds[i]);
    };
    if (receive_fds(fd, &op, 1, fds, 3, nfds) != 1) return 0;
    std::string body;
    if (!receive_frame(fd, body)) {
        close_all();
        return 0;
    }
    FrameReader r{body};
    command.id = r.u32();
    if (op == 'K' && nfds == 0) {
        sig = static_cast<int>(r.u32());
        return r.done() ? op : 0;
    }
    if (op != 'R' || nfds != 3) {
        close_all();
        return 0;
    }
    command.argv.clear();
    for (std::uint32_t n = r.u32(); r.ok && n > 0; --n)
        command.argv.push_back(r.string());
    command.env.clear();
    for (std::uint32_t n = r.u32(); r.ok && n > 0; --n)
        command.env.push_back(r.string());
    command.cwd = r.string();
    if (!r.done() || command.argv.empty()) {
        close_all();
        return 0;
    }
    for (int i = 0; i < 3; ++i)
        command.fds[i] = fds[i];
    return op;
}

}  // namespace cordon::jail::detail
