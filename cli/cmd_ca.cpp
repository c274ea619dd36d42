// `cordon ca init|show|export [--dir DIR]`: the interception CA that inspected connections are terminated
// with (certs/).
#include <unistd.h>

#include <iostream>

#include "certs/certs.hpp"
#include "cli/args.hpp"
#include "cli/commands.hpp"

namespace cordon::cli {

namespace {

constexpr const char* kCaHelp =
    "usage: cordon ca init [--dir DIR] [--force]\n"
    "       cordon ca show [--dir DIR]\n"
    "       cordon ca export [--dir DIR]\n"
    "\n"
    "Manages the CA that cordon terminates inspected TLS connections with (sandbox.network.inspect,\n"
    "--inspect). DIR defaults to $XDG_CONFIG_HOME/cordon/ca (~/.config/cordon/ca); `cordon run` and\n"
    "`cordon proxy` take it with --ca-dir.\n"
    "\n"
    "  init     create a CA (ECDSA P-256, ten years): DIR/ca.pem and DIR/ca.key (mode 0600). An existing CA\n"
    "           is kept unless --force.\n"
    "  show     print the CA's subject, SHA-256 fingerprint and path\n"
    "  export   print the CA certificate (PEM), for clients outside a jail to trust\n";

}  // namespace

int cmd_ca(int argc, char** argv) {
    ArgCursor args(argc, argv, 0);
    if (args.done()) throw UsageError("a subcommand is needed: init, show or export");
    std::string sub = args.next();
    if (sub == "--help" || sub == "-h") {
        std::cout << kCaHelp;
        return 0;
    }
    std::filesystem::path dir = certs::default_ca_dir();
    bool force = false;
    while (!args.done()) {
        if (args.flag("--dir")) {
            dir = args.value();
            if (dir.empty()) throw UsageError("--dir needs a directory");
        } else if (args.flag("--force") && sub == "init") {
            force = true;
        } else if (args.flag("--help") || args.flag("-h")) {
            std::cout << kCaHelp;
            return 0;
        } else {
            throw UsageError("unknown argument '" + args.peek() + "'");
        }
    }
    std::error_code ec;
    dir = std::filesystem::absolute(dir, ec);
    if (sub == "init") {
        char host[256] = "localhost";
        ::gethostname(host, sizeof host - 1);
        auto made = certs::Authority::create(std::string("cordon CA on ") + host);
        if (auto* error = std::get_if<std::string>(&made)) {
            std::cerr << "cordon ca: " << *error << "\n";
            return 1;
        }
        auto& ca = *std::get<std::shared_ptr<certs::Authority>>(made);
        if (std::string error = ca.save(dir, force); !error.empty()) {
            std::cerr << "cordon ca: " << error << "\n";
            return 1;
        }
        std::cout << "created " << (dir / certs::Authority::kCertFile).string() << "\n"
                  << "subject: " << ca.subject() << "\n"
                  << "sha256: " << ca.fingerprint_sha256() << "\n";
        return 0;
    }
    if (sub != "show" && sub != "export") throw UsageError("unknown subcommand '" + sub + "'");
    auto loaded = certs::Authority::load_dir(dir);
    if (auto* error = std::get_if<std::string>(&loaded)) {
        std::cerr << "cordon ca: " << *error << " (create one with `cordon ca init`)\n";
        return 1;
    }
    auto& ca = *std::get<std::shared_ptr<certs::Authority>>(loaded);
    if (sub == "export") {
        std::cout << ca.cert_pem();
        return 0;
    }
    std::cout << "subject: " << ca.subject() << "\n"
              << "sha256: " << ca.fingerprint_sha256() << "\n"
              << "path: " << (dir / certs::Authority::kCertFile).string() << "\n";
    return 0;
}

}  // namespace cordon::cli
