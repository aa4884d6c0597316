// `tessera server`: one task of a cluster, until SIGTERM or SIGINT.
//
//   tessera server --cluster '{"ps": ["127.0.0.1:2222"], "worker": ["127.0.0.1:2223"]}' --job worker --task 0
//   TF_CONFIG='{"cluster": {...}, "task": {"type": "worker", "index": 0}}' tessera server
//   srun -n 3 tessera server --resolver slurm --jobs ps:1,worker:2 --port-base 2222
//
// Without --cluster, the cluster and the task come from a resolver (cluster_resolver.h):
// --resolver auto (the default) takes TF_CONFIG where it is set, else srun's variables.
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

#include "distributed/cluster_resolver.h"
#include "distributed/tls.h"
#include "tools/flags.h"

namespace tessera {

// The values of --tls-cert, --tls-key and --tls-ca, by flag name; nullopt when not given.
using TlsFlagValues = std::map<std::string, std::optional<std::string>>;
// Declares --tls-cert, --tls-key and --tls-ca.
void AddTlsFlags(Flags& flags, TlsFlagValues* values);
// The TLS files of those flags: none of them (no TLS) or all three; InvalidArgument for some
// but not all, or for one given empty (an unset shell variable must not turn TLS off).
StatusOr<std::optional<TlsFiles>> TlsFromFlags(const TlsFlagValues& flags);

// The values of --resolver, --jobs and --port-base, by flag name.
using ResolverFlagValues = std::map<std::string, std::string>;
// Declares --resolver, --jobs and --port-base.
void AddResolverFlags(Flags& flags, ResolverFlagValues* values);
// The task the resolver of those flags finds (auto where --resolver is not given).
// InvalidArgument naming the flag or the variable that is wrong.
StatusOr<ClusterTask> ResolveFromFlags(const Flags& flags, const ResolverFlagValues& values);

// args[0] is "server". Returns 0 after a clean stop by signal, 1 for an error (bad
// arguments, a malformed cluster, a task out of range, a port in use), said on `err`.
int ServeClusterTask(const std::vector<std::string>& args, std::ostream& out, std::ostream& err);

}  // namespace tessera
