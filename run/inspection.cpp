// `cordon run`'s part of TLS termination and credentials (inspection.hpp).
#include "run/inspection.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <random>

#include "certs/certs.hpp"
#include "policy/inspection.hpp"
#include "run/environment.hpp"

namespace cordon::run {

std::string make_sentinel(const std::string& value) {
    std::random_device rd;
    std::string out = value;
    std::size_t keep = 0;
    std::size_t sep = value.find_first_of("_-");
    if (sep != std::string::npos && sep <= 8 && sep + 8 < value.size()) keep = sep + 1;
    for (int attempt = 0; attempt < 8 && (out == value || attempt == 0); ++attempt) {
        for (std::size_t i = keep; i < value.size(); ++i) {
            char c = value[i];
            unsigned r = rd();
            if (c >= '0' && c <= '9')
                out[i] = static_cast<char>('0' + r % 10);
            else if (c >= 'a' && c <= 'z')
                out[i] = static_cast<char>('a' + r % 26);
            else if (c >= 'A' && c <= 'Z')
                out[i] = static_cast<char>('A' + r % 26);
        }
    }
    return out;
}

RunInspection::~RunInspection() {
    remove();
}

void RunInspection::remove() {
    if (dir_.empty()) return;
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
    dir_.clear();
}

std::optional<std::string> RunInspection::prepare(const policy::Policy& policy,
                                                  const std::vector<SecretFlag>& flags, bool network,
                                                  proxy::Options& proxy, jail::MountPlan& plan,
                                                  std::vector<std::string>& notes) {
    const auto& inspection = *policy.network().inspection;

    // Secrets: deny removes the variable; mask gives the jail a sentinel and the proxy the real value.
    std::vector<policy::SecretRule> rules = inspection.secrets;
    for (const auto& f : flags)
        rules.push_back(policy::SecretRule{f.name, true, f.hosts, {}, policy::Rule{}});
    for (const auto& rule : rules) {
        const char* value = std::getenv(rule.name.c_str());
        if (!value) continue;  // nothing to hide
        bool already = false;
        for (const auto& s : proxy.secrets)
            already = already || s.name == rule.name;
        if (already) continue;
        if (!rule.mask || !network || *value == '\0') {
            plan.env.push_back(rule.name);
            continue;
        }
        std::string sentinel = make_sentinel(value);
        if (sentinel == value) {  // no letters or digits to vary: nothing can stand for it
            plan.env.push_back(rule.name);
            notes.push_back(rule.name + " has no letters or digits to make a sentinel of: removed instead");
            continue;
        }
        proxy.secrets.push_back(
            proxy::Options::Secret{rule.name, sentinel, value, rule.inject_hosts, rule.headers});
        plan.env.push_back(rule.name + "=" + sentinel);
        for (const auto& host : rule.inject_hosts)
            if (!inspection.inspects(host, 443))
                notes.push_back(rule.name + " is injected only into inspected requests, and " + host +
                                " is not inspected (sandbox.network.inspect, --inspect): it will get the "
                                "sentinel");
    }
    if (!network) return std::nullopt;

    auto ca = proxy::select_ca(proxy, policy, true);
    if (auto* error = std::get_if<std::string>(&ca)) return *error;
    proxy.ca = std::get<std::shared_ptr<const certs::Authority>>(ca);
    if (!proxy.ca) return std::nullopt;

    // The bundle lives in a run-private directory outside the user's directories (the jail's /tmp is its
    // own, so the host's /tmp is out of its sight), and is shown to the jail only through a read-only bind.
    auto bundle = certs::trust_bundle(*proxy.ca);
    if (auto* error = std::get_if<std::string>(&bundle)) return *error;
    const char* tmp = std::getenv("TMPDIR");
    std::string tmpl = std::string(tmp && tmp[0] == '/' ? tmp : "/tmp") + "/cordon-trust-XXXXXX";
    if (!::mkdtemp(tmpl.data()))
        return "cannot make a directory for the trust bundle: " + std::string(std::strerror(errno));
    dir_ = tmpl;
    // Why 0700 (mkdtemp's mode, stated here so that no umask or later change widens it): the directory is
    // private to this run; the jail sees the bundle only through the read-only bind of the file (made before
    // the command's user is taken on), whose own mode 0644 lets an unprivileged --user read it.
    if (::chmod(dir_.c_str(), 0700) != 0)
        return "cannot make " + dir_.string() + " private: " + std::string(std::strerror(errno));
    const auto file = dir_ / "ca-bundle.pem";
    int fd = ::open(file.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    if (fd < 0) return "cannot write " + file.string() + ": " + std::strerror(errno);
    const std::string& pem = std::get<certs::Bundle>(bundle).pem;
    bool ok = ::write(fd, pem.data(), pem.size()) == static_cast<ssize_t>(pem.size());
    ::fchmod(fd, 0644);
    ::close(fd);
    if (!ok) return "cannot write " + file.string();

    const auto system = certs::system_bundle_path();
    std::string seen_as = file.string();
    if (!system.empty()) {
        // Programs that read the system bundle by its path (most of them) trust cordon's CA without flags.
        plan.ops.push_back(
            jail::MountOp{jail::MountKind::ReadOnlyLink, system, "trust bundle (TLS termination)", file});
        seen_as = system.string();
    } else {
        // A minimal image without ca-certificates: no system path to show the bundle at. It is shown
        // read-only at its own path (below the host's /tmp the jail's private one would hide it) and only the
        // trust variables name it: cordon's CA alone, which is what an inspected connection presents, while
        // the jail gains no other trust than the host has.
        plan.ops.push_back(jail::MountOp{jail::MountKind::ReadOnly, file, "trust bundle (TLS termination)"});
        notes.push_back(
            "no system CA bundle (looked for /etc/ssl/certs/ca-certificates.crt): the jail trusts "
            "cordon's CA alone, named by SSL_CERT_FILE and the other trust variables");
    }
    for (const auto& [name, value] : trust_variables(seen_as))
        plan.env.push_back(name + "=" + value);
    return std::nullopt;
}

}  // namespace cordon::run
