// The jail's side of `cordon run`'s port forwards (MountPlan::host_ports, jail_sockets; jail/ports.cpp).
// Published ports need a socket of the jail's network namespace per connection: the supervisor asks the
// jail's init, which lives there, on the socket source it handed over (Listener::Kind::JailSockets).
#pragma once

namespace cordon::jail {

// The most host ports one jail listens on (each on 127.0.0.1 and ::1, handed over kMaxPassedFds descriptors a
// message). A bound, not a need of the mechanism: each costs the supervisor two descriptors for the run.
constexpr unsigned kMaxHostPorts = 256;

// Asks for an unconnected, non-blocking TCP socket of `family` (AF_INET, AF_INET6) made in the jail's network
// namespace. False when the source is gone (the jail ended). Answers come in the order asked.
bool ask_jail_socket(int source, int family);
// The next answer once `source` is readable: the socket (close-on-exec), -errno when it could not be made,
// -EAGAIN when none is there yet, -EPIPE when the source is gone.
int receive_jail_socket(int source);

}  // namespace cordon::jail
