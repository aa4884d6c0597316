// `tessera server`: one task of a cluster, until SIGTERM or SIGINT.
//
//   tessera server --cluster '{"ps": ["127.0.0.1:2222"], "worker": ["127.0.0.1:2223"]}' --job worker --task 0
//   TF_CONFIG='{"cluster": {...}, "task": {"type": "worker", "index": 0}}' tessera server
//
// Prints "Started server with target: grpc://HOST:PORT" once it listens. The cluster token
// comes from --token-file or TESSERA_CLUSTER_TOKEN; --tls-cert, --tls-key and --tls-ca turn
// on mutual TLS (tls.h). Not for concurrent use: it owns the process's SIGTERM and SIGINT
// while it serves.
#pragma once

#include <map>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "distributed/tls.h"
#include "tools/flags.h"

namespace tessera {

// Declares --tls-cert, --tls-key and --tls-ca, whose values go to `values` by flag name.
void AddTlsFlags(Flags& flags, std::map<std::string, std::string>* values);
// The TLS files of those flags: none of them (no TLS) or all three; InvalidArgument for some
// but not all.
StatusOr<std::optional<TlsFiles>> TlsFromFlags(const std::map<std::string, std::string>& flags);

// args[0] is "server". Returns 0 after a clean stop by signal, 1 for an error (bad
// arguments, a malformed cluster, a task out of range, a port in use), said on `err`.
int ServeClusterTask(const std::vector<std::string>& args, std::ostream& out, std::ostream& err);

}  // namespace tessera
