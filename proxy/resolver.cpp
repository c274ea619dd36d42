#include "proxy/resolver.hpp"

#include <ares.h>
#include <netdb.h>
#include <uv.h>

#include <algorithm>
#include <stdexcept>
#include <unordered_map>

#include "policy/syntax.hpp"

namespace cordon::proxy {

const char* to_string(ResolveError error) {
    switch (error) {
        case ResolveError::None:
            return "";
        case ResolveError::NotFound:
            return "nxdomain";
        case ResolveError::Failed:
            return "dns-failure";
        case ResolveError::Timeout:
            return "dns-timeout";
        case ResolveError::Cancelled:
            return "cancelled";
    }
    return "dns-failure";
}

std::string dns_server_to_csv(const std::string& server) {
    // The one host:port grammar (policy/syntax.hpp): IP, IP:PORT, [v6]:PORT or a bare v6.
    auto parts = policy::split_host_port(server);
    if (std::holds_alternative<std::string>(parts)) return {};
    const auto& hp = std::get<policy::HostPortText>(parts);
    auto address = Address::parse(hp.host);
    if (!address) return {};
    std::string out = address->family() == AF_INET6 ? "[" + address->ip() + "]" : address->ip();
    if (hp.port)
        out += ":" + std::to_string(*hp.port);
    else if (address->family() == AF_INET6)
        out = address->ip();
    return out;
}

namespace {

struct Waiter {
    Resolver::Callback callback;
};

class AresResolver final : public Resolver {
  public:
    // The servers are checked here; the c-ares channel (which reads resolv.conf and allocates its query
    // tables) is created on the first lookup: most runs of `cordon run` resolve nothing, and the jail child
    // is a copy-on-write image of this process.
    AresResolver(uv_loop_t* loop, const std::vector<std::string>& servers) : loop_(loop) {
        static int init = ares_library_init(ARES_LIB_INIT_ALL);
        if (init != ARES_SUCCESS) throw std::runtime_error("c-ares: cannot initialise");
        for (const auto& s : servers) {
            std::string one = dns_server_to_csv(s);
            if (one.empty())
                throw std::runtime_error("bad --dns-server '" + s + "' (expected IP or IP:PORT)");
            if (!servers_csv_.empty()) servers_csv_ += ",";
            servers_csv_ += one;
        }
        timer_ = new uv_timer_t;
        uv_timer_init(loop_, timer_);
        timer_->data = this;
    }

    ~AresResolver() override { close(); }

    std::optional<std::vector<Address>> cached(const std::string& name) override {
        return cache_.find(name, DnsCache::Clock::now());
    }

    std::shared_ptr<void> resolve(const std::string& name, Callback callback) override {
        auto waiter = std::make_shared<Waiter>(Waiter{std::move(callback)});
        if (closed_) {
            // Answered on the next loop turn would need a handle; a closed resolver answers nobody.
            return waiter;
        }
        auto& pending = pending_[name];
        pending.waiters.push_back(waiter);
        if (pending.waiters.size() == 1) {
            pending.started = std::chrono::steady_clock::now();
            if (!channel_ && !open_channel()) {
                // Answered on the next loop turn (never from inside resolve()).
                uv_timer_start(timer_, &AresResolver::on_timer, 0, 0);
                return waiter;
            }
            auto* query = new Query{this, name};
            ares_addrinfo_hints hints{};
            hints.ai_family = AF_UNSPEC;
            hints.ai_flags = ARES_AI_NOSORT;
            ares_getaddrinfo(channel_, name.c_str(), nullptr, &hints, &AresResolver::on_result, query);
            update_timer();
        }
        return waiter;
    }

    void close() override {
        if (closed_) return;
        closed_ = true;
        if (channel_)
            ares_destroy(channel_);  // answers every pending query with ARES_EDESTRUCTION
        else
            fail_pending(ResolveError::Cancelled);
        for (auto& [fd, poll] : polls_) {
            uv_close(reinterpret_cast<uv_handle_t*>(poll),
                     [](uv_handle_t* h) { delete reinterpret_cast<uv_poll_t*>(h); });
        }
        polls_.clear();
        uv_close(reinterpret_cast<uv_handle_t*>(timer_),
                 [](uv_handle_t* h) { delete reinterpret_cast<uv_timer_t*>(h); });
    }

  private:
    bool open_channel() {
        ares_options options{};
        int mask = ARES_OPT_SOCK_STATE_CB | ARES_OPT_TIMEOUTMS | ARES_OPT_TRIES;
        options.sock_state_cb = &AresResolver::on_sock_state;
        options.sock_state_cb_data = this;
        options.timeout = 2000;
        options.tries = 2;
        char lookups[] = "b";
        if (!servers_csv_.empty()) {
            // Explicit resolvers: ask only them, not /etc/hosts.
            options.lookups = lookups;
            mask |= ARES_OPT_LOOKUPS;
        }
        if (ares_init_options(&channel_, &options, mask) != ARES_SUCCESS) {
            channel_ = nullptr;
            return false;
        }
        if (!servers_csv_.empty() &&
            ares_set_servers_ports_csv(channel_, servers_csv_.c_str()) != ARES_SUCCESS) {
            ares_destroy(channel_);
            channel_ = nullptr;
            return false;
        }
        return true;
    }

    // Without a channel (c-ares could not start): every waiting lookup fails.
    void fail_pending(ResolveError error) {
        auto pending = std::move(pending_);
        pending_.clear();
        for (auto& [name, p] : pending) {
            ResolveResult result;
            result.error = error;
            for (auto& weak : p.waiters) {
                if (auto waiter = weak.lock()) {
                    auto callback = std::move(waiter->callback);
                    if (callback) callback(result);
                }
            }
        }
    }

