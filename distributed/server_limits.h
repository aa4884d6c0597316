// ServerLimits: the most a cluster task gives its peers, so that no peer, with the token or
// without it, can use up the task's descriptors, threads or memory. A peer over a limit is
// refused, the refusal is logged once a minute at most, and the task goes on serving the
// others. The defaults suit clusters of up to hundreds of tasks; see README's SECURITY.
#pragma once

#include <chrono>
#include <cstddef>

namespace tessera {

struct ServerLimits {
  // Direct-transport connections (direct_transport.h): on the Unix socket, and over TCP,
  // each in all; from one process on the Unix socket, and from one address over TCP (a
  // machine's tasks); TCP connections still saying their hello (which anyone on the network
  // can open), in all and from one address (an eighth of that). A peer is given a thread
  // only once it proved its user (on the Unix socket) and token.
  size_t max_direct_connections = 256;
  size_t max_direct_connections_per_peer = 16;
  size_t max_direct_connections_per_address = 64;
  size_t max_direct_tcp_greetings = 64;
  // How long a new connection has to say who it is: the direct transport's hello, gRPC's HTTP/2 (and
  // TLS) handshake. A peer that connects and says nothing is closed then.
  std::chrono::milliseconds hello_timeout{5000};
  // gRPC calls at once on one connection (more wait in the peer's queue), and threads
  // running calls in all (a call that finds none is refused as ResourceExhausted).
  int max_calls_per_connection = 1024;
  int max_rpc_threads = 1024;
  // Peers' receives waiting here for their tensors, per transport (gRPC, direct).
  size_t max_pending_receives = 16384;
  // A session this task is the master of that no client has used for this long, with no
  // step running, is closed (its graphs deregistered everywhere): its client is gone.
  std::chrono::seconds idle_session_timeout{86400};
};

}  // namespace tessera