    struct Query {
        AresResolver* self;
        std::string name;
    };
    struct Pending {
        std::vector<std::weak_ptr<Waiter>> waiters;
        std::chrono::steady_clock::time_point started;
    };

    static void on_result(void* arg, int status, int /*timeouts*/, ares_addrinfo* info) {
        std::unique_ptr<Query> query(static_cast<Query*>(arg));
        AresResolver* self = query->self;
        ResolveResult result;
        int min_ttl = 300;
        if (status == ARES_SUCCESS && info) {
            for (auto* node = info->nodes; node; node = node->ai_next) {
                if (node->ai_family != AF_INET && node->ai_family != AF_INET6) continue;
                Address a = Address::from_sockaddr(node->ai_addr, node->ai_addrlen);
                a.set_port(0);
                bool dup = std::any_of(result.addresses.begin(), result.addresses.end(),
                                       [&](const Address& b) { return b.same_ip(a); });
                if (!dup) result.addresses.push_back(a);
                min_ttl = std::min(min_ttl, std::max(node->ai_ttl, 0));
            }
        }
        if (info) ares_freeaddrinfo(info);
        if (status == ARES_SUCCESS && result.addresses.empty()) status = ARES_ENODATA;
        switch (status) {
            case ARES_SUCCESS:
                break;
            case ARES_ENOTFOUND:
            case ARES_ENODATA:
            case ARES_ENONAME:
            case ARES_EBADNAME:
                result.error = ResolveError::NotFound;
                break;
            case ARES_ETIMEOUT:
                result.error = ResolveError::Timeout;
                break;
            case ARES_EDESTRUCTION:
            case ARES_ECANCELLED:
                result.error = ResolveError::Cancelled;
                break;
            default:
                result.error = ResolveError::Failed;
                break;
        }
        auto it = self->pending_.find(query->name);
        if (it == self->pending_.end()) return;
        Pending pending = std::move(it->second);
        self->pending_.erase(it);
        result.latency = std::chrono::duration_cast<std::chrono::microseconds>(
            std::chrono::steady_clock::now() - pending.started);
        if (result.error == ResolveError::None) {
            self->cache_.store(query->name, result.addresses, std::chrono::seconds(min_ttl),
                               DnsCache::Clock::now());
        }
        for (auto& weak : pending.waiters) {
            if (auto waiter = weak.lock()) {
                auto callback = std::move(waiter->callback);
                if (callback) callback(result);
            }
        }
        if (!self->closed_) self->update_timer();
    }

    static void on_sock_state(void* data, ares_socket_t fd, int readable, int writable) {
        auto* self = static_cast<AresResolver*>(data);
        if (self->closed_) return;
        auto it = self->polls_.find(fd);
        if (!readable && !writable) {
            if (it != self->polls_.end()) {
                uv_close(reinterpret_cast<uv_handle_t*>(it->second),
                         [](uv_handle_t* h) { delete reinterpret_cast<uv_poll_t*>(h); });
                self->polls_.erase(it);
            }
            return;
        }
        uv_poll_t* poll;
        if (it == self->polls_.end()) {
            poll = new uv_poll_t;
            if (uv_poll_init_socket(self->loop_, poll, fd) != 0) {
                delete poll;
                return;
            }
            poll->data = self;
            self->polls_[fd] = poll;
        } else {
            poll = it->second;
        }
        int events = (readable ? UV_READABLE : 0) | (writable ? UV_WRITABLE : 0);
        uv_poll_start(poll, events, &AresResolver::on_poll);
    }

    static void on_poll(uv_poll_t* poll, int status, int events) {
        auto* self = static_cast<AresResolver*>(poll->data);
        ares_socket_t fd = ARES_SOCKET_BAD;
        uv_fileno(reinterpret_cast<uv_handle_t*>(poll), &fd);
        ares_socket_t rfd = ARES_SOCKET_BAD, wfd = ARES_SOCKET_BAD;
        if (status < 0 || (events & UV_READABLE)) rfd = fd;
        if (status < 0 || (events & UV_WRITABLE)) wfd = fd;
        ares_process_fd(self->channel_, rfd, wfd);
        if (!self->closed_) self->update_timer();
    }

    static void on_timer(uv_timer_t* timer) {
        auto* self = static_cast<AresResolver*>(timer->data);
        if (!self->channel_) {
            self->fail_pending(ResolveError::Failed);
            return;
        }
        ares_process_fd(self->channel_, ARES_SOCKET_BAD, ARES_SOCKET_BAD);
        if (!self->closed_) self->update_timer();
    }

    void update_timer() {
        if (pending_.empty() || !channel_) {
            uv_timer_stop(timer_);
            return;
        }
        timeval max{1, 0}, tv{};
        timeval* next = ares_timeout(channel_, &max, &tv);
        std::uint64_t ms = static_cast<std::uint64_t>(next->tv_sec) * 1000 +
                           static_cast<std::uint64_t>(next->tv_usec) / 1000 + 1;
        uv_timer_start(timer_, &AresResolver::on_timer, ms, 0);
    }

    uv_loop_t* loop_;
    ares_channel channel_ = nullptr;  // created by the first lookup
    std::string servers_csv_;         // --dns-server, in c-ares's syntax; empty = resolv.conf
    uv_timer_t* timer_ = nullptr;
    bool closed_ = false;
    std::unordered_map<ares_socket_t, uv_poll_t*> polls_;
    std::unordered_map<std::string, Pending> pending_;
    DnsCache cache_;
};

}  // namespace

std::unique_ptr<Resolver> Resolver::create(uv_loop_s* loop, const std::vector<std::string>& servers) {
    return std::make_unique<AresResolver>(loop, servers);
}

}  // namespace cordon::proxy
